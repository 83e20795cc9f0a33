/**
 * Attested answers (k-of-n upstream consensus, docs/consensus.md) over real HTTP: one in-process
 * gateway in front of three fault-injecting fake nodes (the testnet upstreams `testnet`,
 * `testnet-2`, `testnet-3`, in that order of preference), with `UPSTREAM_CONSENSUS_TESTNET`.
 *
 * The fake nodes share one deterministic chain, so an honest node answers a read pinned to a
 * block (`?tip=<index block hash>`) with the same bytes as another honest node; a liar answers
 * another value at the same block. The liar is put first where it must be asked (the gateway
 * may stop asking once k agree).
 *
 * Nothing here measures time: what is asserted is what the client got (status, value,
 * `Cache-Status`, tip height), which node was asked what (counts and `?tip=` queries), and what
 * /ready, /metrics and the consensus log say.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Cl } from '@stacks/transactions';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type FakeNode,
  type FakeRawResponse,
  type ReadOnlyAnswer,
  type ReadOnlyCall,
  startFakeNode,
} from '../../support/fake-node.js';
import { hex, TESTNET_ADDR } from '../../support/fixtures.js';
import {
  type JsonResponse,
  type RunningGateway,
  request,
  startGateway,
  testEnv,
} from '../../support/gateway.js';
import { metricValue, parseMetrics } from '../../support/prom.js';
import { openSse } from '../../support/sse.js';

const ABI = {
  functions: [
    {
      name: 'get-n',
      access: 'read_only',
      args: [{ name: 'n', type: 'uint128' }],
      outputs: { type: 'uint128' },
    },
    { name: 'height', access: 'read_only', args: [], outputs: { type: 'uint128' } },
  ],
  variables: [],
  maps: [],
  fungible_tokens: [],
  non_fungible_tokens: [],
};

/** The upstream ids of a comma-separated testnet list, in its order. */
const IDS = ['testnet', 'testnet-2', 'testnet-3'] as const;

type Behaviour = (call: ReadOnlyCall) => ReadOnlyAnswer | FakeRawResponse;

/** An honest node: get-n answers its argument, at any block. */
const honest: Behaviour = ({ arguments: args }) => ({ okay: true, result: args[0]! });
/** What a liar answers to every get-n: another value at the same block. */
const LIE = hex(Cl.uint(666));
const liar: Behaviour = () => ({ okay: true, result: LIE });

/** The exact body bytes a fake node sends for a read-only answer. */
const bodyOf = (result: string) => JSON.stringify({ okay: true, result });
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

const running: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const r of running.splice(0).reverse()) await r.close();
});

/** A fake node that knows demo (get-n with `behaviour`; height answers the block's height). */
async function node(behaviour: Behaviour = honest, tipHeight = 100): Promise<FakeNode> {
  const n = await startFakeNode({ tipHeight });
  n.setAbi(TESTNET_ADDR, 'demo', ABI);
  n.setReadOnly(TESTNET_ADDR, 'demo', 'get-n', behaviour);
  n.setReadOnly(TESTNET_ADDR, 'demo', 'height', ({ height }) => ({
    okay: true,
    result: hex(Cl.uint(height)),
  }));
  running.push(n);
  return n;
}

/**
 * Three honest nodes whose `height` answers the block's height, or, while `disputing()`, three
 * different values (7000 + i): a vote on it is then disputed.
 */
async function heightDisputers(disputing: () => boolean): Promise<FakeNode[]> {
  const nodes = [await node(), await node(), await node()];
  nodes.forEach((n, i) => {
    n.setReadOnly(TESTNET_ADDR, 'demo', 'height', ({ height }) => ({
      okay: true,
      result: hex(Cl.uint(disputing() ? 7000 + i : height)),
    }));
  });
  return nodes;
}

/** Gateway env: the testnet upstreams are `nodes` in order, with consensus `k/n`. */
function consensusEnv(
  nodes: readonly FakeNode[],
  consensus: string,
  env: Record<string, string> = {},
): Record<string, string> {
  return testEnv(nodes[0]!.url, {
    STACKS_API_URL_TESTNET: nodes.map((n) => n.url).join(','),
    UPSTREAM_CONSENSUS_TESTNET: consensus,
    // The pinned block stays the one learned at start (nothing here waits that long).
    CHAIN_TIP_MAX_AGE_MS: '60000',
    ...env,
  });
}

/** A running gateway that has learned its first tip (the median of the three /v2/info). */
async function gateway(
  nodes: readonly FakeNode[],
  consensus: string,
  env: Record<string, string> = {},
): Promise<RunningGateway> {
  const gw = await startGateway(consensusEnv(nodes, consensus, env));
  running.push(gw);
  await gw.gateway.startupRound?.();
  return gw;
}

function read(gw: RunningGateway, n: number, extra: Record<string, unknown> = {}): Promise<JsonResponse> {
  return request(`${gw.url}/contract-calls/read-only/${TESTNET_ADDR}/demo/get-n`, {
    body: { functionArgs: [hex(Cl.uint(n))], ...extra },
  });
}

function readHeight(gw: RunningGateway, cacheControl?: Record<string, unknown>): Promise<JsonResponse> {
  return request(`${gw.url}/contract-calls/read-only/${TESTNET_ADDR}/demo/height`, {
    body: { functionArgs: [], ...(cacheControl === undefined ? {} : { cacheControl }) },
  });
}

/** The `attested=<votes>` of a Cache-Status value (undefined when absent). */
function attestedIn(cacheStatus: string | null | undefined): number | undefined {
  const m = /(?:^|;)\s*attested=(\d+)\s*(?:;|$)/.exec(cacheStatus ?? '');
  return m === null ? undefined : Number(m[1]);
}
const attested = (res: JsonResponse) => attestedIn(res.headers.get('cache-status'));

/**
 * Reads get-n for every n in from..to (each a distinct key): each a 200 with its own value,
 * attested by two votes and, when `tipHeight` is given, answered at that tip height.
 */
async function expectAttestedByTwo(
  gw: RunningGateway,
  from: number,
  to: number,
  { tipHeight }: { tipHeight?: string } = {},
): Promise<void> {
  for (let n = from; n <= to; n++) {
    const res = await read(gw, n);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toBe(String(n));
    expect(attested(res)).toBe(2);
    if (tipHeight !== undefined) expect(res.headers.get('x-canonical-stacks-tip-height')).toBe(tipHeight);
  }
}

/** The `?tip=` each call-read (or other kind) request carried, normalised (no 0x, lower case). */
function tipsSeen(
  n: FakeNode,
  kind: 'call-read' | 'interface' | 'other' = 'call-read',
): Array<string | undefined> {
  return n.requests
    .filter((r) => r.kind === kind)
    .map((r) => r.query['tip']?.replace(/^0x/, '').toLowerCase());
}

async function metrics(gw: RunningGateway) {
  return parseMetrics(await (await fetch(`${gw.url}/metrics`)).text());
}
async function metric(gw: RunningGateway, name: string, labels: Record<string, string>): Promise<number> {
  return metricValue(await metrics(gw), name, labels);
}
const strikes = (gw: RunningGateway, upstream: string) =>
  metric(gw, 'clarity_cache_consensus_strikes_total', { network: 'testnet', upstream });
const sittingOut = (gw: RunningGateway, upstream: string) =>
  metric(gw, 'clarity_cache_upstream_sitting_out', { network: 'testnet', upstream });
const votes = (gw: RunningGateway, outcome: string) =>
  metric(gw, 'clarity_cache_consensus_votes_total', { network: 'testnet', outcome });

async function states(gw: RunningGateway): Promise<Record<string, string>> {
  const res = await request(`${gw.url}/ready`);
  const listed: Array<{ id: string; state: string }> = res.body.data.checks.upstream.testnet.upstreams;
  return Object.fromEntries(listed.map((u) => [u.id, u.state]));
}

describe('attested answers with three upstreams', () => {
  it('outvotes one liar at 2/3 (attested=2, pinned to the known block); after 3 strikes it sits out and is no longer asked', async () => {
    const [bad, a, b] = [await node(liar), await node(), await node()];
    const gw = await gateway([bad, a, b], '2/3');
    const pinned = a.block(100).indexBlockHash;

    await expectAttestedByTwo(gw, 1, 3, { tipHeight: '100' });
    // The liar was asked every time (it is preferred), always at the pinned block, as were the others.
    // (Up to n are asked at once and the answer goes out once k agree: a dissent may come later.)
    await bad.waitForRequests(3, { kind: 'call-read' });
    expect(bad.count('call-read')).toBe(3);
    for (const n of [bad, a, b]) {
      expect(tipsSeen(n).length).toBeGreaterThan(0);
      expect(new Set(tipsSeen(n))).toEqual(new Set([pinned]));
    }
    await expect.poll(() => strikes(gw, 'testnet'), { timeout: 5000 }).toBe(3);
    expect(await strikes(gw, 'testnet-2')).toBe(0);
    expect(await strikes(gw, 'testnet-3')).toBe(0);

    await expect.poll(async () => (await states(gw))['testnet'], { timeout: 5000 }).toBe('sitting-out');
    expect(await states(gw)).toMatchObject({ 'testnet-2': 'ok', 'testnet-3': 'ok' });
    expect(await sittingOut(gw, 'testnet')).toBe(1);
    expect(await sittingOut(gw, 'testnet-2')).toBe(0);
    expect(await votes(gw, 'agreed')).toBeGreaterThanOrEqual(3);
    expect(await votes(gw, 'disputed')).toBe(0);

    // Sitting out: never asked again, and the two honest nodes still attest every answer.
    const before = bad.total;
    await expectAttestedByTwo(gw, 4, 6);
    expect(bad.total).toBe(before);
    expect(a.count('call-read')).toBeGreaterThanOrEqual(6);
    expect(b.count('call-read')).toBeGreaterThanOrEqual(6);
    // Every selection of the network, the tip's /v2/info included.
    const infos = a.count('info') + b.count('info');
    await gw.gateway.chain.currentBlock('testnet', { renew: true });
    expect(a.count('info') + b.count('info')).toBe(infos + 1);
    expect(bad.total).toBe(before);
  });

  it('does not count a lagging node (404 Chain tip not found at the pinned block) as a vote, and gives it no strike', async () => {
    // One block behind: not lagging for selection, but it does not have the pinned block 100.
    const [slow, a, b] = [await node(honest, 99), await node(), await node()];
    const gw = await gateway([slow, a, b], '2/3');
    expect(gw.gateway.chain.known('testnet')?.height).toBe(100);
    const pinned = a.block(100).indexBlockHash;

    await expectAttestedByTwo(gw, 1, 4, { tipHeight: '100' });
    // It was asked (preferred) at the pinned block, which it does not know ...
    await slow.waitForRequests(1, { kind: 'call-read' });
    expect(new Set(tipsSeen(slow))).toEqual(new Set([pinned]));
    // ... and answered the node's 404: no vote, no strike, even past UPSTREAM_CONSENSUS_STRIKES.
    expect(await strikes(gw, 'testnet')).toBe(0);
    expect(await sittingOut(gw, 'testnet')).toBe(0);
    expect((await states(gw))['testnet']).not.toBe('sitting-out');
    expect(await votes(gw, 'agreed')).toBeGreaterThanOrEqual(4);
    expect(await votes(gw, 'disputed')).toBe(0);
    expect(await votes(gw, 'low')).toBe(0);
  });

  it('lets two identical liars win at 2/3 (no vote beats a colluding majority) and strikes the honest node', async () => {
    // Documented limit: consensus detects a minority of wrong nodes, never a colluding majority.
    const [good, bad1, bad2] = [await node(), await node(liar), await node(liar)];
    const gw = await gateway([good, bad1, bad2], '2/3');
    const res = await read(gw, 7);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toBe('666');
    expect(attested(res)).toBe(2);
    await good.waitForRequests(1, { kind: 'call-read' });
    expect(good.count('call-read')).toBe(1);
    await expect.poll(() => strikes(gw, 'testnet'), { timeout: 5000 }).toBe(1);
    expect(await strikes(gw, 'testnet-2')).toBe(0);
    expect(await strikes(gw, 'testnet-3')).toBe(0);
  });

  it('answers 502 UPSTREAM_DISPUTE at 3/3 with two liars, with hashes but no bytes of any answer, and caches nothing', async () => {
    const [good, bad1, bad2] = [await node(), await node(liar), await node(liar)];
    const gw = await gateway([good, bad1, bad2], '3/3');
    const block = good.block(100);
    const res = await read(gw, 7);
    expect(res.status, JSON.stringify(res.body)).toBe(502);
    expect(res.body.success).toBe(false);
    expect(res.body.error.code).toBe('UPSTREAM_DISPUTE');
    const details = res.body.error.details;
    expect(details).toMatchObject({
      reason: 'disputed',
      retryable: true,
      k: 3,
      n: 3,
      block: { height: 100, indexBlockHash: block.indexBlockHash },
    });
    const participants = [...details.participants].sort((x: { id: string }, y: { id: string }) =>
      x.id.localeCompare(y.id),
    );
    const honestHash = sha256(bodyOf(hex(Cl.uint(7))));
    const lieHash = sha256(bodyOf(LIE));
    expect(participants).toEqual([
      { id: 'testnet', status: 200, sha256: honestHash },
      { id: 'testnet-2', status: 200, sha256: lieHash },
      { id: 'testnet-3', status: 200, sha256: lieHash },
    ]);
    // No byte of any answer: neither value's serialization appears anywhere in the error.
    const text = JSON.stringify(res.body);
    expect(text).not.toContain(hex(Cl.uint(7)).slice(2));
    expect(text).not.toContain(LIE.slice(2));
    // A dispute is no decided vote: nobody is struck.
    for (const id of IDS) expect(await strikes(gw, id)).toBe(0);
    expect(await votes(gw, 'disputed')).toBe(1);

    // Nothing cached: the same read asks every node again, and is disputed again.
    const counts = [good, bad1, bad2].map((n) => n.count('call-read'));
    const again = await read(gw, 7);
    expect(again.status).toBe(502);
    expect(again.body.error.code).toBe('UPSTREAM_DISPUTE');
    [good, bad1, bad2].forEach((n, i) => {
      expect(n.count('call-read')).toBeGreaterThan(counts[i]!);
    });
    expect(await votes(gw, 'disputed')).toBe(2);
  });

  it('never caches a flapping liar’s value: every answer, miss, bustCache refetch or hit, is the honest one', async () => {
    let asked = 0;
    let lies = 0;
    const flapping: Behaviour = (call) => {
      asked += 1;
      if (asked % 2 === 1) {
        lies += 1;
        return { okay: true, result: hex(Cl.uint(901)) };
      }
      return honest(call);
    };
    const [flap, a, b] = [await node(flapping), await node(), await node()];
    // Strikes out of the way: the liar keeps being asked for the whole test.
    const gw = await gateway([flap, a, b], '2/3', { UPSTREAM_CONSENSUS_STRIKES: '1000' });

    // Distinct keys: each a miss.
    for (let n = 1; n <= 10; n++) {
      const res = await read(gw, n);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.data).toBe(String(n));
      expect(attested(res)).toBeGreaterThanOrEqual(2);
    }
    // One key refetched again and again.
    for (let i = 0; i < 10; i++) {
      const res = await read(gw, 500, { cacheControl: { bustCache: true } });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.data).toBe('500');
      expect(res.headers.get('cache-status')).toContain('fwd=request');
      expect(attested(res)).toBeGreaterThanOrEqual(2);
    }
    await flap.waitForRequests(20, { kind: 'call-read' });
    expect(asked).toBe(20);
    expect(lies).toBe(10);
    // What the cache holds is the honest value of every key.
    for (const n of [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 500]) {
      const res = await read(gw, n);
      expect(res.body.data).toBe(String(n));
      expect(res.headers.get('cache-status')).toMatch(/^clarity-cache; hit/);
      expect(attested(res)).toBeGreaterThanOrEqual(2);
    }
    await expect.poll(() => strikes(gw, 'testnet'), { timeout: 5000 }).toBe(10);
  });

  it('keeps the older entry serving when the stale-while-revalidate background refresh is disputed', async () => {
    let disputing = false;
    const nodes = await heightDisputers(() => disputing);
    const gw = await gateway(nodes, '2/3');
    const first = await readHeight(gw);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.data).toBe('100');
    const votesOfEntry = attested(first);
    expect(votesOfEntry).toBeGreaterThanOrEqual(2);

    // The chain moves on: the entry (read at 100) is stale for maxBlocks 0.
    for (const n of nodes) n.mine(1);
    expect((await gw.gateway.chain.currentBlock('testnet', { renew: true })).height).toBe(101);
    disputing = true;
    const calls = nodes.map((n) => n.count('call-read'));

    const stale = await readHeight(gw, { maxBlocks: 0, staleWhileRevalidate: 60 });
    expect(stale.status).toBe(200);
    expect(stale.body.data).toBe('100');
    expect(stale.headers.get('cache-status')).toContain('detail=stale-while-revalidate');
    expect(attested(stale)).toBe(votesOfEntry);
    // The background refresh was voted at the new block, and disputed (three different values).
    await expect.poll(() => votes(gw, 'disputed'), { timeout: 5000 }).toBeGreaterThanOrEqual(1);
    await expect
      .poll(
        () =>
          metric(gw, 'clarity_cache_background_refreshes_total', { endpoint: 'read-only', result: 'failed' }),
        { timeout: 5000 },
      )
      .toBeGreaterThanOrEqual(1);
    for (const [i, n] of nodes.entries()) {
      expect(n.count('call-read')).toBeGreaterThan(calls[i]!);
      expect(tipsSeen(n).at(-1)).toBe(n.block(101).indexBlockHash);
    }

    // The older entry keeps serving.
    const again = await readHeight(gw, { maxBlocks: 0, staleWhileRevalidate: 60 });
    expect(again.status).toBe(200);
    expect(again.body.data).toBe('100');
    expect(again.headers.get('cache-status')).toContain('detail=stale-while-revalidate');
    expect(attested(again)).toBe(votesOfEntry);

    // Once they agree again, a refresh replaces it with the attested value at 101.
    disputing = false;
    await expect
      .poll(async () => (await readHeight(gw, { maxBlocks: 0, staleWhileRevalidate: 60 })).body.data, {
        timeout: 5000,
      })
      .toBe('101');
    const fresh = await readHeight(gw, { maxBlocks: 0, staleWhileRevalidate: 60 });
    expect(fresh.headers.get('cache-status')).toMatch(/^clarity-cache; hit/);
    expect(attested(fresh)).toBeGreaterThanOrEqual(2);
  });

  it('answers the older entry under stale-if-error when the refetch is disputed', async () => {
    let disputing = false;
    const nodes = await heightDisputers(() => disputing);
    const gw = await gateway(nodes, '2/3');
    const first = await readHeight(gw);
    expect(first.body.data).toBe('100');
    for (const n of nodes) n.mine(1);
    expect((await gw.gateway.chain.currentBlock('testnet', { renew: true })).height).toBe(101);
    disputing = true;

    const res = await readHeight(gw, { maxBlocks: 0, staleIfError: 60 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toBe('100');
    expect(res.headers.get('cache-status')).toContain('detail=stale-if-error');
    expect(attested(res)).toBe(attested(first));
    expect(await votes(gw, 'disputed')).toBe(1);
    // Without a window the dispute is the answer, and the entry is not replaced.
    const failed = await readHeight(gw, { maxBlocks: 0 });
    expect(failed.status).toBe(502);
    expect(failed.body.error.code).toBe('UPSTREAM_DISPUTE');
    expect(failed.body.error.details).toMatchObject({
      reason: 'disputed',
      k: 2,
      n: 3,
      block: { height: 101, indexBlockHash: nodes[0]!.block(101).indexBlockHash },
    });
  });
});

describe('participants that do not vote', () => {
  it.each([
    ['answers 503', (n: FakeNode) => n.status5xx(503, { kind: 'call-read' })],
    ['is slower than UPSTREAM_TIMEOUT_MS', (n: FakeNode) => n.hang({ kind: 'call-read' })],
    ['sends an implausible tip header', (n: FakeNode) => n.tipHeader('2000000000')],
  ])('a node that %s is replaced by the next upstream, with no strike', async (_what, fault) => {
    const [odd, a, b] = [await node(liar), await node(), await node()];
    const gw = await gateway([odd, a, b], '2/3', { UPSTREAM_TIMEOUT_MS: '300' });
    fault(odd);
    const asked = () => odd.count('call-read') + odd.count('interface');
    await expectAttestedByTwo(gw, 1, 4);
    // It was asked (preferred: the ABI or the call, at least the first time; an implausible tip
    // also leaves it alone for a breaker cooldown), and its answer, had it one, was a lie: not
    // voting, it neither won nor lost.
    await expect.poll(asked, { timeout: 5000 }).toBeGreaterThanOrEqual(1);
    expect(await strikes(gw, 'testnet')).toBe(0);
    expect(await sittingOut(gw, 'testnet')).toBe(0);
    expect(await votes(gw, 'agreed')).toBeGreaterThanOrEqual(4);
  });
});

describe('the ABI is voted', () => {
  it('a liar’s ABI is outvoted, both on the interface route and for checking a call', async () => {
    const [bad, a, b] = [await node(), await node(), await node()];
    // The liar's ABI has no get-n: believed, it would refuse the call (INVALID_FUNCTION).
    bad.setAbi(TESTNET_ADDR, 'demo', { ...ABI, functions: ABI.functions.filter((f) => f.name !== 'get-n') });
    const gw = await gateway([bad, a, b], '2/3');
    const res = await read(gw, 8);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toBe('8');
    await bad.waitForRequests(1, { kind: 'interface' });
    await expect.poll(() => strikes(gw, 'testnet'), { timeout: 5000 }).toBe(1);

    const abi = await request(`${gw.url}/v2/contracts/interface/${TESTNET_ADDR}/demo`);
    expect(abi.status).toBe(200);
    expect(abi.body.functions.map((f: { name: string }) => f.name)).toContain('get-n');
    expect(attested(abi)).toBe(2);
  });
});

describe('the pinned block', () => {
  it('is the known tip’s block even when the nodes have moved on; the answer’s tip height is its height', async () => {
    const nodes = [await node(), await node(), await node()];
    const gw = await gateway(nodes, '2/3');
    for (const n of nodes) n.mine(1); // headers now say 101; the block known by hash is 100
    const res = await read(gw, 1);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-canonical-stacks-tip-height')).toBe('100');
    for (const n of nodes) {
      for (const tip of tipsSeen(n)) expect(tip).toBe(n.block(100).indexBlockHash);
    }
    expect(nodes.map((n) => n.count('call-read')).reduce((x, y) => x + y)).toBeGreaterThanOrEqual(2);
  });

  it('votes a read with its own tip at that block, and a tip no participant knows stays 404', async () => {
    const [bad, a, b] = [await node(liar), await node(), await node()];
    const gw = await gateway([bad, a, b], '2/3');
    const at90 = a.block(90).indexBlockHash;
    const res = await read(gw, 3, { tip: at90 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toBe('3');
    expect(attested(res)).toBe(2);
    await bad.waitForRequests(1, { kind: 'call-read' });
    expect(tipsSeen(bad)).toEqual([at90]);
    for (const n of [a, b]) expect(new Set(tipsSeen(n))).toEqual(new Set([at90]));

    const nowhere = 'cc'.repeat(32);
    const unknown = await read(gw, 4, { tip: nowhere });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('UPSTREAM_API_ERROR');
    expect(unknown.body.error.details.tip.replace(/^0x/, '')).toBe(nowhere);
  });

  it('learns the tip again and votes again there when fewer than k participants know the pinned block', async () => {
    const [ahead, a, b] = [await node(), await node(), await node()];
    const gw = await gateway([ahead, a, b], '2/3');
    // The preferred node runs 3 blocks ahead, and the gateway learns its block by hash.
    ahead.mine(3);
    expect((await gw.gateway.chain.currentBlock('testnet', { renew: true })).height).toBe(103);
    const res = await read(gw, 5);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toBe('5');
    expect(attested(res)).toBeGreaterThanOrEqual(2);
    // Only one node knew 103: the vote moved to the block another upstream described (100).
    expect(res.headers.get('x-canonical-stacks-tip-height')).toBe('100');
    await a.waitForRequests(2, { kind: 'call-read' });
    const atA = tipsSeen(a);
    expect(atA[0]).toBe(a.block(103).indexBlockHash);
    expect(atA.at(-1)).toBe(a.block(100).indexBlockHash);
    expect(await votes(gw, 'disputed')).toBe(0);
    for (const id of IDS) expect(await strikes(gw, id)).toBe(0);
  });
});

describe('low participation', () => {
  /** Three honest nodes of which only the first answers a call-read (the others 503): one vote. */
  async function oneVoterOfThree(): Promise<[FakeNode, FakeNode, FakeNode]> {
    const [a, b, c] = [await node(), await node(), await node()];
    b.status5xx(503, { kind: 'call-read' });
    c.status5xx(503, { kind: 'call-read' });
    return [a, b, c];
  }

  it('UPSTREAM_CONSENSUS_LOW=accept serves and caches the only vote among three with attested=1', async () => {
    const [a, b, c] = await oneVoterOfThree();
    const gw = await gateway([a, b, c], '2/3', { UPSTREAM_CONSENSUS_LOW: 'accept' });
    const res = await read(gw, 9);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toBe('9');
    expect(attested(res)).toBe(1);
    expect(res.headers.get('cache-status')).toContain('stored');
    expect(await votes(gw, 'low')).toBe(1);
    // Not voting is no strike.
    for (const id of IDS) expect(await strikes(gw, id)).toBe(0);
    // Whatever the next read does with the entry (see the report), it says it holds one vote.
    const again = await read(gw, 9);
    expect(again.status).toBe(200);
    expect(again.body.data).toBe('9');
    expect(attested(again)).toBe(1);
  });

  it('UPSTREAM_CONSENSUS_LOW=accept serves the unique most-voted answer, never one of a tie', async () => {
    // 3/3, one node down for call-read: two votes at most, fewer than k.
    const [a, b, down] = [
      await node(),
      await node((call) =>
        call.arguments[0] === hex(Cl.uint(2)) ? { okay: true, result: LIE } : honest(call),
      ),
      await node(),
    ];
    down.status5xx(503, { kind: 'call-read' });
    const gw = await gateway([a, b, down], '3/3', { UPSTREAM_CONSENSUS_LOW: 'accept' });
    const agreed = await read(gw, 1);
    expect(agreed.status, JSON.stringify(agreed.body)).toBe(200);
    expect(agreed.body.data).toBe('1');
    expect(attested(agreed)).toBe(2);
    // Two votes, one each: no unique most-voted answer, so nothing is served or cached.
    const tie = await read(gw, 2);
    expect(tie.status, JSON.stringify(tie.body)).toBe(502);
    expect(tie.body.error.code).toBe('UPSTREAM_DISPUTE');
    expect(JSON.stringify(tie.body)).not.toContain(LIE.slice(2));
    const before = a.count('call-read');
    expect((await read(gw, 2)).status).toBe(502);
    expect(a.count('call-read')).toBeGreaterThan(before);
  });

  it('UPSTREAM_CONSENSUS_LOW=error (the default) answers 502 UPSTREAM_DISPUTE "low participation", caching nothing', async () => {
    const [a, b, c] = await oneVoterOfThree();
    // The 503s must not open the circuits: the test heals them and reads again.
    const gw = await gateway([a, b, c], '2/3', { UPSTREAM_BREAKER_FAILURES: '1000' });
    const res = await read(gw, 9);
    expect(res.status, JSON.stringify(res.body)).toBe(502);
    expect(res.body.error.code).toBe('UPSTREAM_DISPUTE');
    expect(res.body.error.details).toMatchObject({
      reason: 'low participation',
      retryable: true,
      k: 2,
      n: 3,
      block: { height: 100, indexBlockHash: a.block(100).indexBlockHash },
    });
    expect(JSON.stringify(res.body)).not.toContain(hex(Cl.uint(9)).slice(2));
    expect(await votes(gw, 'low')).toBe(1);
    for (const id of IDS) expect(await strikes(gw, id)).toBe(0);
    // Nothing cached: once the others answer again, the read is voted afresh.
    b.clearFaults();
    c.clearFaults();
    const before = a.count('call-read');
    const ok = await read(gw, 9);
    expect(ok.status).toBe(200);
    expect(ok.body.data).toBe('9');
    expect(attested(ok)).toBeGreaterThanOrEqual(2);
    expect(a.count('call-read') + b.count('call-read') + c.count('call-read')).toBeGreaterThan(before);
  });
});

describe('attested= in Cache-Status', () => {
  it('is on the miss, on the hit and in batch meta (a consistent batch votes at its block)', async () => {
    const nodes = [await node(), await node(), await node()];
    const gw = await gateway(nodes, '2/3');
    const miss = await read(gw, 1);
    expect(miss.status).toBe(200);
    expect(miss.headers.get('cache-status')).toMatch(/fwd=miss/);
    const count = attested(miss);
    expect(count).toBeGreaterThanOrEqual(2);
    expect(count).toBeLessThanOrEqual(3);
    const hit = await read(gw, 1);
    expect(hit.headers.get('cache-status')).toMatch(/^clarity-cache; hit/);
    expect(attested(hit)).toBe(count);
    // A third, identical: the fast lane's replay says it too.
    const replay = await read(gw, 1);
    expect(attested(replay)).toBe(count);

    const call = (n: number) => ({
      contractAddress: TESTNET_ADDR,
      contractName: 'demo',
      functionName: 'get-n',
      functionArgs: [hex(Cl.uint(n))],
    });
    const batch = await request(`${gw.url}/contract-calls/batch`, { body: { calls: [call(1), call(2)] } });
    expect(batch.status).toBe(200);
    const [r1, r2] = batch.body.data.results;
    expect(r1.data).toBe('1');
    expect(r1.meta.cacheStatus).toMatch(/^clarity-cache; hit/);
    expect(attestedIn(r1.meta.cacheStatus)).toBe(count);
    expect(r2.data).toBe('2');
    expect(r2.meta.cacheStatus).toMatch(/fwd=miss/);
    expect(attestedIn(r2.meta.cacheStatus)).toBeGreaterThanOrEqual(2);

    // A consistent batch: its calls are voted at the block data.tip names.
    const consistent = await request(`${gw.url}/contract-calls/batch`, {
      body: { calls: [call(3)], tip: 'consistent' },
    });
    expect(consistent.status).toBe(200);
    const tip = consistent.body.data.tip;
    const [r3] = consistent.body.data.results;
    expect(r3.data).toBe('3');
    expect(attestedIn(r3.meta.cacheStatus)).toBeGreaterThanOrEqual(2);
    expect(r3.meta.tipHeight).toBe(tip.height);
    const last = nodes.map((n) => n.lastRequest('call-read')?.query['tip']?.replace(/^0x/, '').toLowerCase());
    expect(
      last.filter((t) => t === tip.indexBlockHash.replace(/^0x/, '').toLowerCase()).length,
    ).toBeGreaterThanOrEqual(2);
  });

  it('is on node routes (a source outvoting a liar, pinned), never on /v2/info', async () => {
    const [bad, a, b] = [await node(), await node(), await node()];
    bad.setSource(TESTNET_ADDR, 'demo', '(define-read-only (get-n (n uint)) u666)');
    for (const n of [a, b]) n.setSource(TESTNET_ADDR, 'demo', '(define-read-only (get-n (n uint)) n)');
    const gw = await gateway([bad, a, b], '2/3');
    const url = `${gw.url}/v2/contracts/source/${TESTNET_ADDR}/demo`;
    const res = await request(url);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.source).toBe('(define-read-only (get-n (n uint)) n)');
    expect(attested(res)).toBe(2);
    await bad.waitForRequests(1, { kind: 'other' });
    const sourceTips = bad.requests
      .filter((r) => r.path.startsWith('/v2/contracts/source/'))
      .map((r) => r.query['tip']?.replace(/^0x/, '').toLowerCase());
    expect(sourceTips).toEqual([bad.block(100).indexBlockHash]);
    await expect.poll(() => strikes(gw, 'testnet'), { timeout: 5000 }).toBe(1);
    const hit = await request(url);
    expect(hit.body.source).toBe('(define-read-only (get-n (n uint)) n)');
    expect(hit.headers.get('cache-status')).toMatch(/^clarity-cache; hit/);
    expect(attested(hit)).toBe(2);

    // call-read in the node's shape: the read-only entry, voted, with its votes.
    const callRead = await request(`${gw.url}/v2/contracts/call-read/${TESTNET_ADDR}/demo/get-n`, {
      body: { sender: TESTNET_ADDR, arguments: [hex(Cl.uint(4))] },
    });
    expect(callRead.status, JSON.stringify(callRead.body)).toBe(200);
    expect(callRead.body).toEqual({ okay: true, result: hex(Cl.uint(4)) });
    expect(attested(callRead)).toBeGreaterThanOrEqual(2);
    const pinnedCalls = [bad, a, b].flatMap((n) => tipsSeen(n));
    expect(pinnedCalls.length).toBeGreaterThanOrEqual(2);
    expect(new Set(pinnedCalls)).toEqual(new Set([a.block(100).indexBlockHash]));
    const viaEnvelope = await read(gw, 4);
    expect(viaEnvelope.headers.get('cache-status')).toMatch(/^clarity-cache; hit/);
    expect(attested(viaEnvelope)).toBe(attested(callRead));

    const infoBefore = bad.count('info') + a.count('info') + b.count('info');
    const info = await request(`${gw.url}/testnet/v2/info`);
    expect(info.status).toBe(200);
    expect(info.headers.get('cache-status') ?? '').not.toContain('attested');
    expect(bad.count('info') + a.count('info') + b.count('info')).toBeLessThanOrEqual(infoBefore + 1);
  });
});

describe('broadcasts', () => {
  // A testnet transaction's first bytes (version 0x80 names the network), as a node takes it.
  const BODY = JSON.stringify({
    tx: Buffer.from([0x80, 0x80, 0, 0, 0, 0x04, 0x00, 1, 2, 3]).toString('hex'),
  });
  const TXID = JSON.stringify(`0x${'ab'.repeat(32)}`);
  const broadcast = (gw: RunningGateway) =>
    fetch(`${gw.url}/v2/transactions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: BODY,
    }).then(async (res) => ({ status: res.status, text: await res.text(), headers: res.headers }));
  const broadcasts = (n: FakeNode) => n.requests.filter((r) => r.path === '/v2/transactions');

  it('are never voted (one upstream, no tip), and skip an upstream sitting out', async () => {
    const [bad, a, b] = [await node(liar), await node(), await node()];
    for (const n of [bad, a, b]) {
      n.setRoute('POST', '/v2/transactions', {
        status: 200,
        body: TXID,
        headers: { 'content-type': 'application/json' },
      });
    }
    const gw = await gateway([bad, a, b], '2/3');
    const first = await broadcast(gw);
    expect(first.status).toBe(200);
    expect(first.text).toBe(TXID);
    expect(first.headers.get('cache-status') ?? '').not.toContain('attested');
    expect([bad, a, b].map((n) => broadcasts(n).length)).toEqual([1, 0, 0]);
    expect(broadcasts(bad)[0]!.query['tip']).toBeUndefined();

    for (let n = 1; n <= 3; n++) expect((await read(gw, n)).status).toBe(200);
    await expect.poll(async () => (await states(gw))['testnet'], { timeout: 5000 }).toBe('sitting-out');
    const second = await broadcast(gw);
    expect(second.status).toBe(200);
    expect([bad, a, b].map((n) => broadcasts(n).length)).toEqual([1, 1, 0]);
  });
});

describe('watched reads', () => {
  it('are voted: a liar’s value never reaches the stream', async () => {
    const [bad, a, b] = [await node(liar), await node(), await node()];
    const gw = await gateway([bad, a, b], '2/3');
    const sub = await request(`${gw.url}/subscriptions`, {
      body: {
        reads: [
          {
            contractAddress: TESTNET_ADDR,
            contractName: 'demo',
            functionName: 'get-n',
            functionArgs: [hex(Cl.uint(3))],
          },
        ],
      },
    });
    expect(sub.status, JSON.stringify(sub.body)).toBe(201);
    const sse = await openSse(`${gw.url}${sub.body.data.events}`);
    running.push({ close: async () => sse.close() });
    expect(sse.status).toBe(200);
    const first = await sse.next((e) => e.event === 'values');
    expect(first.json.values).toEqual([{ index: 0, value: '3', raw: hex(Cl.uint(3)) }]);
    // The liar was asked at the stream's block and lost.
    await bad.waitForRequests(1, { kind: 'call-read' });
    expect(tipsSeen(bad)).toContain(bad.block(100).indexBlockHash);
    await expect.poll(() => strikes(gw, 'testnet'), { timeout: 5000 }).toBeGreaterThanOrEqual(1);
  });
});

describe('the consensus log (UPSTREAM_CONSENSUS_LOG)', () => {
  it('gets one JSON line per vote decided with a dissenter, disputed, or low; none for a unanimous one', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cc-consensus-'));
    const file = path.join(dir, 'votes.jsonl');
    try {
      const arg = (call: ReadOnlyCall) => call.arguments[0];
      // Read u1: unanimous. u2: testnet lies. u3: three different values. u4: only testnet answers.
      const nodes = await Promise.all(
        [0, 1, 2].map((i) =>
          node((call) => {
            if (arg(call) === hex(Cl.uint(2)) && i === 0) return { okay: true, result: LIE };
            if (arg(call) === hex(Cl.uint(3))) return { okay: true, result: hex(Cl.uint(300 + i)) };
            if (arg(call) === hex(Cl.uint(4)) && i > 0) return { status: 503, body: 'busy' };
            return honest(call);
          }),
        ),
      );
      const gw = await gateway(nodes, '2/3', { UPSTREAM_CONSENSUS_LOG: file });
      expect((await read(gw, 1)).status).toBe(200);
      expect((await read(gw, 2)).body.data).toBe('2');
      expect((await read(gw, 3)).status).toBe(502);
      expect((await read(gw, 4)).status).toBe(502);

      const lines = () => {
        try {
          return readFileSync(file, 'utf8')
            .split('\n')
            .filter((l) => l !== '');
        } catch {
          return [];
        }
      };
      await expect.poll(() => lines().length, { timeout: 5000 }).toBe(3);
      // (A dissent is logged when its answer comes, which may be after the next vote's line.)
      const entries = lines().map((l) => JSON.parse(l));
      expect(entries.map((e) => e.outcome).sort()).toEqual(['agreed', 'disputed', 'low']);
      const byOutcome = (outcome: string) => entries.find((e) => e.outcome === outcome)!;
      const block = { height: 100, indexBlockHash: nodes[0]!.block(100).indexBlockHash };
      for (const e of entries) {
        expect(Object.keys(e)).toEqual(
          expect.arrayContaining(['block', 'network', 'outcome', 'participants', 'read', 'time']),
        );
        expect(Number.isNaN(Date.parse(e.time))).toBe(false);
        expect(e.network).toBe('testnet');
        expect(e.block).toMatchObject(block);
        expect(e.read).toMatchObject({ contract: `${TESTNET_ADDR}.demo`, function: 'get-n' });
        expect(typeof e.read.route).toBe('string');
        expect(e.read.argsSha256).toMatch(/^[0-9a-f]{64}$/);
        for (const p of e.participants) {
          expect(IDS).toContain(p.id);
          expect(typeof p.status).toBe('number');
        }
      }
      // Three different reads: three different argument hashes.
      expect(new Set(entries.map((e) => e.read.argsSha256)).size).toBe(3);
      // The dissenter is named, with the hash of its bytes.
      const dissent = byOutcome('agreed').participants.find((p: { id: string }) => p.id === 'testnet');
      expect(dissent).toMatchObject({ status: 200, sha256: sha256(bodyOf(LIE)) });
      const disputed = byOutcome('disputed').participants.map((p: { sha256: string }) => p.sha256);
      expect(new Set(disputed).size).toBe(3);
      // No answer's bytes in the log.
      const text = lines().join('\n');
      expect(text).not.toContain(LIE.slice(2));
      expect(text).not.toContain(hex(Cl.uint(301)).slice(2));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('start-up', () => {
  it.each([
    ['3/2', 3, 'k > n'],
    ['1/2', 3, 'k not more than n/2'],
    ['2/3', 2, 'n above the upstreams'],
    ['0/1', 3, 'k below 1'],
    ['two/three', 3, 'not k/n'],
  ])('refuses UPSTREAM_CONSENSUS_TESTNET=%s with %i upstreams (%s)', async (value, count) => {
    const nodes = await Promise.all(Array.from({ length: count }, () => node()));
    const env = consensusEnv(nodes, value);
    let gw: RunningGateway | undefined;
    const started = startGateway(env).then((g) => {
      gw = g;
      running.push(g);
      return g;
    });
    await expect(started).rejects.toThrow(/UPSTREAM_CONSENSUS_TESTNET/);
    expect(gw).toBeUndefined();
  });

  it('refuses UPSTREAM_CONSENSUS_MAINNET=2/3 with one mainnet upstream, and starts with 2/3 and 3/3 over three', async () => {
    const nodes = [await node(), await node(), await node()];
    await expect(
      startGateway(consensusEnv(nodes, '1/1', { UPSTREAM_CONSENSUS_MAINNET: '2/3' })).then((g) => {
        running.push(g);
        return g;
      }),
    ).rejects.toThrow(/UPSTREAM_CONSENSUS_MAINNET/);
    for (const value of ['2/3', '3/3', '2/2', '1/1']) {
      const gw = await startGateway(consensusEnv(nodes, value));
      running.push(gw);
      expect((await request(`${gw.url}/ready`)).status).toBe(200);
    }
  });
});
