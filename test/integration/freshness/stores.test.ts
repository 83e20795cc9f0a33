/**
 * Chain-aware freshness on every store the gateway runs on (memory, SQLite, Redis), over real
 * HTTP; and, with Redis, what one instance learns of the tip and every refreshed entry is
 * seen by another.
 */
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { MAINNET_ADDR } from '../../support/fixtures.js';
import { type RunningGateway, request, startGateway, testEnv } from '../../support/gateway.js';
import { startRedis } from '../../support/redis-server.js';
import { tmpDir } from '../../unit/cache/tmp-dir.js';
import { heightUrl, installChainContract } from './helpers.js';

const redis = await startRedis();
afterAll(async () => {
  await redis?.stop();
});

let node: FakeNode;
const gateways: RunningGateway[] = [];
const cleanups: (() => void)[] = [];
let redisDb = 0;

const read = (gw: RunningGateway, cacheControl?: Record<string, unknown>, fn = 'height') =>
  request(heightUrl(gw.url, fn), {
    body: {
      functionArgs: fn === 'balance' ? [{ type: 'principal', value: MAINNET_ADDR }] : [],
      ...(cacheControl === undefined ? {} : { cacheControl }),
    },
  });

function storeEnv(kind: Kind, redisUrl?: string): Record<string, string> {
  if (kind === 'sqlite') {
    const tmp = tmpDir('freshness');
    cleanups.push(tmp.remove);
    return { CACHE_STORE: 'sqlite', DATA_DIR: tmp.dir };
  }
  if (kind === 'redis') return { CACHE_STORE: 'redis', REDIS_URL: redisUrl! };
  return { CACHE_STORE: 'memory' };
}

async function gateway(env: Record<string, string>): Promise<RunningGateway> {
  const gw = await startGateway(testEnv(node.url, env));
  gateways.push(gw);
  return gw;
}

beforeEach(async () => {
  node = await startFakeNode({ tipHeight: 100 });
  installChainContract(node);
});

afterEach(async () => {
  for (const gw of gateways.splice(0)) await gw.close();
  for (const clean of cleanups.splice(0)) clean();
  await node.close();
});

type Kind = 'memory' | 'sqlite' | 'redis';
const kinds: Kind[] = ['memory', 'sqlite', ...(redis === undefined ? [] : (['redis'] as const))];

describe.each(kinds)('on the %s store', (kind) => {
  it('bounds by blocks, answers stale while revalidating, and records tip heights', async () => {
    const gw = await gateway(storeEnv(kind, `${redis?.url}/${++redisDb}`));
    expect((await read(gw)).headers.get('x-canonical-stacks-tip-height')).toBe('100');
    node.mine(2);
    await read(gw, { bustCache: true, skipCache: true }, 'balance');
    expect((await read(gw, { maxBlocks: 2 })).headers.get('cache-status')).toBe('clarity-cache; hit');
    node.resetStats();
    const stale = await read(gw, { maxBlocks: 1, staleWhileRevalidate: 30 });
    expect(stale.body.data).toBe('100');
    expect(stale.headers.get('cache-status')).toContain('detail=stale-while-revalidate');
    await expect.poll(async () => (await read(gw, { maxBlocks: 1 })).body.data).toBe('102');
    const hit = await read(gw, { maxBlocks: 0 });
    expect(hit.headers.get('cache-status')).toBe('clarity-cache; hit');
    expect(hit.headers.get('x-canonical-stacks-tip-height')).toBe('102');
    expect(node.count('call-read')).toBe(1);
  });
});

describe.skipIf(redis === undefined)('two instances on one Redis', () => {
  it('share tip knowledge and refreshed entries', async () => {
    const redisUrl = `${redis?.url}/${++redisDb}`;
    const env = { ...storeEnv('redis', redisUrl), CACHE_MAX_BLOCKS: '0' };
    const a = await gateway(env);
    const b = await gateway(env);
    // Each believes its first tip from its own start-up /v2/info, never from Redis.
    await a.gateway.startupRound?.();
    await b.gateway.startupRound?.();
    // One per network of each (both networks' upstream is this stand-in).
    expect(node.count('info')).toBe(4);
    // A stores the entry and shares its tip knowledge in the background.
    expect((await read(a)).body.data).toBe('100');
    const admin = new Redis(redisUrl);
    await expect.poll(() => admin.exists('cc:k:chain:tip:mainnet')).toBe(1);
    admin.disconnect();
    node.resetStats();
    // B answers A's entry from Redis without asking the node anything.
    const fromB = await read(b);
    expect(fromB.headers.get('cache-status')).toBe('clarity-cache; hit');
    expect(node.total).toBe(0);
    // The chain moves; A learns it and refetches. B sees the new entry and the tip.
    node.mine(1);
    const moved = await read(a, { bustCache: true });
    expect(moved.body.data).toBe('101');
    node.resetStats();
    await expect.poll(async () => (await read(b)).body.data).toBe('101');
    expect(node.count('call-read')).toBe(0);
  });

  it('coalesce the background refresh of stale-while-revalidate across instances', async () => {
    const redisUrl = `${redis?.url}/${++redisDb}`;
    const env = storeEnv('redis', redisUrl);
    const a = await gateway(env);
    const b = await gateway(env);
    // As each process starts: its own first tip from /v2/info.
    await a.gateway.startupRound?.();
    await b.gateway.startupRound?.();
    expect((await read(a)).body.data).toBe('100');
    expect((await read(b)).headers.get('cache-status')).toBe('clarity-cache; hit');
    node.mine(1);
    // Both learn the new tip from an answer of their own.
    await read(a, { bustCache: true, skipCache: true }, 'balance');
    await read(b, { bustCache: true, skipCache: true }, 'balance');
    node.resetStats();
    node.gate({ kind: 'call-read' });
    const swr = { maxBlocks: 0, staleWhileRevalidate: 60 };
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => read(i % 2 === 0 ? a : b, swr)));
    for (const res of answers) {
      expect(res.body.data).toBe('100');
      expect(res.headers.get('cache-status')).toContain('detail=stale-while-revalidate');
    }
    await node.waitForRequests(1, { kind: 'call-read' });
    node.release();
    await expect.poll(async () => (await read(a, { maxBlocks: 0 })).body.data).toBe('101');
    await expect.poll(async () => (await read(b, { maxBlocks: 0 })).body.data).toBe('101');
    expect(node.count('call-read')).toBe(1);
  });

  it('never answers the stale entry a load is replacing as the coalesced result of another instance', async () => {
    const redisUrl = `${redis?.url}/${++redisDb}`;
    const env = storeEnv('redis', redisUrl);
    const a = await gateway(env);
    const b = await gateway(env);
    expect((await read(a, { maxBlocks: 0 })).body.data).toBe('100');
    node.mine(1);
    // Both learn the new tip from an answer of their own.
    await read(a, { bustCache: true, skipCache: true }, 'balance');
    await read(b, { bustCache: true, skipCache: true }, 'balance');
    node.resetStats();
    node.gate({ kind: 'call-read' });
    // a leads the refetch (held at the node); b, asking meanwhile, must not take the stale
    // entry in the shared store as a's result.
    const fromA = read(a, { maxBlocks: 0 });
    await node.waitForRequests(1, { kind: 'call-read' });
    const fromB = read(b, { maxBlocks: 0 });
    // b is waiting for a's load (its own load of the key is under way, held by the coalescer).
    await expect.poll(() => b.gateway.cache.inflight).toBe(1);
    node.release();
    const [ra, rb] = await Promise.all([fromA, fromB]);
    expect(ra.body.data).toBe('101');
    expect(rb.body.data).toBe('101');
    expect(rb.headers.get('cache-status')).not.toContain('hit');
  });
});
