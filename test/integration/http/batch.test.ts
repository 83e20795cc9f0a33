/**
 * POST /contract-calls/batch over real HTTP against the fake node: every item is the single
 * endpoint's answer for the same call (compared item by item), duplicates cost one upstream
 * call, the whole-batch limits, and a top-level tip pinning every call.
 */
import { Cl } from '@stacks/transactions';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { hex, MAINNET_ADDR, OTHER_ADDR, SAMPLE_ABI, TESTNET_ADDR } from '../../support/fixtures.js';
import { type RunningGateway, request, startGateway, testEnv } from '../../support/gateway.js';

let node: FakeNode;
let gw: RunningGateway;

const batchUrl = () => `${gw.url}/contract-calls/batch`;
const singleUrl = (call: { contractAddress: string; contractName: string; functionName: string }) =>
  `${gw.url}/contract-calls/read-only/${call.contractAddress}/${call.contractName}/${call.functionName}`;

/** A batch call: coordinates plus the single endpoint's body. */
interface Call {
  contractAddress: string;
  contractName: string;
  functionName: string;
  [field: string]: unknown;
}

const call = (functionName: string, body: Record<string, unknown> = { functionArgs: [] }): Call => ({
  contractAddress: MAINNET_ADDR,
  contractName: 'demo',
  functionName,
  ...body,
});

/** The single endpoint's answer for a call: split into its path and body. */
async function single(c: Call) {
  const { contractAddress, contractName, functionName, ...body } = c;
  return request(singleUrl({ contractAddress, contractName, functionName }), { body });
}

/** An envelope without its error id (every error instance has a fresh one). */
// biome-ignore lint/suspicious/noExplicitAny: envelopes of any shape
function withoutId(envelope: any): unknown {
  if (envelope?.success !== false) return envelope;
  const { id, ...error } = envelope.error;
  expect(id).toMatch(/^err_/);
  return { success: false, error };
}

beforeAll(async () => {
  node = await startFakeNode();
  node.setAbi(MAINNET_ADDR, 'demo', SAMPLE_ABI);
  node.setAbi(TESTNET_ADDR, 'demo', SAMPLE_ABI);
  node.setReadOnly(MAINNET_ADDR, 'demo', 'get-info', { okay: true, result: hex(Cl.uint(42)) });
  node.setReadOnly(TESTNET_ADDR, 'demo', 'get-info', { okay: true, result: hex(Cl.uint(7)) });
  node.setReadOnly(MAINNET_ADDR, 'demo', 'fails', { okay: true, result: hex(Cl.error(Cl.uint(7))) });
  node.setReadOnly(MAINNET_ADDR, 'demo', 'get-balance', ({ arguments: args }) => ({
    okay: true,
    result: hex(Cl.ok(Cl.uint(args[0] === hex(Cl.principal(OTHER_ADDR)) ? 5 : 0))),
  }));
  // CHAIN_TIP_MAX_AGE_MS=0: every "consistent" batch learns the tip afresh (tests move it).
  gw = await startGateway(testEnv(node.url, { BATCH_MAX_CALLS: '5', CHAIN_TIP_MAX_AGE_MS: '0' }));
});

afterAll(async () => {
  await gw?.close();
  await node?.close();
});

beforeEach(() => {
  node.clearFaults();
  node.release();
});

describe('POST /contract-calls/batch', () => {
  it("answers each call exactly as the single endpoint does, in order, with the single answer's status and Cache-Status", async () => {
    const calls: unknown[] = [
      call('get-info'),
      call('fails'),
      call('get-balance', {
        functionArgs: [{ type: 'principal', value: OTHER_ADDR }],
        strictJsonCompat: false,
      }),
      call('get-info', { functionArgs: 'none' }),
      { ...call('get-info'), contractAddress: 'SP000NOTANADDRESS' },
      call('nope'),
      call('get-balance', { functionArgs: [{ type: 'uint', value: '1' }] }),
      call('get-info', { tip: 'block 7' }),
    ];
    // Not every call fits one batch of BATCH_MAX_CALLS=5: two batches, the same rules.
    const first = await request(batchUrl(), { body: { calls: calls.slice(0, 5) } });
    const second = await request(batchUrl(), { body: { calls: calls.slice(5) } });
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(first.body.success).toBe(true);
    const results = [...first.body.data.results, ...second.body.data.results];
    expect(results).toHaveLength(calls.length);
    // Misses were stored; the rest never reached the cache.
    expect(results.map((r) => r.meta.cacheStatus)).toEqual([
      'clarity-cache; fwd=miss; stored',
      'clarity-cache; fwd=miss; stored',
      'clarity-cache; fwd=miss; stored',
      null,
      null,
      null,
      null,
      null,
    ]);
    expect(results[0].meta.tipHeight).toBe(100);

    for (const [i, c] of calls.entries()) {
      const answer = await single(c as Call);
      const { meta, ...envelope } = results[i];
      expect(withoutId(envelope), `call ${i}`).toEqual(withoutId(answer.body));
      expect(meta.status, `call ${i}`).toBe(answer.status);
    }
    expect(results.map((r) => r.meta.status)).toEqual([200, 422, 200, 400, 400, 400, 400, 400]);
    expect(results.map((r) => r.error?.code)).toEqual([
      undefined,
      'CONTRACT_ERROR',
      undefined,
      'VALIDATION_ERROR',
      'INVALID_CONTRACT_ADDRESS',
      'INVALID_FUNCTION',
      'INVALID_ARGUMENTS',
      'VALIDATION_ERROR',
    ]);
    expect(results[2].data).toBe(5);

    // Now every success is cached: the batch and the single endpoint both answer hits.
    const again = await request(batchUrl(), { body: { calls: calls.slice(0, 3) } });
    for (const [i, c] of calls.slice(0, 3).entries()) {
      const answer = await single(c as Call);
      const { meta, ...envelope } = again.body.data.results[i];
      expect(withoutId(envelope)).toEqual(withoutId(answer.body));
      expect(meta.cacheStatus).toBe(answer.headers.get('cache-status'));
      expect(meta.cacheStatus).toBe('clarity-cache; hit');
      expect(meta.tipHeight).toBe(100);
    }
  });

  it('validates every call as the single endpoint validates its path and body, with the same texts', async () => {
    const { body } = await request(batchUrl(), {
      body: {
        calls: [
          42,
          { contractAddress: MAINNET_ADDR, functionName: 'get-info', functionArgs: [] },
          call('get-info', { functionArgs: [], cacheControl: { ttl: -1 } }),
          call('get-info', { functionArgs: [], network: 'devnet' }),
          call('get-info'),
        ],
      },
    });
    const [notObject, noName, badTtl, badNetwork, fine] = body.data.results;
    expect(notObject.error.message).toBe('body must be object');
    expect(noName.error.message).toBe("params must have required property 'contractName'");
    for (const [item, fields] of [
      [badTtl, { functionArgs: [], cacheControl: { ttl: -1 } }],
      [badNetwork, { functionArgs: [], network: 'devnet' }],
    ] as const) {
      const answer = await request(singleUrl(call('get-info')), { body: fields });
      expect(answer.status).toBe(400);
      const { meta, ...envelope } = item;
      expect(withoutId(envelope)).toEqual(withoutId(answer.body));
      expect(meta).toEqual({ status: 400, cacheStatus: null, tipHeight: null });
    }
    expect(fine.success).toBe(true);
    // Each error instance has its own id.
    expect(
      new Set(body.data.results.slice(0, 4).map((r: { error: { id: string } }) => r.error.id)).size,
    ).toBe(4);
  });

  it('takes the contract name from addr.name in contractAddress', async () => {
    const { body } = await request(batchUrl(), {
      body: {
        calls: [
          { contractAddress: `${MAINNET_ADDR}.demo`, functionName: 'get-info', functionArgs: [] },
          { contractAddress: `${TESTNET_ADDR}.demo`, functionName: 'get-info', functionArgs: [] },
        ],
      },
    });
    expect(body.data.results.map((r: { data: unknown }) => r.data)).toEqual(['42', '7']);
  });

  it('makes one upstream call for identical calls, in one batch and across concurrent batches', async () => {
    node.setReadOnly(MAINNET_ADDR, 'demo', 'get-balance', { okay: true, result: hex(Cl.ok(Cl.uint(9))) });
    const dup = call('get-balance', { functionArgs: [{ type: 'principal', value: MAINNET_ADDR }] });
    const bust = call('get-info', { functionArgs: [], cacheControl: { bustCache: true } });
    node.resetStats();
    node.gate({ kind: 'call-read' });
    const first = request(batchUrl(), { body: { calls: [dup, dup, dup, dup] } });
    await node.waitForRequests(1, { kind: 'call-read', timeoutMs: 5000 });
    // The second batch's items start together: once its other miss reaches the node, its
    // duplicate has long joined the first batch's call (one step into the cache, no upstream).
    const second = request(batchUrl(), { body: { calls: [dup, bust] } });
    await node.waitForRequests(2, { kind: 'call-read', timeoutMs: 5000 });
    node.release();
    const [a, b] = await Promise.all([first, second]);
    expect(node.requests.filter((r) => r.functionName === 'get-balance')).toHaveLength(1);
    const dups = [...a.body.data.results, b.body.data.results[0]];
    // Identical calls of one batch share one answer; the other batch's joined that call.
    expect(dups.map((r) => r.meta.cacheStatus).sort()).toEqual([
      'clarity-cache; fwd=miss; collapsed; stored',
      'clarity-cache; fwd=miss; stored',
      'clarity-cache; fwd=miss; stored',
      'clarity-cache; fwd=miss; stored',
      'clarity-cache; fwd=miss; stored',
    ]);
    for (const r of dups) expect(r.data).toBe('9');
  });

  it('answers every call of a batch at once: a hit and a second miss do not wait for a held miss', async () => {
    await request(batchUrl(), { body: { calls: [call('get-info')] } });
    node.resetStats();
    node.gate({ kind: 'call-read', times: 1 });
    const held = call('get-balance', {
      functionArgs: [{ type: 'principal', value: OTHER_ADDR }],
      cacheControl: { bustCache: true },
    });
    const other = call('get-info', { functionArgs: [], cacheControl: { bustCache: true } });
    const pending = request(batchUrl(), { body: { calls: [held, call('get-info'), other] } });
    // The first call is held at the node; the third reaches it all the same.
    await node.waitForRequests(2, { kind: 'call-read', timeoutMs: 5000 });
    expect(node.held()).toBe(1);
    node.release();
    const { body } = await pending;
    expect(body.data.results.map((r: { meta: { cacheStatus: string } }) => r.meta.cacheStatus)).toEqual([
      'clarity-cache; fwd=request; stored',
      'clarity-cache; hit',
      'clarity-cache; fwd=request; stored',
    ]);
  });

  it('refuses the whole batch when the body is not an object, calls is not a non-empty array, or holds more than BATCH_MAX_CALLS', async () => {
    const cases: Array<[unknown, string]> = [
      [[call('get-info')], 'body must be object'],
      [{}, "body must have required property 'calls'"],
      [{ calls: call('get-info') }, 'body.calls must be array'],
      [{ calls: [] }, 'body.calls must NOT have fewer than 1 items'],
      [
        { calls: Array.from({ length: 6 }, () => call('get-info')) },
        'body.calls must NOT have more than 5 items',
      ],
    ];
    node.resetStats();
    for (const [body, message] of cases) {
      const res = await request(batchUrl(), { body });
      expect(res.status, message).toBe(400);
      expect(res.body.success).toBe(false);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      expect(res.body.error.message).toBe(message);
    }
    const notJson = await request(batchUrl(), { rawBody: '{"calls": [' });
    expect(notJson.status).toBe(400);
    expect(notJson.body.error.code).toBe('VALIDATION_ERROR');
    const badTip = await request(batchUrl(), { body: { calls: [call('get-info')], tip: 'yesterday' } });
    expect(badTip.status).toBe(400);
    expect(badTip.body.error.details).toEqual({ field: 'tip', tip: 'yesterday' });
    expect(node.total).toBe(0);
  });
});

describe('top-level tip', () => {
  it('pins every call without a tip of its own to the given index block hash', async () => {
    node.setReadOnly(MAINNET_ADDR, 'demo', 'get-info', ({ height }) => ({
      okay: true,
      result: hex(Cl.uint(height)),
    }));
    const old = node.block(90).indexBlockHash;
    const own = node.block(80).indexBlockHash;
    node.resetStats();
    const { body } = await request(batchUrl(), {
      body: {
        calls: [call('get-info'), call('get-info', { functionArgs: [], tip: own })],
        tip: `0x${old.toUpperCase()}`,
      },
    });
    expect(body.data.results.map((r: { data: unknown }) => r.data)).toEqual(['90', '80']);
    expect(node.requests.map((r) => r.query.tip).sort()).toEqual([own, old].sort());
    expect(body.data.tip).toBeUndefined();
  });

  it('"consistent" learns the current block once and pins every call to the block whose hash it reports', async () => {
    node.setReadOnly(MAINNET_ADDR, 'demo', 'get-info', ({ height }) => ({
      okay: true,
      result: hex(Cl.uint(height)),
    }));
    node.setReadOnly(MAINNET_ADDR, 'demo', 'get-balance', ({ height }) => ({
      okay: true,
      result: hex(Cl.ok(Cl.uint(height * 10))),
    }));
    node.mine(3);
    const tip = node.block(node.tipHeight);
    node.resetStats();
    const { status, body } = await request(batchUrl(), {
      body: {
        calls: [
          call('get-info'),
          call('get-balance', { functionArgs: [{ type: 'principal', value: OTHER_ADDR }] }),
          call('nope'),
        ],
        tip: 'consistent',
      },
    });
    expect(status).toBe(200);
    expect(body.data.tip).toEqual({ height: tip.height, indexBlockHash: tip.indexBlockHash });
    expect(node.count('info')).toBe(1);
    const reads = node.requests.filter((r) => r.kind === 'call-read');
    expect(reads).toHaveLength(2);
    for (const r of reads) expect(r.query.tip).toBe(tip.indexBlockHash);
    expect(body.data.results[0].data).toBe(String(tip.height));
    expect(body.data.results[1].data).toBe(String(tip.height * 10));
    expect(body.data.results[2].error.code).toBe('INVALID_FUNCTION');
    // The next block: a new consistent batch reads there, not from the old block's entries.
    node.mine();
    const next = await request(batchUrl(), { body: { calls: [call('get-info')], tip: 'consistent' } });
    expect(next.body.data.tip.height).toBe(tip.height + 1);
    expect(next.body.data.results[0].data).toBe(String(tip.height + 1));
  });

  it('"consistent" batches arriving together share one GET /v2/info; calls with their own tip do not wait for it', async () => {
    node.mine();
    node.resetStats();
    node.gate({ kind: 'info' });
    const own = [
      { type: 'principal', value: MAINNET_ADDR },
      { type: 'principal', value: OTHER_ADDR },
      { type: 'principal', value: `${OTHER_ADDR}.vault` },
    ].map((who) =>
      call('get-balance', { functionArgs: [who], tip: 'latest', cacheControl: { bustCache: true } }),
    );
    const batches = own.map((ownTip) =>
      request(batchUrl(), { body: { calls: [call('get-info'), ownTip], tip: 'consistent' } }),
    );
    // Each batch's own-tip call reaches the node while /v2/info is held: every batch is under
    // way (and has joined the one refresh) before it ends.
    await node.waitForRequests(3, { kind: 'call-read', timeoutMs: 5000 });
    expect(node.count('info')).toBe(1);
    expect(node.held()).toBe(1);
    node.release();
    const answers = await Promise.all(batches);
    expect(node.count('info')).toBe(1);
    const tip = node.block(node.tipHeight);
    for (const a of answers) {
      expect(a.body.data.tip).toEqual({ height: tip.height, indexBlockHash: tip.indexBlockHash });
      expect(a.body.data.results[0].data).toBe(String(tip.height));
    }
    const pinned = node.requests.filter((r) => r.kind === 'call-read' && r.functionName === 'get-info');
    expect(pinned.map((r) => r.query.tip)).toEqual([tip.indexBlockHash]);
    const ownReads = node.requests.filter((r) => r.kind === 'call-read' && r.functionName === 'get-balance');
    expect(ownReads.map((r) => r.query.tip)).toEqual([undefined, undefined, undefined]);
  });

  it('"consistent" refuses calls on two networks, and answers the error of the node when the tip cannot be learned', async () => {
    node.resetStats();
    const mixed = await request(batchUrl(), {
      body: {
        calls: [call('get-info'), { ...call('get-info'), contractAddress: TESTNET_ADDR }],
        tip: 'consistent',
      },
    });
    expect(mixed.status).toBe(400);
    expect(mixed.body.error.code).toBe('VALIDATION_ERROR');
    expect(mixed.body.error.details.networks).toEqual(['mainnet', 'testnet']);
    expect(node.total).toBe(0);

    node.status5xx(503, { kind: 'info' });
    const down = await request(batchUrl(), { body: { calls: [call('get-info')], tip: 'consistent' } });
    expect(down.status).toBeGreaterThanOrEqual(500);
    expect(down.body.success).toBe(false);
    expect(node.count('call-read')).toBe(0);
  });
});

describe('identical calls and deep items in one batch', () => {
  it('makes one upstream call for identical calls, bustCache included', async () => {
    const before = node.count('call-read');
    const busted = call('get-info', { functionArgs: [], cacheControl: { bustCache: true } });
    const res = await request(batchUrl(), { body: { calls: [busted, busted, busted, busted, busted] } });
    expect(res.status).toBe(200);
    expect(res.body.data.results.map((r: { success: boolean }) => r.success)).toEqual([
      true,
      true,
      true,
      true,
      true,
    ]);
    expect(node.count('call-read')).toBe(before + 1);
  });

  it('fails an item nested 5,000 levels deep alone, as VALIDATION_ERROR, never a 500', async () => {
    // Written as text: the test's own JSON.stringify would not go 5,000 levels down.
    const deep = `${'{"value":'.repeat(5000)}"x"${'}'.repeat(5000)}`;
    const ok = JSON.stringify(call('get-info'));
    const bad = JSON.stringify({ ...call('get-info'), functionArgs: ['DEEP'] }).replace('"DEEP"', deep);
    const res = await request(batchUrl(), { rawBody: `{"calls":[${ok},${bad}]}` });
    expect(res.status).toBe(200);
    const [first, second] = res.body.data.results;
    expect(first.success).toBe(true);
    expect(second.success).toBe(false);
    expect(second.error.code).toBe('VALIDATION_ERROR');
    expect(second.meta.status).toBe(400);
  });
});
