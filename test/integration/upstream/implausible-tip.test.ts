/**
 * One upstream poisons the tip, another is honest (docs/freshness.md, "Tip heights are believed
 * only as far as they prove"): over real HTTP, two fake nodes behind one gateway, the poisoner
 * first in preference. Whatever the lie and whenever it starts, a read answers the honest
 * node's value at the honest node's tip, never a 502 and never the poisoner's state.
 */
import { Cl } from '@stacks/transactions';
import { afterEach, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { GET_N_ABI, hex, TESTNET_ADDR } from '../../support/fixtures.js';
import {
  type JsonResponse,
  type RunningGateway,
  request,
  startGateway,
  testEnv,
} from '../../support/gateway.js';

/** What the poisoner answers to every read: its (old) state, never the argument. */
const POISONED = hex(Cl.uint(666));

const running: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const r of running.splice(0).reverse()) await r.close();
});

/** The honest node: demo::get-n answers its argument. */
async function honestNode(tipHeight: number): Promise<FakeNode> {
  const n = await startFakeNode({ tipHeight });
  n.setAbi(TESTNET_ADDR, 'demo', GET_N_ABI);
  n.setReadOnly(TESTNET_ADDR, 'demo', 'get-n', ({ arguments: args }) => ({ okay: true, result: args[0]! }));
  running.push(n);
  return n;
}

/** The poisoner: the same contract, answering u666 whatever is asked. */
async function poisoner(tipHeight: number): Promise<FakeNode> {
  const n = await startFakeNode({ tipHeight });
  n.setAbi(TESTNET_ADDR, 'demo', GET_N_ABI);
  n.setReadOnly(TESTNET_ADDR, 'demo', 'get-n', { okay: true, result: POISONED });
  running.push(n);
  return n;
}

/** A gateway whose testnet upstreams are poisoner then honest (its mainnet: the honest node). */
async function gateway(
  nodes: readonly FakeNode[],
  env: Record<string, string> = {},
): Promise<RunningGateway> {
  const gw = await startGateway(
    testEnv(nodes[1]!.url, {
      STACKS_API_URL_TESTNET: nodes.map((n) => n.url).join(','),
      CHAIN_TIP_MAX_ADVANCE: '30',
      ...env,
    }),
  );
  running.push(gw);
  return gw;
}

function read(gw: RunningGateway, n: number): Promise<JsonResponse> {
  return request(`${gw.url}/contract-calls/read-only/${TESTNET_ADDR}/demo/get-n`, {
    body: { functionArgs: [hex(Cl.uint(n))] },
  });
}

/** Reads 1..count, each a miss, expecting each to be the honest node's answer at its tip. */
async function expectHonest(gw: RunningGateway, honest: FakeNode, count: number): Promise<void> {
  for (let n = 1; n <= count; n++) {
    const res = await read(gw, n);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toBe(String(n));
    expect(res.headers.get('x-canonical-stacks-tip-height')).toBe(String(honest.tipHeight));
  }
  expect(honest.count('call-read')).toBe(count);
}

async function testnetStates(gw: RunningGateway): Promise<string[]> {
  const res = await request(`${gw.url}/ready`);
  return res.body.data.checks.upstream.testnet.upstreams.map((u: { state: string }) => u.state);
}

describe('a poisoning upstream beside an honest one', () => {
  it('fails over from a tip header no number can hold (301 digits), from the very first request', async () => {
    const bad = await poisoner(100);
    bad.tipHeader(`1${'0'.repeat(300)}`);
    const honest = await honestNode(100);
    const gw = await gateway([bad, honest]);
    // No start-up round: the first read learns the first tip itself.
    await expectHonest(gw, honest, 3);
    expect(await testnetStates(gw)).toEqual(['implausible', 'ok']);
  });

  it('fails over from a 301-digit tip header even with UPSTREAM_RETRIES=0: a discarded answer is no retry', async () => {
    const bad = await poisoner(100);
    bad.tipHeader(`1${'0'.repeat(300)}`);
    const honest = await honestNode(100);
    const gw = await gateway([bad, honest], { UPSTREAM_RETRIES: '0' });
    await expectHonest(gw, honest, 3);
    // The poisoner was asked once (the ABI), then left alone for the breaker cooldown.
    expect(bad.total).toBe(1);
  });

  it('fails over from a 301-digit tip header after the start-up round', async () => {
    const bad = await poisoner(100);
    bad.tipHeader(`1${'0'.repeat(300)}`);
    const honest = await honestNode(100);
    const gw = await gateway([bad, honest]);
    const failures = await gw.gateway.startupRound?.();
    expect(failures?.map((f) => f.upstream.id)).toEqual(['testnet']);
    await expectHonest(gw, honest, 3);
    expect(gw.gateway.chain.known('testnet')?.height).toBe(100);
  });

  it('is not believed when it lies within range at the first /v2/info round, and makes nobody lagging', async () => {
    const bad = await poisoner(1_000_000);
    const honest = await honestNode(100);
    const gw = await gateway([bad, honest]);
    // The round asks both: the lower middle of two is the honest 100.
    await gw.gateway.startupRound?.();
    expect(gw.gateway.chain.known('testnet')?.height).toBe(100);
    // The lie came before anything was believed: it must not make the honest node lagging.
    expect(await testnetStates(gw)).not.toContain('lagging');
    await expectHonest(gw, honest, 3);
    expect(gw.gateway.chain.known('testnet')?.height).toBe(100);
    expect(await testnetStates(gw)).toEqual(['implausible', 'ok']);
  });

  it('is not believed when it is 10 blocks behind and claims a huge tip in its headers', async () => {
    // Its /v2/info says 90 (its real state), every header claims a height near 2^31.
    const bad = await poisoner(90);
    bad.tipHeader('2000000000');
    const honest = await honestNode(100);
    const gw = await gateway([bad, honest]);
    await gw.gateway.startupRound?.();
    // The lower middle of the two bodies (90 and 100): the honest node is within reach of it.
    expect(gw.gateway.chain.known('testnet')?.height).toBe(90);
    await expectHonest(gw, honest, 3);
    expect(gw.gateway.chain.known('testnet')?.height).toBe(100);
    expect(await testnetStates(gw)).toEqual(['implausible', 'ok']);
  });

  it('fails a tip refresh over to the honest node when a /v2/info body claims a huge tip', async () => {
    // The poisoner's header stays at the tip; only its /v2/info body lies.
    const bad = await poisoner(100);
    const honest = await honestNode(100);
    const gw = await gateway([bad, honest]);
    await gw.gateway.startupRound?.();
    bad.setTipHeight(1_000_000);
    bad.tipHeader('100');
    honest.mine(5);
    const before = honest.count('info');
    const block = await gw.gateway.chain.currentBlock('testnet', { renew: true });
    expect(block.height).toBe(105);
    expect(honest.count('info')).toBe(before + 1);
    expect(gw.gateway.chain.known('testnet')?.height).toBe(105);
  });
});
