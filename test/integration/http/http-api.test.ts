/**
 * The four endpoints and every error code over real HTTP: the real gateway on a socket, in
 * front of a fault-injecting fake Stacks node on another.
 */
import { Cl } from '@stacks/transactions';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import {
  hex,
  INFO_VALUE,
  MAINNET_ADDR,
  OTHER_ADDR,
  SAMPLE_ABI,
  TESTNET_ADDR,
} from '../../support/fixtures.js';
import { type RunningGateway, request, startGateway, testEnv } from '../../support/gateway.js';

let node: FakeNode;
let gw: RunningGateway;
let balance = 1000n;

const ro = (fn: string, addr = MAINNET_ADDR, contract = 'demo') =>
  `${gw.url}/contract-calls/read-only/${addr}/${contract}/${fn}`;

beforeAll(async () => {
  node = await startFakeNode();
  for (const addr of [MAINNET_ADDR, TESTNET_ADDR]) {
    node.setAbi(addr, 'demo', SAMPLE_ABI);
    node.setReadOnly(addr, 'demo', 'get-info', { okay: true, result: hex(INFO_VALUE) });
    node.setReadOnly(addr, 'demo', 'get-balance', () => ({
      okay: true,
      result: hex(Cl.ok(Cl.uint(balance))),
    }));
    node.setReadOnly(addr, 'demo', 'typed', { okay: true, result: hex(Cl.bool(true)) });
    node.setReadOnly(addr, 'demo', 'fails', { okay: true, result: hex(Cl.error(Cl.uint(7))) });
    node.setReadOnly(addr, 'demo', 'transfer', { okay: false, cause: 'NotReadOnly' });
  }
  gw = await startGateway(testEnv(node.url, { UPSTREAM_TIMEOUT_MS: '300', UPSTREAM_RETRIES: '2' }));
});

afterAll(async () => {
  await gw?.close();
  await node?.close();
});

afterEach(() => {
  node.clearFaults();
  node.release();
});

describe('decode-clarity-value', () => {
  const url = () => `${gw.url}/contract-calls/decode-clarity-value`;

  it('decodes a simplified responseOk wrapping a uint to the number inside', async () => {
    const clarityValue = { type: 'responseOk', value: { type: 'uint', value: '42' } };
    const res = await request(url(), { body: { clarityValue } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: { original: clarityValue, decoded: 42 } });
  });

  it('decodes a serialized string to its text and keeps the original string', async () => {
    const res = await request(url(), { body: { clarityValue: hex(Cl.stringAscii('hello')) } });
    expect(res.body).toEqual({
      success: true,
      data: { original: '0x0d0000000568656c6c6f', decoded: 'hello' },
    });
  });

  it('gives numbers up to 2^53-1 and strings beyond on the decode endpoint', async () => {
    const small = await request(url(), {
      body: { clarityValue: { type: 'uint', value: '9007199254740991' } },
    });
    expect(small.body.data.decoded).toBe(9007199254740991);
    const big = await request(url(), { body: { clarityValue: hex(Cl.int(-(2n ** 60n))) } });
    expect(big.body.data.decoded).toBe((-(2n ** 60n)).toString());
  });

  it('keeps containers with preserveContainers and raises err as CONTRACT_ERROR otherwise', async () => {
    const clarityValue = hex(Cl.error(Cl.uint(3)));
    const kept = await request(url(), { body: { clarityValue, preserveContainers: true } });
    expect(kept.body.data.decoded).toEqual({ type: 'err', value: 3 });
    const raised = await request(url(), { body: { clarityValue } });
    expect(raised.status).toBe(422);
    expect(raised.body.error).toMatchObject({ code: 'CONTRACT_ERROR', details: { value: 3 } });
  });

  it.each([
    ['odd length', '0x0'],
    ['not hex', '0xzz'],
    ['no 0x prefix', '0100'],
  ])('answers INVALID_HEX_STRING for %s', async (_name, clarityValue) => {
    const res = await request(url(), { body: { clarityValue } });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INVALID_HEX_STRING');
  });

  it.each([
    ['trailing bytes', `${hex(Cl.uint(1))}00`],
    ['truncated data', hex(Cl.uint(1)).slice(0, 20)],
    ['overrunning length prefix', '0x0d000000ff41'],
    ['unknown type byte', '0xff'],
    ['nesting deeper than 32', `0x${'0a'.repeat(40)}03`],
  ])('answers DESERIALIZATION_ERROR for %s', async (_name, clarityValue) => {
    const res = await request(url(), { body: { clarityValue } });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('DESERIALIZATION_ERROR');
  });

  it('answers VALIDATION_ERROR with valueType and error for an unsupported type', async () => {
    const res = await request(url(), { body: { clarityValue: { type: 'float', value: '1.5' } } });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.details).toMatchObject({ valueType: 'float' });
    expect(typeof res.body.error.details.error).toBe('string');
  });

  it('answers VALIDATION_ERROR for out-of-range integers and a missing clarityValue', async () => {
    const over = await request(url(), {
      body: { clarityValue: { type: 'uint', value: (2n ** 128n).toString() } },
    });
    expect(over.body.error.code).toBe('VALIDATION_ERROR');
    const missing = await request(url(), { body: {} });
    expect(missing.status).toBe(400);
    expect(missing.body.error.code).toBe('VALIDATION_ERROR');
  });
});

describe('read-only calls', () => {
  it('returns a decoded tuple with integers as decimal strings, and serves the repeat from the cache', async () => {
    node.resetStats();
    const first = await request(ro('get-info'), { body: { functionArgs: [] } });
    expect(first.status).toBe(200);
    expect(first.body.success).toBe(true);
    expect(first.body.data).toMatchObject({
      height: '123456',
      supply: (2n ** 100n).toString(),
      delta: '-5',
      owner: MAINNET_ADDR,
      token: `${MAINNET_ADDR}.demo`,
      memo: '0xcafe',
      nothing: null,
      names: ['a', 'ü'],
    });
    // Keys that name Object.prototype members are plain data.
    expect(first.body.data.constructor).toBe(true);
    expect(first.body.data.hasOwnProperty).toBe('1');
    const calls = node.count('call-read');
    const second = await request(ro('get-info'), { body: { functionArgs: [] } });
    expect(second.body).toEqual(first.body);
    expect(node.count('call-read')).toBe(calls);
    expect(node.count('interface')).toBe(1);
  });

  it('gives numbers where exact with strictJsonCompat:false and containers with preserveContainers', async () => {
    const res = await request(ro('get-info'), { body: { functionArgs: [], strictJsonCompat: false } });
    expect(res.body.data.height).toBe(123456);
    expect(res.body.data.supply).toBe((2n ** 100n).toString());
    const kept = await request(ro('get-info'), { body: { functionArgs: [], preserveContainers: true } });
    expect(kept.body.data.memo).toEqual({ type: 'some', value: '0xcafe' });
    expect(kept.body.data.nothing).toEqual({ type: 'none', value: null });
  });

  it('shares one entry between simplified, native and hex forms of the same argument', async () => {
    node.resetStats();
    const who = 'SP000000000000000000002Q6VF78';
    await request(ro('get-balance'), { body: { functionArgs: [{ type: 'principal', value: who }] } });
    await request(ro('get-balance'), { body: { functionArgs: [{ type: 'address', value: who }] } });
    await request(ro('get-balance'), { body: { functionArgs: [hex(Cl.standardPrincipal(who))] } });
    expect(node.count('call-read')).toBe(1);
    expect(node.lastRequest('call-read')?.body).toEqual({
      sender: MAINNET_ADDR,
      arguments: [hex(Cl.standardPrincipal(who))],
    });
  });

  it('keys the cache by sender, and bustCache fetches fresh while skipCache does not store', async () => {
    const args = { functionArgs: [{ type: 'principal', value: OTHER_ADDR }] };
    balance = 1000n;
    const a = await request(ro('get-balance'), { body: args });
    expect(a.body.data).toBe('1000');
    balance = 2000n;
    expect((await request(ro('get-balance'), { body: args })).body.data).toBe('1000');
    const other = await request(ro('get-balance'), { body: { ...args, senderAddress: OTHER_ADDR } });
    expect(other.body.data).toBe('2000');
    expect(node.lastRequest('call-read')?.body).toMatchObject({ sender: OTHER_ADDR });

    balance = 3000n;
    const skipped = await request(ro('get-balance'), {
      body: { ...args, cacheControl: { bustCache: true, skipCache: true } },
    });
    expect(skipped.body.data).toBe('3000');
    expect((await request(ro('get-balance'), { body: args })).body.data).toBe('1000');
    const busted = await request(ro('get-balance'), { body: { ...args, cacheControl: { bustCache: true } } });
    expect(busted.body.data).toBe('3000');
    balance = 4000n;
    expect((await request(ro('get-balance'), { body: args })).body.data).toBe('3000');
  });

  it('coalesces identical concurrent cold calls into one upstream request', async () => {
    node.resetStats();
    node.gate({ kind: 'call-read' });
    const body = {
      functionArgs: [{ type: 'principal', value: 'SP2J6ZY48GV1EZ5V2V5RB9MP66SW86PYKKNRV9EJ7.coalesce' }],
    };
    const all = Promise.all(Array.from({ length: 40 }, () => request(ro('get-balance'), { body })));
    await node.waitForRequests(1, { kind: 'call-read' });
    // Let every other request reach the gateway before the node answers.
    await expect.poll(() => gw.gateway.cache.inflight).toBe(1);
    node.release();
    const responses = await all;
    expect(responses.every((r) => r.status === 200)).toBe(true);
    expect(node.count('call-read')).toBe(1);
  });

  it('raises (err ...) as CONTRACT_ERROR with the decoded value, and caches the result', async () => {
    node.resetStats();
    const res = await request(ro('fails'), { body: { functionArgs: [] } });
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({
      success: false,
      error: { code: 'CONTRACT_ERROR', details: { value: '7' } },
    });
    await request(ro('fails'), { body: { functionArgs: [] } });
    expect(node.count('call-read')).toBe(1);
    const kept = await request(ro('fails'), { body: { functionArgs: [], preserveContainers: true } });
    expect(kept.body.data).toEqual({ type: 'err', value: '7' });
  });

  it('infers the network from the address and refuses a contradicting one', async () => {
    const testnet = await request(ro('get-info', TESTNET_ADDR), { body: { functionArgs: [] } });
    expect(testnet.status).toBe(200);
    const contradiction = await request(ro('get-info', TESTNET_ADDR), {
      body: { functionArgs: [], network: 'mainnet' },
    });
    expect(contradiction.status).toBe(400);
    expect(contradiction.body.error.code).toBe('VALIDATION_ERROR');
    const bad = await request(ro('get-info'), { body: { functionArgs: [], network: 'devnet' } });
    expect(bad.body.error.code).toBe('VALIDATION_ERROR');
  });

  it.each([
    ['a bad checksum', 'SP3K8BC0PPEVCV7NZ6QSRWPQ2JE9E5B6N3PA0KBR8', 'demo'],
    ['not c32', 'not-an-address', 'demo'],
    ['a bad contract name', MAINNET_ADDR, '1demo'],
  ])('answers INVALID_CONTRACT_ADDRESS for %s, before anything goes upstream', async (_n, addr, contract) => {
    node.resetStats();
    const res = await request(ro('get-info', addr, contract), { body: { functionArgs: [] } });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INVALID_CONTRACT_ADDRESS');
    expect(node.total).toBe(0);
  });

  it('answers INVALID_FUNCTION for a missing or private function', async () => {
    const missing = await request(ro('nope'), { body: { functionArgs: [] } });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatchObject({
      code: 'INVALID_FUNCTION',
      details: { function: 'nope', contract: `${MAINNET_ADDR}.demo` },
    });
    expect(missing.body.error.message).toContain('nope');
    const priv = await request(ro('secret'), { body: { functionArgs: [] } });
    expect(priv.body.error.code).toBe('INVALID_FUNCTION');
  });

  it('answers INVALID_ARGUMENTS for a wrong count or a deep type mismatch, without an upstream call', async () => {
    node.resetStats();
    const good = [
      { type: 'int', value: '-1' },
      { type: 'buffer', value: '0x01020304' },
      { type: 'list', value: [{ type: 'uint', value: '1' }] },
      { type: 'some', value: { type: 'bool', value: true } },
      { type: 'tuple', value: { a: { type: 'uint', value: '1' }, s: { type: 'string', value: 'abc' } } },
    ];
    expect((await request(ro('typed'), { body: { functionArgs: good } })).status).toBe(200);
    const calls = node.count('call-read');
    const variants: unknown[][] = [
      good.slice(0, 4),
      [{ type: 'uint', value: '1' }, ...good.slice(1)],
      [good[0], { type: 'buffer', value: '0x0102030405' }, ...good.slice(2)],
      [
        ...good.slice(0, 2),
        { type: 'list', value: Array(4).fill({ type: 'uint', value: '1' }) },
        ...good.slice(3),
      ],
      [...good.slice(0, 3), { type: 'some', value: { type: 'uint', value: '1' } }, good[4]],
      [...good.slice(0, 4), { type: 'tuple', value: { a: { type: 'uint', value: '1' } } }],
      [
        ...good.slice(0, 4),
        {
          type: 'tuple',
          value: { a: { type: 'uint', value: '1' }, s: { type: 'string', value: 'toolong' } },
        },
      ],
    ];
    for (const functionArgs of variants) {
      const res = await request(ro('typed'), { body: { functionArgs } });
      expect(res.status, JSON.stringify(functionArgs)).toBe(400);
      expect(res.body.error.code).toBe('INVALID_ARGUMENTS');
    }
    expect(node.count('call-read')).toBe(calls);
  });

  it('answers VALIDATION_ERROR for malformed bodies, bad ttl and bad arguments', async () => {
    const cases: unknown[] = [
      {},
      { functionArgs: 'nope' },
      { functionArgs: [{ type: 'uint', value: '-1' }] },
      { functionArgs: ['0xzz'] },
      { functionArgs: [], cacheControl: { ttl: -1 } },
      { functionArgs: [], cacheControl: { ttl: '10' } },
      { functionArgs: [], cacheControl: { bustcache: true } },
      { functionArgs: [], strictJsonCompat: 'yes' },
      { functionArgs: [], senderAddress: 'nope' },
    ];
    for (const body of cases) {
      const res = await request(ro('get-info'), { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code, JSON.stringify(body)).toBe('VALIDATION_ERROR');
    }
  });

  it('maps the node answering okay:false to UPSTREAM_API_ERROR 422 with the cause, not cached', async () => {
    node.resetStats();
    const res = await request(ro('transfer'), { body: { functionArgs: [] } });
    expect(res.status).toBe(422);
    expect(res.body.error).toMatchObject({
      code: 'UPSTREAM_API_ERROR',
      details: { cause: 'NotReadOnly', retryable: false },
    });
    await request(ro('transfer'), { body: { functionArgs: [] } });
    expect(node.count('call-read')).toBe(2);
  });

  it('answers UPSTREAM_API_ERROR 404 for an unknown contract', async () => {
    const res = await request(ro('get-info', MAINNET_ADDR, 'ghost'), { body: { functionArgs: [] } });
    expect(res.status).toBe(404);
    expect(res.body.error).toMatchObject({ code: 'UPSTREAM_API_ERROR', details: { retryable: false } });
  });

  it('retries 5xx and answers UPSTREAM_API_ERROR 502 retryable once retries are exhausted', async () => {
    node.resetStats();
    node.status5xx(503, { kind: 'call-read' });
    const res = await request(ro('get-balance'), {
      body: { functionArgs: [{ type: 'principal', value: `${OTHER_ADDR}.five` }] },
    });
    expect(res.status).toBe(502);
    expect(res.body.error).toMatchObject({ code: 'UPSTREAM_API_ERROR', details: { retryable: true } });
    expect(node.count('call-read')).toBe(3);
  });

  it('recovers when a 5xx is followed by a good answer', async () => {
    node.status5xx(500, { kind: 'call-read', times: 1 });
    const res = await request(ro('get-balance'), {
      body: { functionArgs: [{ type: 'principal', value: `${OTHER_ADDR}.recover` }] },
    });
    expect(res.status).toBe(200);
  });

  it('answers TIMEOUT 504 when the last attempt times out', async () => {
    node.hang({ kind: 'call-read' });
    const res = await request(ro('get-balance'), {
      body: { functionArgs: [{ type: 'principal', value: `${OTHER_ADDR}.slow` }] },
    });
    expect(res.status).toBe(504);
    expect(res.body.error.code).toBe('TIMEOUT');
  });

  it('answers UPSTREAM_API_ERROR 502 for garbage and for a node that is down', async () => {
    node.garbage({ kind: 'call-read' });
    const garbage = await request(ro('get-balance'), {
      body: { functionArgs: [{ type: 'principal', value: `${OTHER_ADDR}.junk` }] },
    });
    expect(garbage.status).toBe(502);
    expect(garbage.body.error.code).toBe('UPSTREAM_API_ERROR');
    node.clearFaults();
    await node.down();
    try {
      const down = await request(ro('get-balance'), {
        body: { functionArgs: [{ type: 'principal', value: `${OTHER_ADDR}.down` }] },
      });
      expect(down.status).toBe(502);
      expect(down.body.error).toMatchObject({ code: 'UPSTREAM_API_ERROR', details: { retryable: true } });
      // ...while cached answers keep flowing.
      const cached = await request(ro('get-info'), { body: { functionArgs: [] } });
      expect(cached.status).toBe(200);
    } finally {
      await node.up();
    }
  });

  it('answers RATE_LIMIT_EXCEEDED 429 with Retry-After when the upstream keeps answering 429', async () => {
    node.rateLimit(0, { kind: 'call-read' });
    const res = await request(ro('get-balance'), {
      body: { functionArgs: [{ type: 'principal', value: `${OTHER_ADDR}.limited` }] },
    });
    expect(res.status).toBe(429);
    expect(res.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(res.body.error.details.retryAfter).toBeGreaterThanOrEqual(1);
  });
});

describe('ABI and known contracts', () => {
  it('serves the ABI, fetched once and cached', async () => {
    node.resetStats();
    // (A 404 is remembered for CACHE_NEGATIVE_TTL_S: see negative-cache.test.ts.)
    node.setAbi(OTHER_ADDR, 'demo', SAMPLE_ABI);
    const b = await request(`${gw.url}/contract-calls/abi/${OTHER_ADDR}/demo`);
    expect(b.status).toBe(200);
    expect(b.body).toEqual({ success: true, data: SAMPLE_ABI });
    await request(`${gw.url}/contract-calls/abi/${OTHER_ADDR}/demo`);
    expect(node.count('interface')).toBe(1);
  });

  it('answers INVALID_CONTRACT_ADDRESS for a bad address on the ABI endpoint', async () => {
    const res = await request(`${gw.url}/contract-calls/abi/SPNOPE/demo`);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INVALID_CONTRACT_ADDRESS');
  });

  it('lists cached contracts of both networks once each, without an upstream call', async () => {
    node.resetStats();
    const res = await request(`${gw.url}/contract-calls/known-contracts`);
    expect(res.status).toBe(200);
    expect(node.total).toBe(0);
    const list = res.body.data.contracts.cached as Array<{
      contractAddress: string;
      contractName: string;
      network: string;
    }>;
    expect(list).toEqual(
      expect.arrayContaining([
        { contractAddress: MAINNET_ADDR, contractName: 'demo', network: 'mainnet' },
        { contractAddress: TESTNET_ADDR, contractName: 'demo', network: 'testnet' },
        { contractAddress: OTHER_ADDR, contractName: 'demo', network: 'mainnet' },
      ]),
    );
    expect(list.some((c) => c.contractName === 'ghost')).toBe(false);
    expect(new Set(list.map((c) => `${c.network}:${c.contractAddress}.${c.contractName}`)).size).toBe(
      list.length,
    );
    expect(res.body.data.stats).toEqual({ total: list.length, cached: list.length });
  });
});

describe('the envelope for everything else', () => {
  it('answers NOT_FOUND for an unknown route and METHOD_NOT_ALLOWED with Allow for a wrong method', async () => {
    const unknown = await request(`${gw.url}/nope`);
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ success: false, error: { code: 'NOT_FOUND' } });
    const wrong = await request(`${gw.url}/contract-calls/decode-clarity-value`);
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('POST');
    expect(wrong.body.error.code).toBe('METHOD_NOT_ALLOWED');
  });

  it('answers VALIDATION_ERROR for malformed JSON and 413 for an oversized body', async () => {
    const url = `${gw.url}/contract-calls/decode-clarity-value`;
    const malformed = await request(url, { rawBody: '{"clarityValue": ' });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.code).toBe('VALIDATION_ERROR');
    const big = await request(url, {
      rawBody: JSON.stringify({ clarityValue: `0x${'00'.repeat(600_000)}` }),
    });
    expect(big.status).toBe(413);
    expect(big.body.error.code).toBe('VALIDATION_ERROR');
  });

  it('refuses a form-encoded body with 415 instead of guessing it is JSON', async () => {
    const res = await request(`${gw.url}/contract-calls/decode-clarity-value`, {
      rawBody: JSON.stringify({ clarityValue: { type: 'bool', value: true } }),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(res.status).toBe(415);
    expect(res.body).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR' } });
  });

  it('gives every error a unique id', async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 20; i++) ids.add((await request(`${gw.url}/nope`)).body.error.id);
    expect(ids.size).toBe(20);
  });
});
