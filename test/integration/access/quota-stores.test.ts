/**
 * One suite over every quota store (memory on one instance, a real redis-server for a fleet):
 * judging a request against all of a key's buckets at once. Every bucket must hold a token;
 * then each spends its cost, else none spends anything, and the wait told is the longest of
 * the short ones. Refills are 60 000 ms per capacity, so the few ms a test takes move no
 * figure by a whole token (figures are compared to a hundredth).
 */
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { type BucketSpend, MemoryQuota, type QuotaStore } from '../../../src/http/admission/quota-store.js';
import { RedisQuota } from '../../../src/http/admission/redis-quota.js';
import { startRedis } from '../../support/redis-server.js';

const redis = await startRedis();
const clients: Redis[] = [];
afterAll(async () => {
  for (const c of clients) c.disconnect();
  await redis?.stop();
});

let n = 0;
const stores: [string, () => QuotaStore][] = [
  ['memory', () => new MemoryQuota()],
  ...(redis === undefined
    ? []
    : ([
        [
          'redis',
          () => {
            const client = new Redis(redis.url, { lazyConnect: false, maxRetriesPerRequest: 1 });
            clients.push(client);
            return new RedisQuota(client, `quota-suite-${++n}:`);
          },
        ],
      ] as [string, () => QuotaStore][])),
];

const requests = (capacity: number): BucketSpend => ({ id: 'key:a', capacity, cost: 1 });
const units = (capacity: number): BucketSpend => ({ id: 'units:a', capacity, cost: 0 });

describe.each(stores)('the %s quota store', (_name, make) => {
  it('spends each bucket its cost when all of them hold a token, and tells what is left', async () => {
    const store = make();
    const first = await store.judge([requests(3), units(5)], true);
    expect(first.short).toBe(-1);
    expect(first.waitMs).toBe(0);
    expect(first.tokens[0]).toBeCloseTo(2, 2);
    expect(first.tokens[1]).toBeCloseTo(5, 2);
    const second = await store.judge([requests(3), units(5)], true);
    expect(second.tokens[0]).toBeCloseTo(1, 2);
  });

  it('spends nothing when one bucket is short, names the first short one and the longest wait', async () => {
    const store = make();
    // Units below zero: an answer's cost was taken after admission.
    await store.spend('units:a', 4, 6, -Number.MAX_SAFE_INTEGER);
    const refused = await store.judge([requests(3), units(4)], true);
    expect(refused.short).toBe(1);
    expect(refused.tokens[0]).toBeCloseTo(3, 2);
    expect(refused.tokens[1]).toBeCloseTo(-2, 2);
    // Three units to one token at 4 per minute: 45 s.
    expect(refused.waitMs).toBeGreaterThan(44_000);
    expect(refused.waitMs).toBeLessThanOrEqual(45_000);
    // The request bucket was not spent: it still holds all three.
    const again = await store.judge([requests(3), units(4)], true);
    expect(again.tokens[0]).toBeCloseTo(3, 2);
  });

  it('with both short, names the first and waits for the slower', async () => {
    const store = make();
    for (let i = 0; i < 2; i++) expect((await store.judge([requests(2)], true)).short).toBe(-1);
    await store.spend('units:a', 60, 61, -Number.MAX_SAFE_INTEGER);
    const refused = await store.judge([requests(2), units(60)], true);
    expect(refused.short).toBe(0);
    // A request token at 2 per minute: 30 s; two units at 60 per minute: 2 s.
    expect(refused.waitMs).toBeGreaterThan(29_000);
    expect(refused.waitMs).toBeLessThanOrEqual(30_000);
  });

  it('only looks when told not to spend (a request another quota refused)', async () => {
    const store = make();
    const looked = await store.judge([requests(3), units(5)], false);
    expect(looked.short).toBe(-1);
    expect(looked.tokens[0]).toBeCloseTo(3, 2);
    const spent = await store.judge([requests(3), units(5)], true);
    expect(spent.tokens[0]).toBeCloseTo(2, 2);
  });

  it('spends one bucket while it holds the minimum, or always (an answer’s cost), and takes a token', async () => {
    const store = make();
    const first = await store.spend('units:a', 4, 3, 1);
    expect(first.ok).toBe(true);
    expect(first.tokens).toBeCloseTo(1, 2);
    // Under the minimum: refused, nothing spent, the wait until it holds the minimum again.
    const refused = await store.spend('units:a', 4, 3, 2);
    expect(refused.ok).toBe(false);
    expect(refused.tokens).toBeCloseTo(1, 2);
    expect(refused.waitMs).toBeGreaterThan(14_000);
    expect(refused.waitMs).toBeLessThanOrEqual(15_000);
    // A cost taken after the answer always happens and may leave the bucket below zero.
    const always = await store.spend('units:a', 4, 3, -Number.MAX_SAFE_INTEGER);
    expect(always.ok).toBe(true);
    expect(always.tokens).toBeCloseTo(-2, 2);
    expect(await store.take('key:t', 1)).toBe(0);
    expect(await store.take('key:t', 1)).toBeGreaterThan(59_000);
  });

  it('keeps the buckets of one key apart from another key', async () => {
    const store = make();
    await store.judge([requests(1)], true);
    expect((await store.judge([requests(1)], true)).short).toBe(0);
    expect((await store.judge([{ id: 'key:b', capacity: 1, cost: 1 }], true)).short).toBe(-1);
  });
});
