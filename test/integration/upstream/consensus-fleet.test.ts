/**
 * Attested answers (docs/consensus.md) across a fleet on one real Redis (CACHE_STORE=redis):
 * entries record their votes, so an entry a 1/1 instance wrote is a miss for a 2/3 instance;
 * strikes and sitting out are shared as the breaker is.
 *
 * Three fault-injecting fake nodes are the testnet upstreams (`testnet`, `testnet-2`,
 * `testnet-3`, in that order of preference); every gateway is in-process on a real socket.
 * Redis is flushed before each test (the tests share its keys otherwise).
 */
import { Cl } from '@stacks/transactions';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type FakeNode, type ReadOnlyCall, startFakeNode } from '../../support/fake-node.js';
import { GET_N_ABI, hex, TESTNET_ADDR } from '../../support/fixtures.js';
import {
  type JsonResponse,
  type RunningGateway,
  request,
  startGateway,
  testEnv,
} from '../../support/gateway.js';
import { metricValue, parseMetrics } from '../../support/prom.js';
import { startRedis } from '../../support/redis-server.js';

const LIE = hex(Cl.uint(666));

const redis = await startRedis();
// These tests are the fleet's: without a redis-server they fail rather than skip.
if (redis === undefined) throw new Error('consensus-fleet tests need redis-server on PATH');
afterAll(async () => {
  await redis.stop();
});

const running: Array<{ close(): Promise<void> }> = [];
beforeEach(async () => {
  const admin = new Redis(redis.url);
  await admin.flushall();
  await admin.quit();
});
afterEach(async () => {
  for (const r of running.splice(0).reverse()) await r.close();
});

/** A fake node that knows demo::get-n: it answers its argument, or the lie. */
async function node(lies = false): Promise<FakeNode> {
  const n = await startFakeNode({ tipHeight: 100 });
  n.setAbi(TESTNET_ADDR, 'demo', GET_N_ABI);
  n.setReadOnly(TESTNET_ADDR, 'demo', 'get-n', ({ arguments: args }: ReadOnlyCall) => ({
    okay: true,
    result: lies ? LIE : args[0]!,
  }));
  running.push(n);
  return n;
}

/** An instance on the shared Redis whose testnet upstreams are `nodes`, in order. */
async function instance(
  nodes: readonly FakeNode[],
  env: Record<string, string> = {},
): Promise<RunningGateway> {
  const gw = await startGateway(
    testEnv(nodes[0]!.url, {
      STACKS_API_URL_TESTNET: nodes.map((n) => n.url).join(','),
      CACHE_STORE: 'redis',
      REDIS_URL: redis!.url,
      CHAIN_TIP_MAX_AGE_MS: '60000',
      ...env,
    }),
  );
  running.push(gw);
  await gw.gateway.startupRound?.();
  return gw;
}

function read(gw: RunningGateway, n: number): Promise<JsonResponse> {
  return request(`${gw.url}/contract-calls/read-only/${TESTNET_ADDR}/demo/get-n`, {
    body: { functionArgs: [hex(Cl.uint(n))] },
  });
}

function attested(res: JsonResponse): number | undefined {
  const m = /(?:^|;)\s*attested=(\d+)\s*(?:;|$)/.exec(res.headers.get('cache-status') ?? '');
  return m === null ? undefined : Number(m[1]);
}

const callReads = (nodes: readonly FakeNode[]) => nodes.reduce((sum, n) => sum + n.count('call-read'), 0);

async function metric(gw: RunningGateway, name: string, labels: Record<string, string>): Promise<number> {
  return metricValue(parseMetrics(await (await fetch(`${gw.url}/metrics`)).text()), name, labels);
}

async function stateOf(gw: RunningGateway, id: string): Promise<string | undefined> {
  const res = await request(`${gw.url}/ready`);
  const listed: Array<{ id: string; state: string }> = res.body.data.checks.upstream.testnet.upstreams;
  return listed.find((u) => u.id === id)?.state;
}

describe('attested entries on a shared Redis', () => {
  it('an entry a 1/1 instance stored is a miss for a 2/3 instance; a 2/3 entry is a hit for both', async () => {
    const nodes = [await node(), await node(), await node()];
    const single = await instance(nodes); // UPSTREAM_CONSENSUS_TESTNET unset: 1/1, off
    const voting = await instance(nodes, { UPSTREAM_CONSENSUS_TESTNET: '2/3' });

    // The same key space: what the 2/3 instance stores, the 1/1 instance serves without asking.
    const stored = await read(voting, 2);
    expect(stored.status, JSON.stringify(stored.body)).toBe(200);
    expect(stored.headers.get('cache-status')).toMatch(/fwd=miss/);
    const votes = attested(stored);
    expect(votes).toBeGreaterThanOrEqual(2);
    // (A hit is the Cache-Status's word: counting the nodes' requests here would race the
    // third participant of a vote, whose answer may come after the answer went out.)
    const shared = await read(single, 2);
    expect(shared.body.data).toBe('2');
    expect(shared.headers.get('cache-status')).toMatch(/^clarity-cache; hit/);

    // An entry of one upstream's word ...
    const one = await read(single, 1);
    expect(one.status).toBe(200);
    expect(one.headers.get('cache-status')).toMatch(/fwd=miss/);
    expect((await read(single, 1)).headers.get('cache-status')).toMatch(/^clarity-cache; hit/);
    // ... is a miss for the instance that wants two: voted afresh, and stored with its votes.
    const before = callReads(nodes);
    const revoted = await read(voting, 1);
    expect(revoted.status).toBe(200);
    expect(revoted.body.data).toBe('1');
    expect(revoted.headers.get('cache-status')).not.toMatch(/^clarity-cache; hit/);
    expect(attested(revoted)).toBeGreaterThanOrEqual(2);
    expect(callReads(nodes)).toBeGreaterThanOrEqual(before + 2);
    const hit = await read(voting, 1);
    expect(hit.headers.get('cache-status')).toMatch(/^clarity-cache; hit/);
    expect(attested(hit)).toBe(attested(revoted));

    // Another 2/3 instance serves the attested entries as hits, with their votes.
    const other = await instance(nodes, { UPSTREAM_CONSENSUS_TESTNET: '2/3' });
    const fromOther = await read(other, 2);
    expect(fromOther.headers.get('cache-status')).toMatch(/^clarity-cache; hit/);
    expect(attested(fromOther)).toBe(votes);
  });
});

/** Resolves once cond() holds; checks on every turn of the event loop (bounded). */
async function until(cond: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * Two instances ask for one key at once: the first one's load is held at the nodes (every
 * call-read gated) until the second one's request is waiting for it (its load of the key under
 * way in-process), then released. Returns both answers and the call-reads the nodes saw.
 */
async function concurrently(
  nodes: readonly FakeNode[],
  first: RunningGateway,
  second: RunningGateway,
  n: number,
): Promise<{ a: JsonResponse; b: JsonResponse; calls: number }> {
  // The ABI first, on both (no call-read: none of a warm-up may still be on its way below), so
  // that the read below is the only load of either.
  for (const gw of [first, second]) {
    expect((await request(`${gw.url}/v2/contracts/interface/${TESTNET_ADDR}/demo`)).status).toBe(200);
  }
  const before = callReads(nodes);
  for (const node of nodes) node.gate({ kind: 'call-read' });
  const a = read(first, n);
  await nodes[0]!.waitForRequests(1, { kind: 'call-read' });
  const b = read(second, n);
  await until(() => second.gateway.cache.inflight === 1, 'the second instance to wait for the key');
  for (const node of nodes) node.release();
  const [ra, rb] = await Promise.all([a, b]);
  return { a: ra, b: rb, calls: callReads(nodes) - before };
}

describe('one key asked by two instances at once', () => {
  it('shares one vote between two 2/3 instances, and both answers say its votes', async () => {
    const nodes = [await node(), await node(), await node()];
    const env = { UPSTREAM_CONSENSUS_TESTNET: '2/3' };
    const one = await instance(nodes, env);
    const two = await instance(nodes, env);
    const { a, b, calls } = await concurrently(nodes, one, two, 5);
    expect(a.status, JSON.stringify(a.body)).toBe(200);
    expect(b.status, JSON.stringify(b.body)).toBe(200);
    expect([a.body.data, b.body.data]).toEqual(['5', '5']);
    expect(attested(a)).toBeGreaterThanOrEqual(2);
    expect(attested(b)).toBe(attested(a));
    expect(calls).toBeLessThanOrEqual(3);
  });

  it('a 2/3 instance never takes the value a 1/1 instance loaded at the same time', async () => {
    const nodes = [await node(), await node(), await node()];
    const single = await instance(nodes);
    const voting = await instance(nodes, { UPSTREAM_CONSENSUS_TESTNET: '2/3' });
    const { a, b } = await concurrently(nodes, single, voting, 6);
    expect(a.status).toBe(200);
    expect(b.status, JSON.stringify(b.body)).toBe(200);
    expect(b.body.data).toBe('6');
    // One upstream's word is not an attested answer for the instance that wants two.
    expect(attested(b)).toBeGreaterThanOrEqual(2);
    const again = await read(voting, 6);
    expect(again.headers.get('cache-status')).toMatch(/^clarity-cache; hit/);
    expect(attested(again)).toBeGreaterThanOrEqual(2);
  });
});

describe('strikes and sitting out across the fleet', () => {
  it('an upstream one instance made sit out is sat out by the other: /ready, metrics, and never asked', async () => {
    const [bad, a, b] = [await node(true), await node(), await node()];
    const env = { UPSTREAM_CONSENSUS_TESTNET: '2/3' };
    const one = await instance([bad, a, b], env);
    const two = await instance([bad, a, b], env);

    for (let n = 1; n <= 3; n++) {
      const res = await read(one, n);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.data).toBe(String(n));
      expect(attested(res)).toBe(2);
    }
    await bad.waitForRequests(3, { kind: 'call-read' });
    expect(bad.count('call-read')).toBe(3);
    await expect.poll(() => stateOf(one, 'testnet'), { timeout: 5000 }).toBe('sitting-out');
    // The other instance learns it through Redis, without a vote of its own.
    await expect.poll(() => stateOf(two, 'testnet'), { timeout: 5000 }).toBe('sitting-out');
    expect(await stateOf(two, 'testnet-2')).toBe('ok');
    expect(
      await metric(two, 'clarity_cache_upstream_sitting_out', { network: 'testnet', upstream: 'testnet' }),
    ).toBe(1);
    expect(
      await metric(one, 'clarity_cache_consensus_strikes_total', { network: 'testnet', upstream: 'testnet' }),
    ).toBe(3);

    const before = bad.total;
    for (let n = 10; n <= 12; n++) {
      const res = await read(two, n);
      expect(res.status).toBe(200);
      expect(res.body.data).toBe(String(n));
      expect(attested(res)).toBe(2);
    }
    expect(bad.total).toBe(before);
  });

  it('strikes add up across instances: two on one, one on the other make it sit out for both', async () => {
    const [bad, a, b] = [await node(true), await node(), await node()];
    const env = { UPSTREAM_CONSENSUS_TESTNET: '2/3' };
    const one = await instance([bad, a, b], env);
    const two = await instance([bad, a, b], env);

    expect((await read(one, 1)).body.data).toBe('1');
    expect((await read(two, 2)).body.data).toBe('2');
    expect(await stateOf(one, 'testnet')).not.toBe('sitting-out');
    expect(await stateOf(two, 'testnet')).not.toBe('sitting-out');
    expect((await read(one, 3)).body.data).toBe('3');
    await bad.waitForRequests(3, { kind: 'call-read' });
    expect(bad.count('call-read')).toBe(3);
    await expect.poll(() => stateOf(one, 'testnet'), { timeout: 5000 }).toBe('sitting-out');
    await expect.poll(() => stateOf(two, 'testnet'), { timeout: 5000 }).toBe('sitting-out');

    const before = bad.total;
    expect((await read(one, 4)).body.data).toBe('4');
    expect((await read(two, 5)).body.data).toBe('5');
    expect(bad.total).toBe(before);
  });
});
