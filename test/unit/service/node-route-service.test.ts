/**
 * The node-route service and the one judge: a latest-state answer is kept current by the same
 * proof policy as read-only calls (CurrencyProof.forRead), and the tip it tells is the judge's
 * verdict.
 */
import { describe, expect, it } from 'vitest';
import { ReadThroughCache } from '../../../src/cache/read-through.js';
import { MemoryStore } from '../../../src/cache/stores/memory.js';
import type { EntryDependencies } from '../../../src/chain/block-ledger.js';
import type { ChainTracker } from '../../../src/chain/tracker.js';
import { CurrencyProof } from '../../../src/service/currency-proof.js';
import { type NodeRouteRequest, NodeRouteService } from '../../../src/service/node-route-service.js';
import { NODE_ENDPOINTS } from '../../../src/upstream/endpoints.js';
import type { NodeApi } from '../../../src/upstream/node-api.js';
import { MAINNET_ADDR, TESTNET_ADDR } from '../../support/fixtures.js';

const route = (name: string) => NODE_ENDPOINTS.find((e) => e.name === name)!;
const CONTRACT = `${TESTNET_ADDR}.demo`;
const HASH = 'ab'.repeat(32);

/** A node at tip `state.reported`, a chain tracker at `state.tip`, an observer whose ledger the test sets. */
function setup(maxBlocks = 0) {
  const state = {
    tip: 10,
    reported: 10 as number | undefined,
    sent: 0,
    holds: true,
    generation: 0,
    kept: 0,
    proofs: 0,
    analysed: [] as string[],
  };
  const node = {
    send: async () => {
      state.sent++;
      return {
        status: 200,
        contentType: 'application/json',
        body: `{"data":"0x0100000000000000000000000000000001","n":${state.sent}}`,
        tipHeight: state.reported,
        upstream: 'node',
      };
    },
  } as unknown as Required<Pick<NodeApi, 'send'>>;
  const chain = {
    known: () => ({ height: state.tip, learnedAt: 0 }),
    view: () => ({ height: state.tip, firstLearnedAt: () => undefined }),
  } as unknown as ChainTracker;
  const service = new NodeRouteService(new ReadThroughCache(new MemoryStore({ maxEntries: 100 })), node, {
    chain,
    maxBlocks,
    defaultNetwork: 'testnet',
    timedMs: 1_000,
    staleWhileRevalidateS: 0,
    staleIfErrorS: 0,
    staleMaxS: 0,
  });
  service.useProof(
    new CurrencyProof({
      network: 'testnet',
      dependsOn: async (contractId, fn) => {
        state.analysed.push(`${contractId}::${fn}`);
        return new Set([contractId]) as EntryDependencies;
      },
      current: () => {
        state.proofs++;
        return state.holds;
      },
      generation: () => state.generation,
      analysisVersion: () => 0,
      learnedSince: () => [],
      onKeptCurrent: () => state.kept++,
    }),
  );
  return { state, service };
}

const dataVar = (query: Record<string, string> = {}): NodeRouteRequest => ({
  endpoint: route('data-var'),
  params: { address: TESTNET_ADDR, contract: 'demo', name: 'counter' },
  query,
});
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('NodeRouteService and the judge', () => {
  it('past NODE_MAX_BLOCKS, an answer the proof holds is a hit current at the tip now', async () => {
    const { state, service } = setup(0);
    const first = await service.answer(dataVar());
    expect(first.cache?.outcome).toBe('miss');
    expect(first.tipHeight).toBe(10);
    state.tip = 12;
    const hit = await service.answer(dataVar());
    expect(hit.cache?.outcome).toBe('hit');
    expect(hit.tipHeight).toBe(12);
    expect(hit.body).toBe(first.body);
    expect(state.kept).toBe(1);
    expect(state.sent).toBe(1);
  });

  it('no longer proven, the answer is fetched again and tells the tip it was read at', async () => {
    const { state, service } = setup(0);
    await service.answer(dataVar());
    state.tip = 12;
    state.reported = 12;
    state.holds = false;
    const again = await service.answer(dataVar());
    expect(again.cache).toMatchObject({ outcome: 'miss', stale: 'refetch' });
    expect(again.tipHeight).toBe(12);
    expect(state.sent).toBe(2);
  });

  it('within its bound, a hit tells the tip the proof carries it to, else the height it was read at', async () => {
    const { state, service } = setup(5);
    await service.answer(dataVar());
    state.tip = 13;
    expect((await service.answer(dataVar())).tipHeight).toBe(13);
    state.holds = false;
    state.generation++;
    const hit = await service.answer(dataVar());
    expect(hit.cache?.outcome).toBe('hit');
    expect(hit.tipHeight).toBe(10);
    expect(state.kept).toBe(0);
  });

  it('a route proven by its function depends on what the function reaches (the analysis starts at once)', async () => {
    const { state, service } = setup(0);
    const req: NodeRouteRequest = {
      endpoint: route('fast-call-read'),
      params: { address: TESTNET_ADDR, contract: 'demo', function: 'get-info' },
      query: {},
      body: {
        data: '{"sender":"ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM","arguments":[]}',
        contentType: 'application/json',
      },
    };
    await service.answer(req);
    expect(state.analysed).toEqual([`${CONTRACT}::get-info`]);
    await settle();
    state.tip = 11;
    const hit = await service.answer(req);
    expect(hit.cache?.outcome).toBe('hit');
    expect(hit.tipHeight).toBe(11);
  });

  it('no proof for a pinned read, a route with nothing to prove it by, or another network', async () => {
    const { state, service } = setup(0);
    await service.answer(dataVar({ tip: HASH }));
    const account: NodeRouteRequest = {
      endpoint: route('account'),
      params: { principal: TESTNET_ADDR },
      query: {},
    };
    await service.answer(account);
    // The observer follows testnet: a mainnet read of the same route gets no proof.
    const mainnet = { ...dataVar(), params: { ...dataVar().params, address: MAINNET_ADDR } };
    await service.answer(mainnet);
    state.tip = 12;
    // A pinned answer never changes: a hit at any tip, telling the height it was read at.
    const pinned = await service.answer(dataVar({ tip: HASH }));
    expect(pinned.cache?.outcome).toBe('hit');
    expect(pinned.tipHeight).toBe(10);
    // An account is always read at the current tip: refetched.
    expect((await service.answer(account)).cache).toMatchObject({ outcome: 'miss', stale: 'refetch' });
    expect((await service.answer(mainnet)).cache).toMatchObject({ outcome: 'miss', stale: 'refetch' });
    expect(state.proofs).toBe(0);
    expect(state.analysed).toEqual([]);
    expect(state.kept).toBe(0);
  });
});
