/**
 * HTTP details over real HTTP and raw sockets: time limits and connection
 * cap, parser- and router-level answers in the envelope, trailing
 * slashes, body content types, CORS, `addr.name` paths, the endpoint
 * index, the ABI query parameters and argument error messages.
 */
import { Cl } from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE } from '../../../src/errors.js';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { hex, MAINNET_ADDR, SAMPLE_ABI, TESTNET_ADDR } from '../../support/fixtures.js';
import { type RunningGateway, request, startGateway, testEnv } from '../../support/gateway.js';
import { httpRequest, openSocket, rawExchange, receivedUntilClose } from '../../support/raw-http.js';

const ADMIN_TOKEN = 'admin-secret-token';
/** The longest valid names: a letter and 127 more characters (128). */
const LONG_CONTRACT = `a${'b'.repeat(127)}`;
const LONG_FUNCTION = `f${'g'.repeat(127)}`;

let node: FakeNode;
let gw: RunningGateway;

function expectEnvelope(body: unknown, code: string, status: number): void {
  expect(body).toMatchObject({
    success: false,
    error: { id: expect.stringMatching(/^err_/), code, message: expect.any(String) },
  });
  expect(Object.keys(ERROR_CATALOGUE)).toContain(code);
  expect(status).toBeGreaterThanOrEqual(400);
}

beforeAll(async () => {
  node = await startFakeNode();
  for (const addr of [MAINNET_ADDR, TESTNET_ADDR]) {
    node.setAbi(addr, 'demo', SAMPLE_ABI);
    node.setReadOnly(addr, 'demo', 'get-info', { okay: true, result: hex(Cl.uint(1)) });
    node.setReadOnly(addr, 'demo', 'get-balance', { okay: true, result: hex(Cl.ok(Cl.uint(5))) });
  }
  node.setAbi(MAINNET_ADDR, LONG_CONTRACT, {
    ...SAMPLE_ABI,
    functions: [{ name: LONG_FUNCTION, access: 'read_only', args: [], outputs: { type: 'bool' } }],
  });
  node.setReadOnly(MAINNET_ADDR, LONG_CONTRACT, LONG_FUNCTION, { okay: true, result: hex(Cl.bool(true)) });
  gw = await startGateway(
    testEnv(node.url, {
      ADMIN_TOKEN,
      // Small limits, so that the time-limit tests end quickly; awaited by events, not timers.
      HTTP_HEADERS_TIMEOUT_MS: '300',
      HTTP_REQUEST_TIMEOUT_MS: '600',
    }),
  );
});

afterAll(async () => {
  await gw?.close();
  await node?.close();
});

describe('time limits', () => {
  it('cuts off half-sent request lines, headers and bodies with a 408 envelope', async () => {
    const partial = [
      'GET /hea',
      'GET /health HTTP/1.1\r\nHost: x\r\n',
      'POST /contract-calls/decode-clarity-value HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"clarityValue":',
    ];
    // Many at once: none of them can hold its socket.
    const sockets = await Promise.all(
      Array.from({ length: 30 }, (_, i) => openSocket(gw.url, partial[i % partial.length])),
    );
    const answers = await Promise.all(sockets.map((s) => receivedUntilClose(s)));
    for (const answer of answers) {
      expect(answer.closed).toBe(true);
      expect(answer.status).toBe(408);
      expectEnvelope(answer.body, 'VALIDATION_ERROR', 408);
    }
  });

  it('closes a connection that never sends anything', async () => {
    const socket = await openSocket(gw.url);
    const answer = await receivedUntilClose(socket);
    expect(answer.closed).toBe(true);
  });

  it('still answers a complete request after the cut-offs', async () => {
    expect((await request(`${gw.url}/health`)).status).toBe(200);
  });

  it('drops connections beyond HTTP_MAX_CONNECTIONS and accepts again once one closes', async () => {
    const small = await startGateway(testEnv(node.url, { HTTP_MAX_CONNECTIONS: '2' }));
    try {
      const server = small.gateway.app.server;
      const accepted: Array<import('node:net').Socket> = [];
      const acceptedTwo = new Promise<void>((resolve) =>
        server.on('connection', (s) => {
          accepted.push(s);
          if (accepted.length === 2) resolve();
        }),
      );
      const dropped = new Promise<void>((resolve) => server.once('drop', () => resolve()));
      const held = [await openSocket(small.url, 'GET /hea'), await openSocket(small.url, 'GET /hea')];
      await acceptedTwo;
      const third = await openSocket(small.url, 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
      const thirdAnswer = await receivedUntilClose(third);
      await dropped;
      expect(thirdAnswer.raw).toBe('');
      // Free one slot; the server sees it close, then a new client is served.
      const freed = new Promise<void>((resolve) => accepted[0]!.once('close', () => resolve()));
      held[0]!.destroy();
      await freed;
      expect((await request(`${small.url}/health`)).status).toBe(200);
      held[1]!.destroy();
    } finally {
      await small.close();
    }
  });
});

describe('answers of the parser and the router in the envelope', () => {
  it('malformed percent-encoding is a 400 envelope', async () => {
    for (const path of [
      '/contract-calls/abi/%ZZ/demo',
      '/health%ZZ',
      `/contract-calls/abi/${MAINNET_ADDR}/%E0%A4%A`,
    ]) {
      const res = await rawExchange(gw.url, httpRequest('GET', path));
      expect(res.status, path).toBe(400);
      expectEnvelope(res.body, 'VALIDATION_ERROR', 400);
    }
  });

  it('a URL over the limit is a 414 envelope, a header section over it a 431 envelope', async () => {
    const longUrl = await rawExchange(
      gw.url,
      httpRequest('GET', `/contract-calls/abi/${'A'.repeat(20_000)}`),
    );
    expect(longUrl.status).toBe(414);
    expectEnvelope(longUrl.body, 'VALIDATION_ERROR', 414);
    const bigHeaders = await rawExchange(
      gw.url,
      httpRequest('GET', '/health', { 'X-Big': 'a'.repeat(20_000) }),
    );
    expect(bigHeaders.status).toBe(431);
    expectEnvelope(bigHeaders.body, 'VALIDATION_ERROR', 431);
    const bigQuery = await rawExchange(gw.url, httpRequest('GET', `/health?q=${'a'.repeat(20_000)}`));
    expect(bigQuery.status).toBe(414);
    expectEnvelope(bigQuery.body, 'VALIDATION_ERROR', 414);
  });

  it('conflicting Content-Length and Transfer-Encoding is a 400 envelope', async () => {
    const res = await rawExchange(
      gw.url,
      'POST /contract-calls/decode-clarity-value HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    );
    expect(res.status).toBe(400);
    expectEnvelope(res.body, 'VALIDATION_ERROR', 400);
    expect(res.body.error.message).toMatch(/Content-Length and Transfer-Encoding/);
  });

  it('duplicate, conflicting Content-Length headers are a 400 envelope', async () => {
    const res = await rawExchange(
      gw.url,
      'POST /contract-calls/decode-clarity-value HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n{"a":1',
    );
    expect(res.status).toBe(400);
    expectEnvelope(res.body, 'VALIDATION_ERROR', 400);
    expect(res.body.error.message).toMatch(/Content-Length/);
  });

  it("an HTTP/1.1 request without Host is a 400 envelope (not Node's bare 400)", async () => {
    const res = await rawExchange(gw.url, 'GET /health HTTP/1.1\r\n\r\n');
    expect(res.status).toBe(400);
    expectEnvelope(res.body, 'VALIDATION_ERROR', 400);
    expect(res.body.error.message).toMatch(/Host/);
  });

  it('any other malformed request line is a 400 envelope', async () => {
    const res = await rawExchange(gw.url, 'GARBAGE\r\n\r\n');
    expect(res.status).toBe(400);
    expectEnvelope(res.body, 'VALIDATION_ERROR', 400);
  });

  it('never refuses a valid 128-character contract or function name for its length', async () => {
    const abi = await request(`${gw.url}/contract-calls/abi/${MAINNET_ADDR}/${LONG_CONTRACT}`);
    expect(abi.status).toBe(200);
    const call = await request(
      `${gw.url}/contract-calls/read-only/${MAINNET_ADDR}/${LONG_CONTRACT}/${LONG_FUNCTION}`,
      {
        body: { functionArgs: [] },
      },
    );
    expect(call.status).toBe(200);
    expect(call.body).toEqual({ success: true, data: true });
    const dotted = await request(`${gw.url}/contract-calls/abi/${MAINNET_ADDR}.${LONG_CONTRACT}`);
    expect(dotted.status).toBe(200);
    // A segment longer than any valid one is still an envelope (the router's limit, 414).
    const huge = await request(`${gw.url}/contract-calls/abi/${MAINNET_ADDR}/${'a'.repeat(3000)}`);
    expect(huge.status).toBe(414);
    expectEnvelope(huge.body, 'VALIDATION_ERROR', 414);
    // One character more is a name error from the gateway, not the router's 414.
    const tooLong = await request(`${gw.url}/contract-calls/abi/${MAINNET_ADDR}/${LONG_CONTRACT}x`);
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.error.code).toBe('INVALID_CONTRACT_ADDRESS');
  });
});

describe('trailing slash', () => {
  it('ignores a trailing slash on every route', async () => {
    expect((await request(`${gw.url}/health/`)).body).toMatchObject({
      success: true,
      data: { status: 'ok' },
    });
    expect((await request(`${gw.url}/contract-calls/known-contracts/`)).status).toBe(200);
    const decoded = await request(`${gw.url}/contract-calls/decode-clarity-value/`, {
      body: { clarityValue: { type: 'uint', value: '7' } },
    });
    expect(decoded.body).toMatchObject({ success: true, data: { decoded: 7 } });
  });

  it('a wrong method on a slashed path is a coherent 405', async () => {
    const res = await request(`${gw.url}/health/`, { method: 'POST', body: {} });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET');
    expect(res.body.error.message).not.toMatch(/GET is not allowed/);
  });
});

describe('body content types', () => {
  const body = JSON.stringify({ clarityValue: { type: 'bool', value: true } });
  const path = '/contract-calls/decode-clarity-value';

  it.each([
    ['application/json', 'application/json'],
    ['application/json with a charset', 'application/json; charset=utf-8'],
    ['text/plain', 'text/plain'],
    ['text/plain with a charset', 'text/plain;charset=UTF-8'],
  ])('parses %s as JSON', async (_label, type) => {
    const res = await rawExchange(gw.url, httpRequest('POST', path, { 'Content-Type': type }, body));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      data: { original: { type: 'bool', value: true }, decoded: true },
    });
  });

  it('parses a body without a Content-Type as JSON', async () => {
    const res = await rawExchange(gw.url, httpRequest('POST', path, {}, body));
    expect(res.status).toBe(200);
    expect(res.body.data.decoded).toBe(true);
  });

  it.each([
    'application/x-www-form-urlencoded',
    'application/xml',
    'multipart/form-data; boundary=x',
    'image/png',
  ])('refuses %s with VALIDATION_ERROR 415', async (type) => {
    const res = await rawExchange(gw.url, httpRequest('POST', path, { 'Content-Type': type }, body));
    expect(res.status).toBe(415);
    expectEnvelope(res.body, 'VALIDATION_ERROR', 415);
    expect(res.body.error.message).toMatch(/application\/json/);
  });
});

describe('CORS', () => {
  const origin = 'https://app.example';
  const roPath = `/contract-calls/read-only/${MAINNET_ADDR}/demo/get-info`;

  it('answers a preflight on a public route with 204 and the allowed methods and headers', async () => {
    const res = await rawExchange(
      gw.url,
      httpRequest('OPTIONS', roPath, {
        Origin: origin,
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'content-type',
      }),
    );
    expect(res.status).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-allow-methods']).toBe('GET, POST, DELETE, OPTIONS');
    expect(res.headers['access-control-allow-headers']).toBe(
      'content-type, authorization, x-api-key, x-hiro-product, x-hiro-version, accept, last-event-id',
    );
    // A page ends its watched-read subscription with DELETE, and resumes its stream with Last-Event-ID.
    const del = await rawExchange(
      gw.url,
      httpRequest('OPTIONS', '/subscriptions/abcdefabcdefabcdefabcdef', {
        Origin: origin,
        'Access-Control-Request-Method': 'DELETE',
      }),
    );
    expect(del.status).toBe(204);
    expect(del.headers['access-control-allow-methods']).toContain('DELETE');
    const events = await rawExchange(
      gw.url,
      httpRequest('OPTIONS', '/subscriptions/abcdefabcdefabcdefabcdef/events', {
        Origin: origin,
        'Access-Control-Request-Method': 'GET',
        'Access-Control-Request-Headers': 'last-event-id',
      }),
    );
    expect(events.status).toBe(204);
    // addr.name and trailing-slash forms are the same route.
    const dotted = await rawExchange(
      gw.url,
      httpRequest('OPTIONS', `/contract-calls/abi/${MAINNET_ADDR}.demo/`, { Origin: origin }),
    );
    expect(dotted.status).toBe(204);
  });

  it('sends the origin and exposes the cache headers on answers, errors included', async () => {
    const ok = await request(`${gw.url}${roPath}`, { body: { functionArgs: [] }, headers: { origin } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe('*');
    expect(ok.headers.get('access-control-expose-headers')).toBe(
      'Cache-Status, Age, Retry-After, X-Canonical-Stacks-Tip-Height, Clarity-Cache-Cost, RateLimit-Policy, RateLimit',
    );
    const notFound = await request(`${gw.url}/nope`, { headers: { origin } });
    expect(notFound.headers.get('access-control-allow-origin')).toBe('*');
  });

  it('never sends CORS headers on admin routes, with or without a token', async () => {
    const auth = { authorization: `Bearer ${ADMIN_TOKEN}`, origin };
    const stats = await request(`${gw.url}/admin/cache/stats`, { headers: auth });
    expect(stats.status).toBe(200);
    const refused = await request(`${gw.url}/admin/cache/stats`, { headers: { origin } });
    expect(refused.status).toBe(401);
    const preflight = await rawExchange(
      gw.url,
      httpRequest('OPTIONS', '/admin/cache', { Origin: origin, 'Access-Control-Request-Method': 'DELETE' }),
    );
    expect(preflight.status).not.toBe(204);
    expectEnvelope(preflight.body, preflight.body.error.code, preflight.status ?? 0);
    for (const headers of [
      Object.fromEntries(stats.headers),
      Object.fromEntries(refused.headers),
      preflight.headers,
    ]) {
      expect(Object.keys(headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
    }
  });

  it('with a list of origins, echoes an allowed origin only, and CORS_ORIGINS=none sends nothing', async () => {
    const listed = await startGateway(
      testEnv(node.url, { CORS_ORIGINS: `${origin}, https://other.example` }),
    );
    const off = await startGateway(testEnv(node.url, { CORS_ORIGINS: 'none' }));
    try {
      const yes = await request(`${listed.url}/health`, { headers: { origin } });
      expect(yes.headers.get('access-control-allow-origin')).toBe(origin);
      expect(yes.headers.get('vary')).toMatch(/Origin/);
      const no = await request(`${listed.url}/health`, { headers: { origin: 'https://evil.example' } });
      expect(no.headers.get('access-control-allow-origin')).toBeNull();
      const offAnswer = await request(`${off.url}/health`, { headers: { origin } });
      expect(offAnswer.headers.get('access-control-allow-origin')).toBeNull();
      const offPreflight = await rawExchange(off.url, httpRequest('OPTIONS', '/health', { Origin: origin }));
      expect(offPreflight.status).toBe(405);
      expect(offPreflight.headers['access-control-allow-origin']).toBeUndefined();
    } finally {
      await listed.close();
      await off.close();
    }
  });
});

describe('addr.name paths', () => {
  it('serves the ABI and read-only calls for addr.name as for addr/name', async () => {
    const split = await request(`${gw.url}/contract-calls/abi/${MAINNET_ADDR}/demo`);
    const dotted = await request(`${gw.url}/contract-calls/abi/${MAINNET_ADDR}.demo`);
    expect(dotted.status).toBe(200);
    expect(dotted.body).toEqual(split.body);
    const call = await request(`${gw.url}/contract-calls/read-only/${MAINNET_ADDR}.demo/get-info`, {
      body: { functionArgs: [] },
    });
    expect(call.body).toEqual({ success: true, data: '1' });
  });

  it('validates the dotted form like the split one', async () => {
    const bad = await request(`${gw.url}/contract-calls/abi/${MAINNET_ADDR}.bad!name`);
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('INVALID_CONTRACT_ADDRESS');
    expect(bad.body.error.details.address).toBe(`${MAINNET_ADDR}.bad!name`);
  });

  it('works on the admin routes too', async () => {
    const res = await request(`${gw.url}/admin/cache/contracts/${MAINNET_ADDR}.demo`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveProperty('deleted');
  });
});

describe('the endpoint index', () => {
  it('GET /contract-calls lists every public endpoint, one line each, and no admin route', async () => {
    const res = await request(`${gw.url}/contract-calls`);
    expect(res.status).toBe(200);
    const lines: Array<{ method: string; path: string; description: string }> = res.body.data.endpoints;
    const pairs = lines.map((l) => `${l.method} ${l.path}`);
    expect(pairs).toEqual(
      expect.arrayContaining([
        'POST /contract-calls/decode-clarity-value',
        'POST /contract-calls/read-only/{contractAddress}/{contractName}/{functionName}',
        'GET /contract-calls/abi/{contractAddress}/{contractName}',
        'GET /contract-calls/known-contracts',
        'GET /contract-calls',
        'GET /health',
      ]),
    );
    expect(pairs.some((p) => p.includes('/admin'))).toBe(false);
    for (const line of lines) expect(line.description).toMatch(/^[^\n]+$/);
  });

  it('GET / sends browsers to /explorer and gives others the listing', async () => {
    const browser = await fetch(`${gw.url}/`, {
      redirect: 'manual',
      headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' },
    });
    expect(browser.status).toBe(303);
    expect(browser.headers.get('location')).toBe('/explorer');
    expect(browser.headers.get('vary')).toMatch(/Accept/);
    expect(await browser.json()).toEqual({ success: true, data: { location: '/explorer' } });
    const api = await request(`${gw.url}/`, { headers: { accept: '*/*' } });
    expect(api.status).toBe(200);
    expect(api.body).toEqual((await request(`${gw.url}/contract-calls`)).body);
  });
});

describe('ABI query parameters', () => {
  const abiUrl = (addr: string, q: string) => `${gw.url}/contract-calls/abi/${addr}/demo${q}`;

  it('accepts a network that agrees with the address and refuses one that does not', async () => {
    expect((await request(abiUrl(MAINNET_ADDR, '?network=mainnet'))).status).toBe(200);
    expect((await request(abiUrl(TESTNET_ADDR, '?network=testnet'))).status).toBe(200);
    const wrong = await request(abiUrl(MAINNET_ADDR, '?network=testnet'));
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toMatchObject({
      code: 'VALIDATION_ERROR',
      details: { addressNetwork: 'mainnet' },
    });
  });

  it('names the accepted values of a bad network, in the query and in a read-only body', async () => {
    const q = await request(abiUrl(MAINNET_ADDR, '?network=devnet'));
    expect(q.status).toBe(400);
    expect(q.body.error.message).toBe('querystring.network must be one of "mainnet", "testnet"');
    const body = await request(`${gw.url}/contract-calls/read-only/${MAINNET_ADDR}/demo/get-info`, {
      body: { functionArgs: [], network: 'devnet' },
    });
    expect(body.status).toBe(400);
    expect(body.body.error.message).toBe('body.network must be one of "mainnet", "testnet"');
  });

  it('bustCache=true refetches the ABI upstream; unknown parameters are ignored', async () => {
    await request(abiUrl(MAINNET_ADDR, ''));
    const before = node.count('interface');
    const cached = await request(abiUrl(MAINNET_ADDR, '?whatever=1&utm_source=x'));
    expect(cached.status).toBe(200);
    expect(cached.headers.get('cache-status')).toMatch(/hit/);
    expect(node.count('interface')).toBe(before);
    const busted = await request(abiUrl(MAINNET_ADDR, '?bustCache=true'));
    expect(busted.status).toBe(200);
    expect(busted.headers.get('cache-status')).toMatch(/fwd=request/);
    expect(node.count('interface')).toBe(before + 1);
    const bad = await request(abiUrl(MAINNET_ADDR, '?bustCache=yes'));
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/"true", "false"/);
  });
});

describe('the OpenAPI document', () => {
  it('documents the ABI query parameters, the addr.name paths and the index routes', async () => {
    const { paths } = (await request(`${gw.url}/openapi.json`)).body;
    for (const p of [
      '/contract-calls/abi/{contractAddress}/{contractName}',
      '/contract-calls/abi/{contractId}',
    ]) {
      const names = paths[p].get.parameters.map((x: { in: string; name: string }) => `${x.in}:${x.name}`);
      expect(names).toEqual(expect.arrayContaining(['query:network', 'query:bustCache']));
    }
    expect(paths['/contract-calls/read-only/{contractId}/{functionName}'].post.parameters).toEqual(
      expect.arrayContaining([expect.objectContaining({ in: 'path', name: 'contractId' })]),
    );
    expect(paths['/contract-calls'].get).toBeDefined();
    expect(paths['/'].get).toBeDefined();
  });
});

describe('argument errors that help', () => {
  const ro = (fn: string) => `${gw.url}/contract-calls/read-only/${MAINNET_ADDR}/demo/${fn}`;

  it('a plain string names the argument once, what the ABI expects and what was got', async () => {
    await request(`${gw.url}/contract-calls/abi/${MAINNET_ADDR}/demo`); // the ABI is cached
    const res = await request(ro('get-balance'), { body: { functionArgs: [MAINNET_ADDR] } });
    expect(res.status).toBe(400);
    const { message, details } = res.body.error;
    expect(message.split('functionArgs[0]').length).toBe(2);
    expect(message).toContain(`got the string "${MAINNET_ADDR}"`);
    expect(message).toContain('"who"');
    expect(message).toContain('is principal');
    expect(details).toMatchObject({
      path: 'functionArgs[0]',
      codecError: 'INVALID_HEX_STRING',
      expected: 'principal',
    });
  });

  it('INVALID_ARGUMENTS carries details.path and a one-sentence details.reason', async () => {
    const functionArgs = [
      { type: 'int', value: '-1' },
      { type: 'buffer', value: '0x01020304' },
      { type: 'list', value: [{ type: 'uint', value: '1' }] },
      { type: 'some', value: { type: 'bool', value: true } },
      { type: 'tuple', value: { a: { type: 'int', value: '-5' }, s: { type: 'string', value: 'abc' } } },
    ];
    const res = await request(ro('typed'), { body: { functionArgs } });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({
      code: 'INVALID_ARGUMENTS',
      details: { path: 'functionArgs[4].value.a', reason: 'expected uint, got int -5' },
    });
    expect(res.body.error.message).toMatch(/^functionArgs\[4\]\.value\.a: expected uint, got int -5 /);
    expect(res.body.error.details.reason).not.toMatch(/\.\s+\S/);
  });

  it('an unknown type lists the accepted type names', async () => {
    const res = await request(ro('get-balance'), {
      body: { functionArgs: [{ type: 'address32', value: 'x' }] },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toMatch(/accepted types are uint, int, bool, principal, .*responseErr/);
    expect(res.body.error.details.acceptedTypes).toContain('stringUtf8');
  });

  it('INVALID_CONTRACT_ADDRESS carries details.address', async () => {
    const res = await request(`${gw.url}/contract-calls/abi/SPNOTANADDRESS/demo`);
    expect(res.body.error).toMatchObject({
      code: 'INVALID_CONTRACT_ADDRESS',
      details: { address: 'SPNOTANADDRESS' },
    });
  });
});
