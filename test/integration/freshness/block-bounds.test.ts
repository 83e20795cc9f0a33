/**
 * Tip knowledge and block-bounded freshness (docs/freshness.md) over real HTTP
 * against the fake node's chain: every answer's X-Canonical-Stacks-Tip-Height teaches the tip,
 * /v2/info is asked only when a request needs it, and never while idle.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../../src/cache/stores/memory.js';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { MAINNET_ADDR } from '../../support/fixtures.js';
import { type RunningGateway, request, startGateway, testEnv } from '../../support/gateway.js';
import { heightUrl, installChainContract } from './helpers.js';

let node: FakeNode;
const gateways: RunningGateway[] = [];

async function gateway(
  env: Record<string, string> = {},
  store?: MemoryStore,
  startup = true,
): Promise<RunningGateway> {
  const gw = await startGateway(testEnv(node.url, env), store === undefined ? {} : { store });
  gateways.push(gw);
  // As main.ts starts: one /v2/info, which gives the first tip; the tests count from here.
  if (startup) {
    await gw.gateway.startupRound?.();
    node.resetStats();
  }
  return gw;
}

const read = (gw: RunningGateway, cacheControl?: Record<string, unknown>, fn = 'height') =>
  request(heightUrl(gw.url, fn), {
    body: {
      functionArgs: fn === 'balance' ? [{ type: 'principal', value: MAINNET_ADDR }] : [],
      ...(cacheControl === undefined ? {} : { cacheControl }),
    },
  });

/** Teach the gateway the node's current tip through another call's answer header. */
const learnTip = (gw: RunningGateway) => read(gw, { bustCache: true, skipCache: true }, 'balance');

beforeEach(async () => {
  node = await startFakeNode({ tipHeight: 100 });
  installChainContract(node);
});

afterEach(async () => {
  for (const gw of gateways.splice(0)) await gw.close();
  await node.close();
});

describe('tip knowledge', () => {
  it('keeps the default: no new field and no new variable caches indefinitely across tip moves', async () => {
    const gw = await gateway();
    expect((await read(gw)).headers.get('cache-status')).toBe('clarity-cache; fwd=miss; stored');
    node.mine(10);
    await learnTip(gw);
    const again = await read(gw);
    expect(again.headers.get('cache-status')).toBe('clarity-cache; hit');
    expect(again.body.data).toBe('100');
    expect(node.count('info')).toBe(0);
  });

  it('answers X-Canonical-Stacks-Tip-Height: the height read at, and for a hit the stored one', async () => {
    const gw = await gateway();
    const miss = await read(gw);
    expect(miss.headers.get('x-canonical-stacks-tip-height')).toBe('100');
    node.mine(3);
    await learnTip(gw);
    const hit = await read(gw);
    expect(hit.headers.get('cache-status')).toBe('clarity-cache; hit');
    expect(hit.headers.get('x-canonical-stacks-tip-height')).toBe('100');
  });

  it('makes at most one /v2/info for 50 concurrent requests that need a tip refresh', async () => {
    // Gateway A stores the entry; B shares the store but knows no tip yet.
    const store = new MemoryStore({ maxEntries: 100 });
    const a = await gateway({}, store);
    await read(a);
    const b = await gateway({ CACHE_MAX_BLOCKS: '5' }, store, false);
    node.resetStats();
    node.gate({ kind: 'info' });
    const answers = Promise.all(Array.from({ length: 50 }, () => read(b)));
    await node.waitForRequests(1, { kind: 'info' });
    node.release();
    const all = await answers;
    expect(all.every((r) => r.status === 200 && r.body.data === '100')).toBe(true);
    expect(all.every((r) => r.headers.get('cache-status') === 'clarity-cache; hit')).toBe(true);
    expect(node.count('info')).toBe(1);
    expect(node.count('call-read')).toBe(0);
  });

  it('makes no upstream request at all while idle', async () => {
    const gw = await gateway({ CACHE_MAX_BLOCKS: '0', CHAIN_TIP_MAX_AGE_MS: '20' });
    await read(gw);
    await read(gw);
    const before = node.total;
    // Nothing to await here: the claim is that nothing happens. Ten tip lifetimes pass.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(node.total).toBe(before);
    expect(gw.gateway.chain.refreshing).toBe(0);
  });

  it('does not break plain reads when the node sends no tip header and /v2/info fails', async () => {
    node.tipHeader(false);
    node.status5xx(500, { kind: 'info' });
    const gw = await gateway();
    const miss = await read(gw);
    expect(miss.status).toBe(200);
    expect(miss.headers.get('x-canonical-stacks-tip-height')).toBeNull();
    expect((await read(gw)).headers.get('cache-status')).toBe('clarity-cache; hit');
    expect(node.count('info')).toBe(0);
    // A block-bounded read cannot be judged: it goes upstream, as if the entry were stale.
    for (let i = 0; i < 2; i++) {
      const bounded = await read(gw, { maxBlocks: 100 });
      expect(bounded.status).toBe(200);
      expect(bounded.headers.get('cache-status')).toBe('clarity-cache; fwd=stale; stored');
    }
    expect(node.count('call-read')).toBe(3);
    // The failed refreshes made one attempt each, no retries.
    expect(node.count('info')).toBe(2);
  });

  it('learns the index block hash from /v2/info: currentBlock() and the height of a pinned read', async () => {
    const gw = await gateway({}, undefined, false);
    const block = await gw.gateway.chain.currentBlock('mainnet');
    expect(block).toEqual({ height: 100, indexBlockHash: node.block(100).indexBlockHash });
    // Known within CHAIN_TIP_MAX_AGE_MS: no second /v2/info.
    await gw.gateway.chain.currentBlock('mainnet');
    expect(node.count('info')).toBe(1);
    const pinned = await request(heightUrl(gw.url), {
      body: { functionArgs: [], tip: block.indexBlockHash },
    });
    expect(pinned.body.data).toBe('100');
    expect(pinned.headers.get('x-canonical-stacks-tip-height')).toBe('100');
  });
});

describe('block-bounded freshness', () => {
  it('serves an entry while the chain moved at most maxBlocks, refetches it after (fwd=stale)', async () => {
    const gw = await gateway();
    await read(gw);
    node.mine(1);
    await learnTip(gw);
    const within = await read(gw, { maxBlocks: 1 });
    expect(within.headers.get('cache-status')).toBe('clarity-cache; hit');
    expect(within.body.data).toBe('100');
    const atTip = await read(gw, { maxBlocks: 0 });
    expect(atTip.headers.get('cache-status')).toBe('clarity-cache; fwd=stale; stored');
    expect(atTip.body.data).toBe('101');
    expect(atTip.headers.get('x-canonical-stacks-tip-height')).toBe('101');
    // The new result replaced the entry, for every request.
    const plain = await read(gw);
    expect(plain.headers.get('cache-status')).toBe('clarity-cache; hit');
    expect(plain.body.data).toBe('101');
    expect(node.count('info')).toBe(0);
  });

  it('applies CACHE_MAX_BLOCKS to requests without maxBlocks; a request may relax it', async () => {
    const gw = await gateway({ CACHE_MAX_BLOCKS: '2' });
    await read(gw);
    node.mine(3);
    await learnTip(gw);
    expect((await read(gw, { maxBlocks: 3 })).headers.get('cache-status')).toBe('clarity-cache; hit');
    const bounded = await read(gw);
    expect(bounded.headers.get('cache-status')).toBe('clarity-cache; fwd=stale; stored');
    expect(bounded.body.data).toBe('103');
  });

  it('follows the chain with maxBlocks 0 when the tip knowledge is older than CHAIN_TIP_MAX_AGE_MS', async () => {
    const gw = await gateway({ CHAIN_TIP_MAX_AGE_MS: '0' });
    expect((await read(gw, { maxBlocks: 0 })).body.data).toBe('100');
    node.mine(1);
    // Knowledge of any age is too old: the request learns the tip from /v2/info first.
    const next = await read(gw, { maxBlocks: 0 });
    expect(next.body.data).toBe('101');
    expect(next.headers.get('cache-status')).toBe('clarity-cache; fwd=stale; stored');
    expect(node.count('info')).toBeGreaterThanOrEqual(1);
  });

  it.each([
    ['maxBlocks', -1],
    ['maxBlocks', 1.5],
    ['maxBlocks', '3'],
    ['staleWhileRevalidate', -5],
    ['staleWhileRevalidate', 0.5],
    ['staleIfError', -1],
    ['staleIfError', 2.25],
  ])(
    'refuses cacheControl.%s = %j with VALIDATION_ERROR naming it, and no upstream request',
    async (field, value) => {
      const gw = await gateway();
      const res = await read(gw, { [field]: value });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      expect(res.body.error.message).toContain(field);
      expect(node.total).toBe(0);
    },
  );
});
