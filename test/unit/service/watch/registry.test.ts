/**
 * One suite, run against every subscription registry (docs/watch.md): memory, and Redis (a
 * real redis-server) for a fleet, where two registries on one Redis stand for two instances.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { RedisRegistry } from '../../../../src/service/watch/redis-registry.js';
import { MemoryRegistry, type SubscriptionRegistry } from '../../../../src/service/watch/registry.js';
import type { StoredSubscription } from '../../../../src/service/watch/types.js';
import { startRedis } from '../../../support/redis-server.js';

const server = await startRedis();

const sub = (id: string, owner = 'key:alice'): StoredSubscription => ({
  id,
  owner,
  keyed: owner.startsWith('key:'),
  network: 'testnet',
  reads: [
    {
      contractAddress: 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM',
      contractName: 'demo-token',
      functionName: 'get-decimals',
      functionArgs: [],
    },
  ],
});

interface Pair {
  /** Two registries on one store: two instances of a fleet (memory: the same object). */
  readonly a: SubscriptionRegistry;
  readonly b: SubscriptionRegistry;
  /** Makes time pass for expiries (memory: its clock; Redis: the key's own expiry, shortened). */
  expire(id: string): Promise<void>;
  close(): Promise<void>;
}

const clients: Redis[] = [];
let prefixes = 0;

const kinds: [string, () => Promise<Pair>][] = [
  [
    'memory',
    async () => {
      let now = 1_000_000;
      const r = new MemoryRegistry(() => now);
      return {
        a: r,
        b: r,
        expire: async () => {
          now += 10_000_000;
        },
        close: () => r.close(),
      };
    },
  ],
];
if (server !== undefined) {
  kinds.push([
    'redis',
    async () => {
      const prefix = `t${++prefixes}:`;
      const c1 = new Redis(server.url);
      const c2 = new Redis(server.url);
      clients.push(c1, c2);
      const a = new RedisRegistry(c1, prefix);
      const b = new RedisRegistry(c2, prefix);
      // Both subscribers listen before a test deletes anything.
      await vi.waitFor(async () => {
        const n = (await c1.pubsub('NUMSUB', `${prefix}watch:deleted`)) as [string, number];
        expect(n[1]).toBe(2);
      });
      return {
        a,
        b,
        expire: async (id) => {
          await c1.pexpire(`${prefix}watch:sub:${id}`, 1);
          await vi.waitFor(async () => expect(await c1.exists(`${prefix}watch:sub:${id}`)).toBe(0));
        },
        close: async () => {
          await a.close();
          await b.close();
        },
      };
    },
  ]);
}

afterAll(async () => {
  for (const c of clients) c.disconnect();
  await server?.stop();
});

describe.each(kinds)('subscription registry: %s', (_name, make) => {
  let r: Pair;
  beforeAll(async () => {
    r = await make();
  });
  afterAll(async () => r.close());

  it('stores a subscription that any instance reads back as it was made', async () => {
    await r.a.create(sub('s1'), 600);
    expect(await r.b.get('s1')).toEqual(sub('s1'));
    expect(await r.b.get('nope')).toBeUndefined();
  });

  it('forgets it once its idle time passes', async () => {
    await r.a.create(sub('s2'), 600);
    await r.expire('s2');
    expect(await r.b.get('s2')).toBeUndefined();
  });

  it('a deletion on one instance is told to every instance, and only once it existed', async () => {
    await r.a.create(sub('s3'), 600);
    const told: string[] = [];
    r.b.onDeleted((id) => told.push(id));
    expect(await r.a.delete('s3')).toBe(true);
    await vi.waitFor(() => expect(told).toContain('s3'));
    expect(await r.b.get('s3')).toBeUndefined();
    expect(await r.a.delete('s3')).toBe(false);
  });

  it('counts open streams per owner across instances, up to the limit, and frees a place on close', async () => {
    expect(await r.a.openStream('key:bob', 'x1', 2, 60_000)).toBe(true);
    expect(await r.b.openStream('key:bob', 'x2', 2, 60_000)).toBe(true);
    expect(await r.a.openStream('key:bob', 'x3', 2, 60_000)).toBe(false);
    // Another owner has places of its own.
    expect(await r.b.openStream('client:1.2.3.4', 'y1', 2, 60_000)).toBe(true);
    await r.b.closeStream('key:bob', 'x1');
    expect(await r.a.openStream('key:bob', 'x3', 2, 60_000)).toBe(true);
  });

  it('a stream whose lease is not renewed (a crashed instance) stops counting', async () => {
    expect(await r.a.openStream('key:carol', 'z1', 1, 50)).toBe(true);
    expect(await r.a.openStream('key:carol', 'z2', 1, 60_000)).toBe(false);
    await r.expire('none');
    await vi.waitFor(async () => expect(await r.b.openStream('key:carol', 'z2', 1, 60_000)).toBe(true));
  });

  it('a renewed lease keeps counting', async () => {
    expect(await r.a.openStream('key:dave', 'w1', 1, 60_000)).toBe(true);
    await r.a.renewStreams([{ owner: 'key:dave', streamId: 'w1' }], 60_000);
    expect(await r.b.openStream('key:dave', 'w2', 1, 60_000)).toBe(false);
  });

  it('held while a stream is open, it outlives its idle time; released, it expires again', async () => {
    await r.a.create(sub('s4'), 1);
    await r.a.hold('s4', 600);
    expect(await r.b.get('s4')).toEqual(sub('s4'));
    await r.a.release('s4', 600);
    expect(await r.b.get('s4')).toEqual(sub('s4'));
    await r.expire('s4');
    expect(await r.b.get('s4')).toBeUndefined();
  });
});
