/**
 * BatchService over the real read-only service and read-through cache (in memory), with a test
 * double of the node that records every call it is asked and a shell that stands in for the
 * HTTP layer's per-call validation and item rendering. What is checked is what a client of the
 * batch endpoint relies on: each item is its own call's answer in its own place, one item's
 * failure stays that item's, identical items cost one upstream call, and "consistent" reads
 * every item at one block and says which.
 */

import { Value } from '@sinclair/typebox/value';
import { Cl } from '@stacks/transactions';
import { describe, expect, it } from 'vitest';
import { fail } from '../../../src/api/envelope.js';
import { batchBody } from '../../../src/api/schemas.js';
import { ReadThroughCache } from '../../../src/cache/read-through.js';
import { MemoryStore } from '../../../src/cache/stores/memory.js';
import type { ChainTracker } from '../../../src/chain/tracker.js';
import { GatewayError } from '../../../src/errors.js';
import { toGatewayError } from '../../../src/http/error-handler.js';
import { batchItemText } from '../../../src/http/reply.js';
import { AbiRegistry } from '../../../src/service/abi-registry.js';
import { BatchService, type Block, type CallShell, type TipSource } from '../../../src/service/batch.js';
import { type ReadOnlyRequest, ReadOnlyService } from '../../../src/service/read-only.js';
import type { NodeApi, RequestContext } from '../../../src/upstream/node-api.js';
import { hex, MAINNET_ADDR, OTHER_ADDR, SAMPLE_ABI, TESTNET_ADDR } from '../../support/fixtures.js';

const BLOCK_A = 'aa'.repeat(32);
const BLOCK_B = 'bb'.repeat(32);
const BLOCK_C = 'cc'.repeat(32);
/** Heights the chain stub knows the test's blocks at (a pinned read's meta tells it). */
const HEIGHTS: Record<string, number> = { [BLOCK_A]: 41, [BLOCK_B]: 42, [BLOCK_C]: 43 };

const INFO = hex(Cl.ok(Cl.bool(true)));
const FAILS = hex(Cl.error(Cl.uint(7)));
const OTHER_BALANCE = hex(Cl.ok(Cl.uint(5)));
const ZERO_BALANCE = hex(Cl.ok(Cl.uint(0)));

/** One call-read the node was asked: which function, of which contract, at which block. */
interface NodeCall {
  readonly contract: string;
  readonly fn: string;
  readonly tip: string | undefined;
  readonly rc: RequestContext | undefined;
}

interface SendCall {
  read?: string;
  params?: { address: string; contract: string; function: string };
  query?: { tip?: string };
  body?: string;
}

/**
 * The node double: the sample ABI for every contract; get-info answers (ok true), fails
 * answers (err u7), get-balance (ok u5) for OTHER_ADDR and (ok u0) for anyone else. A contract
 * named "broken" fails upstream; blocks in `unknownBlocks` are ones the node does not know;
 * a function in `slow` answers only after the others (so completion order is not batch order).
 */
function setup() {
  const state = {
    calls: [] as NodeCall[],
    unknownBlocks: new Set<string>(),
    slow: new Set<string>(),
  };
  const send = async (_endpoint: unknown, call: SendCall, rc?: RequestContext) => {
    if (call.read === 'abi') return { abi: SAMPLE_ABI, upstream: 'node' };
    const { address, contract, function: fn } = call.params!;
    const tip = call.query?.tip;
    state.calls.push({ contract: `${address}.${contract}`, fn, tip, rc });
    if (state.slow.has(fn)) await new Promise((resolve) => setTimeout(resolve, 30));
    if (contract === 'broken') {
      throw new GatewayError('UPSTREAM_API_ERROR', 'the node answered 500', { retryable: false });
    }
    if (tip !== undefined && state.unknownBlocks.has(tip)) {
      throw new GatewayError(
        'UPSTREAM_API_ERROR',
        `the node does not know block ${tip}`,
        { tip, retryable: false },
        { variant: 'unknown-block' },
      );
    }
    const args = (JSON.parse(call.body ?? '{}') as { arguments: string[] }).arguments;
    const result =
      fn === 'fails'
        ? FAILS
        : fn === 'get-balance'
          ? args[0] === hex(Cl.principal(OTHER_ADDR))
            ? OTHER_BALANCE
            : ZERO_BALANCE
          : INFO;
    return { result, tipHeight: tip === undefined ? 10 : undefined, upstream: 'node' };
  };
  const node = { send } as unknown as NodeApi;
  const chain = {
    known: () => ({ height: 10, learnedAt: 0 }),
    view: () => ({ height: 10, firstLearnedAt: () => undefined }),
    heightOfBlock: (hash: string) => HEIGHTS[hash],
  } as unknown as ChainTracker;
  const cache = new ReadThroughCache(new MemoryStore({ maxEntries: 100 }));
  const readOnly = new ReadOnlyService(cache, new AbiRegistry(cache, node), node, {
    chain,
    maxBlocks: undefined,
    staleWhileRevalidateS: 0,
    staleIfErrorS: 0,
    staleMaxS: 0,
  });
  return { state, readOnly, callReads: () => state.calls.length };
}

/**
 * A tip source that names the blocks of `blocks` in turn, one per ask (the chain moving on
 * between asks), and records each ask.
 */
function tipSource(blocks: readonly Block[]) {
  const asks: Array<{ network: string; renew: boolean }> = [];
  const source: TipSource = {
    currentBlock: async (network, opts) => {
      asks.push({ network, renew: opts?.renew === true });
      const block = blocks[Math.min(asks.length - 1, blocks.length - 1)];
      if (block === undefined) throw new GatewayError('UPSTREAM_API_ERROR', '/v2/info failed', {});
      return block;
    },
  };
  return { source, asks };
}

const NO_TIPS: TipSource = {
  currentBlock: () => Promise.reject(new Error('this batch should need no block')),
};

/**
 * The HTTP layer's part, reduced: a call without a string functionName is refused as the
 * body schema would refuse it; an item is the single endpoint's envelope with its meta.
 */
function shell(context?: RequestContext) {
  const validated: unknown[] = [];
  const s: CallShell = {
    context,
    validate(call) {
      validated.push(call);
      if (typeof (call as { functionName?: unknown })?.functionName !== 'string') {
        throw new GatewayError('VALIDATION_ERROR', "body must have required property 'functionName'", {
          field: 'functionName',
        });
      }
      return call as ReadOnlyRequest;
    },
    item(outcome) {
      if ('answer' in outcome) return batchItemText(outcome);
      const error = toGatewayError(outcome.error);
      const envelope = fail({
        id: 'err_test',
        code: error.code,
        message: error.message,
        ...(error.details === undefined ? {} : { details: error.details }),
      });
      return batchItemText({ error, envelope: JSON.stringify(envelope) });
    },
  };
  return { shell: s, validated };
}

interface Item {
  success: boolean;
  data?: unknown;
  error?: { code: string; message: string; details?: Record<string, unknown> };
  meta: { status: number; cacheStatus: string | null; tipHeight: number | null };
}
interface BatchAnswer {
  success: boolean;
  data: { results: Item[]; tip?: Block | null };
}

const parse = (body: string) => JSON.parse(body) as BatchAnswer;

const call = (functionName: string, over: Record<string, unknown> = {}) => ({
  contractAddress: TESTNET_ADDR,
  contractName: 'demo',
  functionName,
  functionArgs: [],
  ...over,
});
const balanceOf = (who: string, over: Record<string, unknown> = {}) =>
  call('get-balance', {
    functionArgs: [{ type: 'principal', value: who }],
    strictJsonCompat: false,
    ...over,
  });

describe('BatchService', () => {
  it("answers the items in the batch's order, each with its own outcome, one failure failing no other", async () => {
    const { state, readOnly } = setup();
    // The first item's upstream call finishes last: the order must be the batch's, not completion's.
    state.slow.add('get-info');
    const { shell: s } = shell();
    const answer = await new BatchService(readOnly, NO_TIPS).answer(
      {
        calls: [
          call('get-info'),
          call('fails'),
          { contractAddress: TESTNET_ADDR, contractName: 'demo' },
          balanceOf(OTHER_ADDR),
          call('nope'),
          balanceOf(TESTNET_ADDR),
          call('get-balance', { functionArgs: [{ type: 'uint', value: '1' }] }),
        ],
      },
      s,
    );
    const { success, data } = parse(answer.body);
    expect(success).toBe(true);
    expect(data.tip).toBeUndefined();
    const results = data.results;
    expect(results.map((r) => r.meta.status)).toEqual([200, 422, 400, 200, 400, 200, 400]);
    expect(results.map((r) => r.error?.code)).toEqual([
      undefined,
      'CONTRACT_ERROR',
      'VALIDATION_ERROR',
      undefined,
      'INVALID_FUNCTION',
      undefined,
      'INVALID_ARGUMENTS',
    ]);
    // Each success carries the value of its own call (the two balances differ by argument).
    expect(results[0]?.data).toEqual(readOnly.render(INFO, {}));
    expect(results[3]?.data).toBe(5);
    expect(results[5]?.data).toBe(0);
    // The Clarity error is the value the function returned, not a generic failure.
    expect(results[1]?.error?.details?.['value']).toEqual(readOnly.render(hex(Cl.uint(7)), {}));
    expect(results[2]?.error?.message).toContain('functionName');
    // Refused items never reached the node; the rest did, once each.
    expect(state.calls.map((c) => c.fn).sort()).toEqual(['fails', 'get-balance', 'get-balance', 'get-info']);
  });

  it("an upstream failure of one item is that item's error; the other items are answered", async () => {
    const { readOnly } = setup();
    const { shell: s } = shell();
    const answer = await new BatchService(readOnly, NO_TIPS).answer(
      { calls: [call('get-info'), call('get-info', { contractName: 'broken' }), balanceOf(OTHER_ADDR)] },
      s,
    );
    const [first, broken, last] = parse(answer.body).data.results;
    expect(first?.meta.status).toBe(200);
    expect(broken?.success).toBe(false);
    expect(broken?.error?.code).toBe('UPSTREAM_API_ERROR');
    expect(broken?.meta.status).toBe(502);
    expect(last?.data).toBe(5);
  });

  it('identical items in one batch cost the upstream one call and get the same answer', async () => {
    const { state, readOnly, callReads } = setup();
    state.slow.add('get-balance');
    const { shell: s } = shell();
    const answer = await new BatchService(readOnly, NO_TIPS).answer(
      {
        calls: [balanceOf(OTHER_ADDR), call('get-info'), balanceOf(OTHER_ADDR), balanceOf(OTHER_ADDR)],
      },
      s,
    );
    const results = parse(answer.body).data.results;
    expect(results.map((r) => r.data)).toEqual([5, readOnly.render(INFO, {}), 5, 5]);
    // Two distinct calls: two upstream calls, however many times each is repeated.
    expect(callReads()).toBe(2);
  });

  it('identical items that bust the cache still share one upstream call', async () => {
    const { state, readOnly, callReads } = setup();
    state.slow.add('get-info');
    const { shell: s } = shell();
    const busting = call('get-info', { cacheControl: { bustCache: true } });
    const answer = await new BatchService(readOnly, NO_TIPS).answer(
      { calls: [busting, busting, busting] },
      s,
    );
    expect(parse(answer.body).data.results.map((r) => r.meta.status)).toEqual([200, 200, 200]);
    expect(callReads()).toBe(1);
  });

  it('items the cache answers report a hit, beside the misses of the same batch', async () => {
    const { readOnly, callReads } = setup();
    const { shell: s } = shell();
    const batch = new BatchService(readOnly, NO_TIPS);
    const first = parse((await batch.answer({ calls: [call('get-info')] }, s)).body).data.results;
    expect(first[0]?.meta.cacheStatus).toBe('clarity-cache; fwd=miss; stored');
    expect(callReads()).toBe(1);

    const second = parse((await batch.answer({ calls: [balanceOf(OTHER_ADDR), call('get-info')] }, s)).body)
      .data.results;
    expect(second.map((r) => r.meta.cacheStatus)).toEqual([
      'clarity-cache; fwd=miss; stored',
      'clarity-cache; hit',
    ]);
    // The hit is the stored answer, and only the new call went upstream.
    expect(second[1]?.data).toEqual(first[0]?.data);
    expect(second[1]?.meta.tipHeight).toBe(10);
    expect(callReads()).toBe(2);
  });

  it('"consistent" reads every item at the one block it learns once, and reports that block', async () => {
    const { state, readOnly } = setup();
    // The chain moves on after the first ask: a second ask would pin later items elsewhere.
    const { source, asks } = tipSource([
      { height: 41, indexBlockHash: BLOCK_A },
      { height: 42, indexBlockHash: BLOCK_B },
    ]);
    const { shell: s } = shell();
    const answer = await new BatchService(readOnly, source).answer(
      {
        tip: 'consistent',
        calls: [call('get-info'), balanceOf(OTHER_ADDR), call('fails'), balanceOf(TESTNET_ADDR)],
      },
      s,
    );
    const { data } = parse(answer.body);
    expect(asks).toEqual([{ network: 'testnet', renew: false }]);
    expect(data.tip).toEqual({ height: 41, indexBlockHash: BLOCK_A });
    expect(state.calls.map((c) => c.tip)).toEqual([BLOCK_A, BLOCK_A, BLOCK_A, BLOCK_A]);
    // Each item's meta tells the height of that block, a Clarity error's included.
    expect(data.results.map((r) => r.meta.tipHeight)).toEqual([41, 41, 41, 41]);
    expect(data.results.map((r) => r.meta.status)).toEqual([200, 200, 422, 200]);
  });

  it('"consistent" leaves an item with its own tip at that tip, and asks for no block when none needs one', async () => {
    const { state, readOnly } = setup();
    const { source, asks } = tipSource([{ height: 41, indexBlockHash: BLOCK_A }]);
    const { shell: s } = shell();
    const batch = new BatchService(readOnly, source);
    const answer = await batch.answer(
      { tip: 'consistent', calls: [call('get-info'), call('get-info', { tip: BLOCK_C })] },
      s,
    );
    const results = parse(answer.body).data.results;
    expect(state.calls.map((c) => c.tip).sort()).toEqual([BLOCK_A, BLOCK_C]);
    expect(results.map((r) => r.meta.tipHeight)).toEqual([41, 43]);
    expect(asks).toHaveLength(1);

    // Every item brings its own tip (or is refused): no /v2/info, and no block to report.
    const own = parse(
      (await batch.answer({ tip: 'consistent', calls: [balanceOf(OTHER_ADDR, { tip: BLOCK_B }), {}] }, s))
        .body,
    ).data;
    expect(asks).toHaveLength(1);
    expect(own.tip).toBeNull();
    expect(own.results.map((r) => r.meta.status)).toEqual([200, 400]);
  });

  it('"consistent" reads again at the renewed tip the items whose block the node no longer knows', async () => {
    const { state, readOnly } = setup();
    // /v2/info named block A, which the node then does not know (a reorg): B is the tip now.
    state.unknownBlocks.add(BLOCK_A);
    const { source, asks } = tipSource([
      { height: 41, indexBlockHash: BLOCK_A },
      { height: 42, indexBlockHash: BLOCK_B },
    ]);
    const { shell: s } = shell();
    const answer = await new BatchService(readOnly, source).answer(
      { tip: 'consistent', calls: [call('get-info'), balanceOf(OTHER_ADDR)] },
      s,
    );
    const { data } = parse(answer.body);
    expect(asks).toEqual([
      { network: 'testnet', renew: false },
      { network: 'testnet', renew: true },
    ]);
    expect(data.tip).toEqual({ height: 42, indexBlockHash: BLOCK_B });
    expect(data.results.map((r) => r.meta.status)).toEqual([200, 200]);
    expect(data.results[1]?.data).toBe(5);
    expect(data.results.map((r) => r.meta.tipHeight)).toEqual([42, 42]);
    expect(state.calls.filter((c) => c.tip === BLOCK_B)).toHaveLength(2);
  });

  it('"consistent" refuses a batch on two networks, and fails when the tip cannot be learned, before any call', async () => {
    const { readOnly, callReads } = setup();
    const { shell: s } = shell();
    const { source, asks } = tipSource([{ height: 41, indexBlockHash: BLOCK_A }]);
    const mixed = new BatchService(readOnly, source).answer(
      { tip: 'consistent', calls: [call('get-info'), call('get-info', { contractAddress: MAINNET_ADDR })] },
      s,
    );
    await expect(mixed).rejects.toMatchObject({ code: 'VALIDATION_ERROR', details: { tip: 'consistent' } });
    expect(asks).toEqual([]);

    const { source: down } = tipSource([]);
    const unpinned = new BatchService(readOnly, down).answer(
      { tip: 'consistent', calls: [call('get-info')] },
      s,
    );
    await expect(unpinned).rejects.toMatchObject({ code: 'UPSTREAM_API_ERROR', message: '/v2/info failed' });
    expect(callReads()).toBe(0);
  });

  it('a given index block hash pins every item without a tip of its own; a malformed one refuses the batch', async () => {
    const { state, readOnly, callReads } = setup();
    const { shell: s } = shell();
    const batch = new BatchService(readOnly, NO_TIPS);
    const answer = await batch.answer(
      {
        tip: `0x${BLOCK_B.toUpperCase()}`,
        calls: [call('get-info'), balanceOf(OTHER_ADDR, { tip: BLOCK_C })],
      },
      s,
    );
    const { data } = parse(answer.body);
    // Only "consistent" reports a block for the whole batch.
    expect(data.tip).toBeUndefined();
    expect(state.calls.map((c) => [c.fn, c.tip])).toEqual(
      expect.arrayContaining([
        ['get-info', BLOCK_B],
        ['get-balance', BLOCK_C],
      ]),
    );
    expect(data.results.map((r) => r.meta.tipHeight)).toEqual([42, 43]);

    await expect(batch.answer({ tip: 'block 7', calls: [call('get-info')] }, s)).rejects.toMatchObject({
      code: 'VALIDATION_ERROR',
      details: { field: 'tip' },
    });
    expect(callReads()).toBe(2);
  });

  it('an item nested deeper than any Clarity value fails alone, without reaching validation', async () => {
    const { readOnly } = setup();
    const { shell: s, validated } = shell();
    let deep: unknown = 1;
    for (let i = 0; i < 5_000; i++) deep = { v: deep };
    const answer = await new BatchService(readOnly, NO_TIPS).answer(
      { calls: [call('get-info', { functionArgs: [deep] }), call('get-info')] },
      s,
    );
    const [nested, plain] = parse(answer.body).data.results;
    expect(nested?.error?.code).toBe('VALIDATION_ERROR');
    expect(nested?.error?.details).toEqual({ maxDepth: 32 });
    expect(plain?.meta.status).toBe(200);
    expect(validated).toHaveLength(1);
  });

  it('takes the contract name from addr.name in contractAddress', async () => {
    const { state, readOnly } = setup();
    const { shell: s, validated } = shell();
    const answer = await new BatchService(readOnly, NO_TIPS).answer(
      { calls: [{ contractAddress: `${TESTNET_ADDR}.demo`, functionName: 'get-info', functionArgs: [] }] },
      s,
    );
    expect(parse(answer.body).data.results[0]?.meta.status).toBe(200);
    expect(validated[0]).toMatchObject({ contractAddress: TESTNET_ADDR, contractName: 'demo' });
    expect(state.calls[0]?.contract).toBe(`${TESTNET_ADDR}.demo`);
  });

  it("every item asks the upstream as the batch's client", async () => {
    const { state, readOnly } = setup();
    const context: RequestContext = { clientId: 'batch-client' };
    const { shell: s } = shell(context);
    await new BatchService(readOnly, NO_TIPS).answer({ calls: [call('get-info'), balanceOf(OTHER_ADDR)] }, s);
    expect(state.calls).toHaveLength(2);
    for (const c of state.calls) expect(c.rc).toBe(context);
  });

  it('the batch body takes 1 to BATCH_MAX_CALLS calls', () => {
    // The service answers whatever it is given: the route's body schema is the size limit.
    const schema = batchBody(3);
    const calls = (n: number) => ({ calls: Array.from({ length: n }, () => call('get-info')) });
    expect(Value.Check(schema, calls(1))).toBe(true);
    expect(Value.Check(schema, calls(3))).toBe(true);
    expect(Value.Check(schema, calls(4))).toBe(false);
    expect(Value.Check(schema, calls(0))).toBe(false);
    expect(Value.Check(batchBody(4), calls(4))).toBe(true);
  });
});
