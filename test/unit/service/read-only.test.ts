/**
 * The read-only service and the one judge: which tip an answer tells, whether a proven entry
 * stays a hit past its block bound, and what a replayed hit tells, are all the judge's verdict
 * (the observer's proof handed to it through CurrencyProof.forRead), never a second decision.
 */
import { describe, expect, it } from 'vitest';
import { ReadThroughCache } from '../../../src/cache/read-through.js';
import { MemoryStore } from '../../../src/cache/stores/memory.js';
import type { EntryDependencies } from '../../../src/chain/block-ledger.js';
import type { ChainTracker } from '../../../src/chain/tracker.js';
import { batchItemText, replayHeaders } from '../../../src/http/reply.js';
import { AbiRegistry } from '../../../src/service/abi-registry.js';
import { BatchService, type ItemOutcome } from '../../../src/service/batch.js';
import { CurrencyProof } from '../../../src/service/currency-proof.js';
import { type ReadOnlyRequest, ReadOnlyService } from '../../../src/service/read-only.js';
import type { NodeApi } from '../../../src/upstream/node-api.js';
import { MAINNET_ADDR, SAMPLE_ABI, TESTNET_ADDR } from '../../support/fixtures.js';

const RESULT = '0x0703'; // (ok true)
const CONTRACT = `${TESTNET_ADDR}.demo`;

/** A node at tip `state.reported`, a chain tracker at tip `state.tip`, an observer whose ledger the test sets. */
function setup(opts: { maxBlocks?: number | undefined; nodeMaxBlocks?: number } = {}) {
  const state = {
    tip: 10,
    reported: 10 as number | undefined,
    calls: 0,
    holds: true,
    generation: 0,
    kept: 0,
    analysed: [] as string[],
  };
  const abi = async () => ({ abi: SAMPLE_ABI, upstream: 'node' });
  const result = async () => {
    state.calls++;
    return { result: RESULT, tipHeight: state.reported, upstream: 'node' };
  };
  // The node is asked through whichever method the client offers.
  const node = {
    callReadOnly: result,
    getContractInterface: abi,
    send: (_endpoint: unknown, call: { read?: string }) => (call.read === 'abi' ? abi() : result()),
  } as unknown as NodeApi;
  const chain = {
    known: () => ({ height: state.tip, learnedAt: 0 }),
    view: () => ({ height: state.tip, firstLearnedAt: () => undefined }),
    heightOfBlock: () => undefined,
  } as unknown as ChainTracker;
  const store = new MemoryStore({ maxEntries: 100 });
  const cache = new ReadThroughCache(store);
  const service = new ReadOnlyService(cache, new AbiRegistry(cache, node), node, {
    chain,
    maxBlocks: opts.maxBlocks,
    nodeMaxBlocks: opts.nodeMaxBlocks,
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
      current: () => state.holds,
      generation: () => state.generation,
      analysisVersion: () => 0,
      learnedSince: () => [],
      onKeptCurrent: () => state.kept++,
    }),
  );
  return { state, service, store };
}

const call = (over: Partial<ReadOnlyRequest> = {}): ReadOnlyRequest => ({
  contractAddress: TESTNET_ADDR,
  contractName: 'demo',
  functionName: 'get-info',
  functionArgs: [],
  ...over,
});
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('ReadOnlyService and the judge', () => {
  it('a first answer starts the analysis of what the call depends on', async () => {
    const { state, service } = setup({ maxBlocks: 0 });
    const first = await service.answer(call());
    expect(first.cache?.outcome).toBe('miss');
    expect(first.tipHeight).toBe(10);
    expect(state.analysed).toEqual([`${CONTRACT}::get-info`]);
  });

  it('past its bound, an entry the proof holds is a hit current at the tip now, counted once', async () => {
    const { state, service } = setup({ maxBlocks: 0 });
    await service.answer(call());
    await settle();
    state.tip = 12;
    const hit = await service.answer(call());
    expect(hit.cache?.outcome).toBe('hit');
    expect(hit.tipHeight).toBe(12);
    expect(state.kept).toBe(1);
    expect(state.calls).toBe(1);
    // Once the ledger no longer proves it, the same entry is refetched at the new tip.
    state.holds = false;
    state.generation++;
    state.reported = 12;
    const refetched = await service.answer(call());
    expect(refetched.cache).toMatchObject({ outcome: 'miss', stale: 'refetch' });
    expect(refetched.tipHeight).toBe(12);
    expect(state.calls).toBe(2);
  });

  it('within its bound, a hit tells the tip the proof carries it to, else the height it was read at', async () => {
    const { state, service } = setup({ maxBlocks: 5 });
    await service.answer(call());
    await settle();
    state.tip = 13;
    expect((await service.answer(call())).tipHeight).toBe(13);
    state.holds = false;
    state.generation++;
    const hit = await service.answer(call());
    expect(hit.cache?.outcome).toBe('hit');
    expect(hit.tipHeight).toBe(10);
    // The bound kept it fresh both times, never the proof.
    expect(state.kept).toBe(0);
  });

  it('with no block bound at all, a proven hit still tells the tip it is current at', async () => {
    const { state, service } = setup({ maxBlocks: undefined });
    await service.answer(call());
    await settle();
    state.tip = 20;
    expect((await service.answer(call())).tipHeight).toBe(20);
    // A request's own bound too.
    expect((await service.answer(call({ cacheControl: { maxBlocks: 0 } }))).tipHeight).toBe(20);
  });

  it('an entry whose node reported no height is never proven: it tells the height it was read at', async () => {
    const { state, service } = setup({ maxBlocks: 5 });
    state.reported = undefined;
    await service.answer(call());
    await settle();
    state.tip = 12;
    const hit = await service.answer(call());
    expect(hit.cache?.outcome).toBe('hit');
    expect(hit.tipHeight).toBe(10);
  });

  it('a call of another network than the observer follows gets no proof', async () => {
    const { state, service } = setup({ maxBlocks: 5 });
    const mainnet = call({ contractAddress: MAINNET_ADDR });
    await service.answer(mainnet);
    await settle();
    state.tip = 12;
    expect((await service.answer(mainnet)).tipHeight).toBe(10);
    expect(state.analysed).toEqual([]);
  });

  it("the node-shaped answer (call-read, NODE_MAX_BLOCKS) tells its verdict's tip as well", async () => {
    const { state, service } = setup({ maxBlocks: undefined, nodeMaxBlocks: 0 });
    await service.nodeAnswer(call());
    await settle();
    state.tip = 11;
    const hit = await service.nodeAnswer(call());
    expect(hit.cache?.outcome).toBe('hit');
    expect(hit.tipHeight).toBe(11);
    expect(state.kept).toBe(1);
  });

  it("a batch item's meta tells the tip of its own verdict, as the single endpoint does", async () => {
    const { state, service } = setup({ maxBlocks: 0 });
    const batch = new BatchService(service, {
      currentBlock: () => Promise.reject(new Error('no block needed')),
    });
    // The HTTP layer renders each item's meta from the values the service gives it.
    const shell = {
      validate: (c: unknown) => c as ReadOnlyRequest,
      item: (outcome: ItemOutcome) => {
        if ('error' in outcome) throw outcome.error;
        return batchItemText(outcome);
      },
    };
    await service.answer(call());
    await settle();
    state.tip = 12;
    const answer = await batch.answer({ calls: [call(), call({ contractAddress: MAINNET_ADDR })] }, shell);
    const [proven, other] = (JSON.parse(answer.body) as { data: { results: { meta: unknown }[] } }).data
      .results;
    expect(proven?.meta).toMatchObject({ status: 200, cacheStatus: 'clarity-cache; hit', tipHeight: 12 });
    // No proof on mainnet: read now, at the tip it was read at.
    expect(other?.meta).toMatchObject({ status: 200, tipHeight: 10 });
  });

  it('each replay of a proven hit tells the tip of the verdict that let it through', async () => {
    const { state, service } = setup({ maxBlocks: 0 });
    await service.answer(call());
    await settle();
    state.tip = 12;
    const hit = await service.answer(call());
    const reuse = hit.reuse!;
    const headers = replayHeaders(reuse)!;
    const tipTold = () => {
      const pairs = headers(Date.now());
      return pairs[pairs.indexOf('x-canonical-stacks-tip-height') + 1];
    };
    expect(reuse.valid(Date.now())).toBe(true);
    expect(tipTold()).toBe('12');
    state.tip = 14;
    expect(reuse.valid(Date.now())).toBe(true);
    expect(tipTold()).toBe('14');
    // No longer proven past its bound: the replay stops, the full path decides.
    state.holds = false;
    state.generation++;
    expect(reuse.valid(Date.now())).toBe(false);
  });

  it('a replay of an unproven hit keeps the tip among its fixed headers', async () => {
    const { service } = setup({ maxBlocks: undefined });
    const mainnet = call({ contractAddress: MAINNET_ADDR });
    await service.answer(mainnet);
    const reuse = (await service.answer(mainnet)).reuse!;
    expect(reuse.valid(Date.now())).toBe(true);
    expect(replayHeaders(reuse)!(Date.now())).not.toContain('x-canonical-stacks-tip-height');
  });
});
