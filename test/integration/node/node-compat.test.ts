/**
 * The node-compatible endpoints over real HTTP: the gateway answers a miss with the very bytes
 * the node answers, a repeat from the cache, the node's refusal as the node writes it, and
 * stacks.js pointed at the gateway gets the same Clarity values as pointed at the node.
 */
import { Cl, type ClarityValue, cvToHex, fetchCallReadOnlyFunction } from '@stacks/transactions';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { hex, MAINNET_ADDR, OTHER_ADDR, SAMPLE_ABI, TESTNET_ADDR } from '../../support/fixtures.js';
import { type RunningGateway, request, startGateway, testEnv } from '../../support/gateway.js';

let mainnet: FakeNode;
let testnet: FakeNode;
let gw: RunningGateway;

const path = (fn: string, address = MAINNET_ADDR) => `/v2/contracts/call-read/${address}/demo/${fn}`;

async function post(
  base: string,
  p: string,
  body: unknown,
): Promise<{ status: number; headers: Headers; text: string }> {
  const res = await fetch(`${base}${p}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

function register(node: FakeNode, address: string): void {
  node.setAbi(address, 'demo', SAMPLE_ABI);
  node.setReadOnly(address, 'demo', 'get-info', { okay: true, result: hex(Cl.uint(42)) });
  node.setReadOnly(address, 'demo', 'fails', { okay: true, result: hex(Cl.error(Cl.uint(7))) });
  node.setReadOnly(address, 'demo', 'get-balance', ({ arguments: args, height }) => ({
    okay: true,
    result: hex(Cl.ok(Cl.uint(args[0] === hex(Cl.principal(OTHER_ADDR)) ? 5 + height : height))),
  }));
  // A public function called read-only: the node refuses it when it writes.
  node.setReadOnly(address, 'demo', 'transfer', {
    okay: false,
    cause: 'Unchecked(WriteAttemptedInReadOnly) "with \\"quotes\\""',
  });
}

beforeAll(async () => {
  mainnet = await startFakeNode();
  testnet = await startFakeNode({ tipHeight: 500 });
  register(mainnet, MAINNET_ADDR);
  register(testnet, TESTNET_ADDR);
  gw = await startGateway({
    ...testEnv(mainnet.url),
    STACKS_API_URL_TESTNET: testnet.url,
    UPSTREAM_RETRIES: '0',
  });
});

afterAll(async () => {
  await gw?.close();
  await mainnet?.close();
  await testnet?.close();
});

beforeEach(() => {
  mainnet.clearFaults();
  mainnet.resetStats();
  testnet.resetStats();
});

describe('POST /v2/contracts/call-read/{address}/{contract}/{function}', () => {
  it("answers a miss with the node's bytes, and the second time the same bytes from the cache", async () => {
    for (const [fn, args] of [
      ['get-info', []],
      ['get-balance', [cvToHex(Cl.principal(OTHER_ADDR))]],
      // An (err ...) result is okay:true for the node, and so it is here, from the cache too.
      ['fails', []],
    ] as const) {
      const body = { sender: OTHER_ADDR, arguments: args };
      const direct = await post(mainnet.url, path(fn), body);
      const miss = await post(gw.url, path(fn), body);
      const hit = await post(gw.url, path(fn), body);
      expect(miss.status, fn).toBe(200);
      expect(miss.text, fn).toBe(direct.text);
      expect(miss.headers.get('cache-status')).toBe('clarity-cache; fwd=miss; stored');
      expect(miss.headers.get('age')).toBe('0');
      expect(hit.status).toBe(200);
      expect(hit.text, fn).toBe(direct.text);
      expect(hit.headers.get('cache-status')).toBe('clarity-cache; hit');
      expect(hit.headers.get('age')).toMatch(/^\d+$/);
      // The tip height the result was read at, on the miss and on the hit alike.
      expect(miss.headers.get('x-canonical-stacks-tip-height')).toBe(String(mainnet.tipHeight));
      expect(hit.headers.get('x-canonical-stacks-tip-height')).toBe(String(mainnet.tipHeight));
    }
    // Three direct calls and three misses: the hits cost nothing upstream.
    expect(mainnet.count('call-read')).toBe(6);
  });

  it('shares the cache with the read-only endpoint', async () => {
    const body = { sender: MAINNET_ADDR, arguments: [] };
    await post(gw.url, path('get-info'), body);
    const envelope = await request(`${gw.url}/contract-calls/read-only/${MAINNET_ADDR}/demo/get-info`, {
      body: { functionArgs: [], senderAddress: MAINNET_ADDR },
    });
    expect(envelope.headers.get('cache-status')).toBe('clarity-cache; hit');
    expect(envelope.body).toEqual({ success: true, data: '42' });
  });

  it("answers the node's refusal (okay:false) as the node writes it, never from the cache", async () => {
    const body = { sender: OTHER_ADDR, arguments: [] };
    const direct = await post(mainnet.url, path('transfer'), body);
    expect(JSON.parse(direct.text).okay).toBe(false);
    for (let i = 0; i < 2; i++) {
      const answer = await post(gw.url, path('transfer'), body);
      expect(answer.status).toBe(200);
      expect(answer.text).toBe(direct.text);
      expect(answer.headers.get('cache-status')).toBe('clarity-cache; fwd=miss');
    }
    expect(mainnet.count('call-read')).toBe(3);
  });

  it('decodes every argument strictly before anything goes upstream, answering in the envelope', async () => {
    const uint = cvToHex(Cl.uint(1));
    const cases: Array<[unknown, string]> = [
      ['0102', 'INVALID_HEX_STRING'],
      ['0xzz', 'INVALID_HEX_STRING'],
      ['0x010', 'INVALID_HEX_STRING'],
      [uint.slice(0, -2), 'DESERIALIZATION_ERROR'],
      [`${uint}00`, 'DESERIALIZATION_ERROR'],
      ['0x', 'DESERIALIZATION_ERROR'],
    ];
    for (const [arg, codecError] of cases) {
      const res = await request(`${gw.url}${path('get-balance')}`, {
        body: { sender: OTHER_ADDR, arguments: [arg] },
      });
      expect(res.status, String(arg)).toBe(400);
      expect(res.body.success).toBe(false);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      expect(res.body.error.details.codecError, String(arg)).toBe(codecError);
      expect(res.body.error.message).toMatch(/^arguments\[0\]: /);
    }
    for (const [body, message] of [
      [{ arguments: [] }, "body must have required property 'sender'"],
      [{ sender: OTHER_ADDR, arguments: [1] }, 'body.arguments.0 must be string'],
      [{ sender: OTHER_ADDR }, "body must have required property 'arguments'"],
      [{ sender: 'nobody', arguments: [] }, 'senderAddress is not a valid Stacks principal'],
    ] as const) {
      const res = await request(`${gw.url}${path('get-info')}`, { body });
      expect(res.status).toBe(400);
      expect(res.body.error.message).toBe(message);
    }
    // Checked against the ABI like any read-only call: a type the function does not take.
    const wrongType = await request(`${gw.url}${path('get-balance')}`, {
      body: { sender: OTHER_ADDR, arguments: [uint] },
    });
    expect(wrongType.status).toBe(400);
    expect(wrongType.body.error.code).toBe('INVALID_ARGUMENTS');
    expect(mainnet.count('call-read')).toBe(0);
  });

  it('forwards ?tip= as 64 lowercase hex digits, refuses a malformed one, and follows the address to its network', async () => {
    const block = mainnet.block(60);
    const body = { sender: OTHER_ADDR, arguments: [cvToHex(Cl.principal(MAINNET_ADDR))] };
    const direct = await post(mainnet.url, `${path('get-balance')}?tip=${block.indexBlockHash}`, body);
    const pinned = await post(
      gw.url,
      `${path('get-balance')}?tip=0x${block.indexBlockHash.toUpperCase()}`,
      body,
    );
    expect(pinned.text).toBe(direct.text);
    expect(mainnet.lastRequest('call-read')?.query.tip).toBe(block.indexBlockHash);

    mainnet.resetStats();
    const bad = await request(`${gw.url}${path('get-balance')}?tip=latest-ish`, { body });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('VALIDATION_ERROR');
    expect(mainnet.total).toBe(0);

    // A block the node does not know: its 404, in the envelope (never cached).
    const unknown = await request(`${gw.url}${path('get-balance')}?tip=${'ab'.repeat(32)}`, { body });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('UPSTREAM_API_ERROR');
    expect(unknown.body.error.details.tip).toBe('ab'.repeat(32));

    const empty = await post(gw.url, `${path('get-info')}?tip=`, { sender: OTHER_ADDR, arguments: [] });
    expect(JSON.parse(empty.text).okay).toBe(true);

    mainnet.resetStats();
    const onTestnet = await post(gw.url, path('get-info', TESTNET_ADDR), {
      sender: TESTNET_ADDR,
      arguments: [],
    });
    expect(onTestnet.text).toBe(`{"okay":true,"result":"${hex(Cl.uint(42))}"}`);
    expect(testnet.count('call-read')).toBe(1);
    expect(mainnet.count('call-read')).toBe(0);
  });

  it('keeps the envelope and its status for errors the gateway raises (upstream down)', async () => {
    mainnet.status5xx(503, { kind: 'call-read' });
    const res = await request(`${gw.url}${path('get-balance')}`, {
      body: { sender: OTHER_ADDR, arguments: [cvToHex(Cl.contractPrincipal(MAINNET_ADDR, 'down'))] },
    });
    expect(res.status).toBe(502);
    expect(res.body.success).toBe(false);
    expect(res.body.error.code).toBe('UPSTREAM_API_ERROR');
  });
});

describe('without upstream budget', () => {
  it('answers RATE_LIMIT_EXCEEDED in the envelope with Retry-After, as the read-only endpoint does', async () => {
    const poor = await startGateway({
      ...testEnv(mainnet.url),
      UPSTREAM_RATE_LIMIT_PER_MINUTE: '1',
      UPSTREAM_QUEUE_TIMEOUT_MS: '0',
    });
    try {
      // The ABI takes the only token; the call itself finds none.
      const res = await request(`${poor.url}${path('get-info')}`, {
        body: { sender: OTHER_ADDR, arguments: [] },
      });
      expect(res.status).toBe(429);
      expect(res.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
      expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(mainnet.count('call-read')).toBe(0);
    } finally {
      await poor.close();
    }
  });
});

describe('GET /v2/contracts/interface/{address}/{contract}', () => {
  it("answers the node's ABI JSON, then from the cache", async () => {
    const direct = await fetch(`${mainnet.url}/v2/contracts/interface/${MAINNET_ADDR}/demo`).then((r) =>
      r.text(),
    );
    const first = await fetch(`${gw.url}/v2/contracts/interface/${MAINNET_ADDR}/demo`);
    const second = await fetch(`${gw.url}/v2/contracts/interface/${MAINNET_ADDR}/demo`);
    expect(first.status).toBe(200);
    expect(await first.text()).toBe(direct);
    expect(await second.text()).toBe(direct);
    expect(second.headers.get('cache-status')).toBe('clarity-cache; hit');
  });

  it("answers an unknown contract with the node's own 404 (text/plain, its bytes), on the miss and from the remembered 404", async () => {
    const p = `/v2/contracts/interface/${MAINNET_ADDR}/missing`;
    const direct = await fetch(`${mainnet.url}${p}`);
    const directBytes = Buffer.from(await direct.arrayBuffer());
    expect(direct.status).toBe(404);
    mainnet.resetStats();

    const miss = await fetch(`${gw.url}${p}`);
    expect(miss.status).toBe(404);
    expect(miss.headers.get('content-type')).toBe(direct.headers.get('content-type'));
    expect(miss.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(Buffer.from(await miss.arrayBuffer())).toEqual(directBytes);
    expect(mainnet.count('interface')).toBe(1);

    // The repeat is the 404 remembered (CACHE_NEGATIVE_TTL_S): no request, the same answer.
    const repeat = await fetch(`${gw.url}${p}`);
    expect(repeat.status).toBe(404);
    expect(repeat.headers.get('content-type')).toBe(direct.headers.get('content-type'));
    expect(Buffer.from(await repeat.arrayBuffer())).toEqual(directBytes);
    expect(repeat.headers.get('cache-status')).toMatch(/hit/);
    expect(mainnet.count('interface')).toBe(1);

    // The envelope route reads the same remembered 404 and keeps its envelope.
    const envelope = await request(`${gw.url}/contract-calls/abi/${MAINNET_ADDR}/missing`);
    expect(envelope.status).toBe(404);
    expect(envelope.headers.get('content-type')).toMatch(/^application\/json/);
    expect(envelope.body.error.code).toBe('UPSTREAM_API_ERROR');
    expect(envelope.headers.get('cache-status')).toMatch(/hit/);
    expect(mainnet.count('interface')).toBe(1);
  });

  it('passes the 404 through when nothing is remembered (CACHE_NEGATIVE_TTL_S=0): each request asks the node', async () => {
    const forgetful = await startGateway({ ...testEnv(mainnet.url), CACHE_NEGATIVE_TTL_S: '0' });
    try {
      const p = `/v2/contracts/interface/${MAINNET_ADDR}/missing`;
      for (let i = 1; i <= 2; i++) {
        const res = await fetch(`${forgetful.url}${p}`);
        expect(res.status).toBe(404);
        expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
        expect(await res.text()).toBe('No contract interface data found');
        expect(mainnet.count('interface')).toBe(i);
      }
    } finally {
      await forgetful.close();
    }
  });
});

describe('stacks.js fetchCallReadOnlyFunction pointed at the gateway', () => {
  const read = (baseUrl: string, functionName: string, functionArgs: ClarityValue[]) =>
    fetchCallReadOnlyFunction({
      contractAddress: MAINNET_ADDR,
      contractName: 'demo',
      functionName,
      functionArgs,
      senderAddress: OTHER_ADDR,
      network: 'mainnet',
      client: { baseUrl },
    });

  it('returns the same Clarity values as pointed at the node, cached or not', async () => {
    for (const [fn, args] of [
      ['get-info', []],
      ['get-balance', [Cl.principal(OTHER_ADDR)]],
      ['get-balance', [Cl.contractPrincipal(OTHER_ADDR, 'vault')]],
      ['fails', []],
    ] as const) {
      const fromNode = await read(mainnet.url, fn, [...args]);
      expect(await read(gw.url, fn, [...args])).toEqual(fromNode);
      expect(await read(gw.url, fn, [...args])).toEqual(fromNode);
    }
    expect(await read(gw.url, 'fails', [])).toEqual(Cl.error(Cl.uint(7)));
  });

  it("throws the node's cause for a refusal, as against the node", async () => {
    const fromNode = await read(mainnet.url, 'transfer', []).catch((err: Error) => err.message);
    const fromGateway = await read(gw.url, 'transfer', []).catch((err: Error) => err.message);
    expect(fromNode).toContain('WriteAttemptedInReadOnly');
    expect(fromGateway).toBe(fromNode);
  });
});

describe('OpenAPI', () => {
  it('documents the batch and node-compatible routes with examples, in a valid document', async () => {
    const { Validator } = await import('@seriousme/openapi-schema-validator');
    const spec = (await request(`${gw.url}/openapi.json`)).body;
    const result = await new Validator().validate(spec);
    expect(result.errors ?? []).toEqual([]);
    const batch = spec.paths['/contract-calls/batch'].post;
    const batchBody = batch.requestBody.content['application/json'];
    expect(batchBody.example.tip).toBe('consistent');
    expect(batchBody.schema.properties.calls.maxItems).toBe(100);
    expect(batch.responses['200']).toBeDefined();
    const callRead = spec.paths['/v2/contracts/call-read/{address}/{contract}/{function}'].post;
    expect(callRead.tags).toEqual(['node-compatible']);
    expect(callRead.parameters.map((p: { name: string }) => p.name)).toEqual(
      expect.arrayContaining(['address', 'contract', 'function', 'tip']),
    );
    expect(callRead.requestBody.content['application/json'].example.sender).toBeDefined();
    expect(spec.paths['/v2/contracts/interface/{address}/{contract}'].get).toBeDefined();
  });
});
