/**
 * Who may ask (docs/access-control.md), over real HTTP: every rule gives the same verdict
 * whether the answer would come from the fast lane (an exact repeat of a cached call) or from
 * Fastify's routes; quotas per key and per client address; the client address behind proxies;
 * canonical admin and ops paths; CONNECT; a waiter whose client left spends no token.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Cl } from '@stacks/transactions';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { budgetExhaustedError } from '../../../src/upstream/budget/upstream-budget.js';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { hex, MAINNET_ADDR, SAMPLE_ABI } from '../../support/fixtures.js';
import { type RunningGateway, request, startGateway, testEnv } from '../../support/gateway.js';
import { httpRequest, openSocket, rawExchange, receivedUntilClose } from '../../support/raw-http.js';
import { tmpDir } from '../../unit/cache/tmp-dir.js';

const GOOD = 'k-good-0123456789abcdef';
const LIMITED = 'k-limited-0123456789abcdef';
const STINGY = 'k-stingy-0123456789abcdef';
const TOKEN = 'admin-token-for-admission';

let node: FakeNode;
let keysFile: string;

beforeAll(async () => {
  node = await startFakeNode();
  node.setAbi(MAINNET_ADDR, 'demo', SAMPLE_ABI);
  node.setReadOnly(MAINNET_ADDR, 'demo', 'get-balance', { okay: true, result: hex(Cl.ok(Cl.uint(7))) });
  const { dir } = tmpDir('admission');
  keysFile = path.join(dir, 'keys.json');
  const sha = (await import('node:crypto')).createHash('sha256').update(STINGY).digest('hex').toUpperCase();
  writeFileSync(
    keysFile,
    JSON.stringify([
      { name: 'good', key: GOOD },
      { name: 'limited', key: LIMITED, requestsPerMinute: 3 },
      { name: 'stingy', keySha256: sha, upstreamPerMinute: 1 },
    ]),
  );
});
afterAll(async () => {
  await node?.close();
});

const running: RunningGateway[] = [];
afterEach(async () => {
  for (const r of running.splice(0).reverse()) await r.close();
});

async function start(env: Record<string, string> = {}, deps = {}): Promise<RunningGateway> {
  const gw = await startGateway(testEnv(node.url, { ADMIN_TOKEN: TOKEN, ...env }), deps);
  running.push(gw);
  return gw;
}

const url = (base: string) => `${base}/contract-calls/read-only/${MAINNET_ADDR}/demo/get-balance`;
/** A distinct body per `n`: the lane holds answers per exact body. */
const body = (n: number) => ({ functionArgs: [{ type: 'principal', value: `${MAINNET_ADDR}.c${n}` }] });

interface Seen {
  status: number;
  code: string | undefined;
  scope: string | undefined;
  retryAfter: string | null;
}

async function ask(base: string, n: number, headers: Record<string, string> = {}): Promise<Seen> {
  const res = await request(url(base), { body: body(n), headers });
  return {
    status: res.status,
    code: res.body?.error?.code,
    scope: res.body?.error?.details?.scope,
    retryAfter: res.headers.get('retry-after'),
  };
}

describe('one admission path', () => {
  it('gives every rule the same verdict on the fast lane and on the routes', async () => {
    const cases: Array<[string, Record<string, string>]> = [
      ['no key', {}],
      ['a wrong key', { 'x-api-key': 'k-wrong-0123456789abcdef' }],
      ['a wrong bearer', { authorization: 'Bearer k-wrong-0123456789abcdef' }],
      ['a valid key', { 'x-api-key': GOOD }],
      ['a valid bearer', { authorization: `Bearer ${GOOD}` }],
    ];
    const gw = await start({ API_KEYS_FILE: keysFile, API_KEYS_REQUIRED: 'true' });
    // Warm body 1 with a valid key: a miss, then a hit the lane keeps, then a lane answer.
    expect((await ask(gw.url, 1, { 'x-api-key': GOOD })).status).toBe(200);
    expect((await ask(gw.url, 1, { 'x-api-key': GOOD })).status).toBe(200);
    const before = gw.gateway.lane.served;
    expect((await ask(gw.url, 1, { 'x-api-key': GOOD })).status).toBe(200);
    expect(gw.gateway.lane.served).toBe(before + 1);

    let fresh = 100;
    for (const [what, headers] of cases) {
      const servedBefore = gw.gateway.lane.served;
      const onLane = await ask(gw.url, 1, headers); // would be a lane hit
      const onRoutes = await ask(gw.url, fresh++, headers); // never seen: the routes answer
      expect(onLane, what).toEqual(onRoutes);
      const admitted = onLane.status === 200;
      expect(gw.gateway.lane.served - servedBefore, what).toBe(admitted ? 1 : 0);
      if (!admitted) expect(onLane.code, what).toBe('UNAUTHORIZED');
    }
  });

  it('without a keys file both headers are ignored; with one, a wrong key is refused even when keys are optional', async () => {
    const open = await start();
    expect((await ask(open.url, 1, { 'x-api-key': 'anything-at-all-here' })).status).toBe(200);
    expect((await ask(open.url, 1, { authorization: 'Bearer whatever-it-is' })).status).toBe(200);
    const optional = await start({ API_KEYS_FILE: keysFile });
    expect((await ask(optional.url, 1)).status).toBe(200);
    expect((await ask(optional.url, 1, { 'x-api-key': 'k-wrong-0123456789abcdef' })).code).toBe(
      'UNAUTHORIZED',
    );
    // Not an API route: open whatever the key says.
    expect(
      (await request(`${optional.url}/health`, { headers: { 'x-api-key': 'nope-nope-nope' } })).status,
    ).toBe(200);
  });

  it('counts a key’s requests, hits included, and refuses past its quota with scope key on both paths', async () => {
    const gw = await start({ API_KEYS_FILE: keysFile });
    const k = { 'x-api-key': LIMITED };
    const seen = [await ask(gw.url, 1, k), await ask(gw.url, 1, k), await ask(gw.url, 1, k)];
    expect(seen.map((s) => s.status)).toEqual([200, 200, 200]);
    const lane = await ask(gw.url, 1, k);
    const routes = await ask(gw.url, 999, k);
    for (const refused of [lane, routes]) {
      expect(refused).toMatchObject({ status: 429, code: 'RATE_LIMIT_EXCEEDED', scope: 'key' });
      expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);
    }
    // Another key is not affected.
    expect((await ask(gw.url, 1, { 'x-api-key': GOOD })).status).toBe(200);
    const uses = await request(`${gw.url}/admin/keys`, { headers: { authorization: `Bearer ${TOKEN}` } });
    const limited = uses.body.data.keys.find((u: { name: string }) => u.name === 'limited');
    expect(limited).toMatchObject({ windowAdmitted: 3, windowRefused: 2 });
    expect(JSON.stringify(uses.body)).not.toContain(LIMITED);
  });

  it('limits a key’s upstream requests without stopping its hits, and a refused call never reaches the node', async () => {
    const gw = await start({ API_KEYS_FILE: keysFile });
    const k = { 'x-api-key': STINGY };
    // The ABI fetch takes the one upstream token of the minute? Warm the ABI with another key.
    expect((await ask(gw.url, 50, { 'x-api-key': GOOD })).status).toBe(200);
    const calls = node.count('call-read');
    expect((await ask(gw.url, 51, k)).status).toBe(200);
    expect(node.count('call-read')).toBe(calls + 1);
    const refused = await ask(gw.url, 52, k);
    expect(refused).toMatchObject({ status: 429, code: 'RATE_LIMIT_EXCEEDED', scope: 'key' });
    expect(node.count('call-read')).toBe(calls + 1);
    // Hits spend no upstream request.
    expect((await ask(gw.url, 51, k)).status).toBe(200);
    expect((await ask(gw.url, 50, k)).status).toBe(200);
  });

  it('limits keyless clients per address, the address being the entry the trusted proxy wrote', async () => {
    const gw = await start({ ANONYMOUS_REQUESTS_PER_MINUTE: '2', TRUST_PROXY: '1' });
    const from = (client: string, spoof: string) => ({ 'x-forwarded-for': `${spoof}, ${client}` });
    expect((await ask(gw.url, 1, from('10.0.0.1', 'a'))).status).toBe(200);
    expect((await ask(gw.url, 1, from('10.0.0.1', 'b'))).status).toBe(200);
    // Varying what the client wrote on the left does not make it someone else.
    const lane = await ask(gw.url, 1, from('10.0.0.1', 'c'));
    const routes = await ask(gw.url, 77, from('10.0.0.1', 'd'));
    for (const refused of [lane, routes])
      expect(refused).toMatchObject({ status: 429, code: 'RATE_LIMIT_EXCEEDED', scope: 'client' });
    expect((await ask(gw.url, 1, from('10.0.0.2', 'c'))).status).toBe(200);
    // Not an API route: no quota.
    for (let i = 0; i < 4; i++)
      expect((await request(`${gw.url}/health`, { headers: from('10.0.0.1', 'x') })).status).toBe(200);
  });

  it('counts from the right with TRUST_PROXY=2, and takes the leftmost entry of a shorter header', async () => {
    const gw = await start({ ANONYMOUS_REQUESTS_PER_MINUTE: '1', TRUST_PROXY: '2' });
    expect((await ask(gw.url, 1, { 'x-forwarded-for': 'spoof, 10.1.1.1, 10.200.0.1' })).status).toBe(200);
    expect((await ask(gw.url, 1, { 'x-forwarded-for': 'other, 10.1.1.1, 10.200.0.2' })).status).toBe(429);
    expect((await ask(gw.url, 1, { 'x-forwarded-for': '10.3.3.3' })).status).toBe(200);
    expect((await ask(gw.url, 1, { 'x-forwarded-for': '10.3.3.3' })).status).toBe(429);
  });
});

describe('one spelling per route: a request is admitted as the route that serves it', () => {
  const callPath = `/contract-calls/read-only/${MAINNET_ADDR}/demo/get-balance`;
  /** One request on its own connection, the target exactly as given (no URL parser rewrites it). */
  const raw = (
    gw: RunningGateway,
    method: string,
    target: string,
    headers: Record<string, string> = {},
    b?: object,
  ) =>
    rawExchange(
      gw.url,
      httpRequest(
        method,
        target,
        b === undefined ? headers : { 'content-type': 'application/json', ...headers },
        b === undefined ? undefined : JSON.stringify(b),
      ),
    );

  it('asks for the key on every spelling of an API route that the router would serve', async () => {
    const gw = await start({ API_KEYS_FILE: keysFile, API_KEYS_REQUIRED: 'true' });
    const spellings: Array<[string, string]> = [
      ['POST', `/%63ontract-calls/read-only/${MAINNET_ADDR}/demo/get-balance`],
      ['POST', `/contract-calls/%72ead-only/${MAINNET_ADDR}/demo/get-balance`],
      ['POST', `http://x${callPath}`],
      ['POST', `HTTP://x:1234/%63ontract-calls/read-only/${MAINNET_ADDR}/demo/get-balance`],
      ['GET', `/v%32/data_var/${MAINNET_ADDR}/demo/counter`],
      ['GET', '/%6dainnet/v2/info'],
      ['GET', '/testnet/%76%32/info'],
      ['GET', 'http://x/v2/info'],
    ];
    for (const [method, target] of spellings) {
      const b = method === 'POST' ? body(1) : undefined;
      const refused = await raw(gw, method, target, {}, b);
      expect(refused.status, target).toBe(401);
      expect(refused.body.error.code, target).toBe('UNAUTHORIZED');
    }
    // With the key, the same spellings reach the route itself.
    const admitted = await raw(
      gw,
      'POST',
      `/%63ontract-calls/read-only/${MAINNET_ADDR}/demo/get-balance`,
      { 'x-api-key': GOOD },
      body(1),
    );
    expect(admitted.status).toBe(200);
    expect(admitted.body.data).toBeDefined();
    const absolute = await raw(gw, 'POST', `http://x${callPath}`, { 'x-api-key': GOOD }, body(1));
    expect(absolute.status).toBe(200);
    expect(absolute.body).toEqual(admitted.body);
  });

  it('counts every spelling against one quota, and the fast lane answers none past it', async () => {
    const gw = await start({ ANONYMOUS_REQUESTS_PER_MINUTE: '2' });
    expect((await ask(gw.url, 1)).status).toBe(200);
    expect((await ask(gw.url, 1)).status).toBe(200);
    const servedBefore = gw.gateway.lane.served;
    for (const target of [
      `/%63ontract-calls/read-only/${MAINNET_ADDR}/demo/get-balance`,
      `http://x${callPath}`,
    ]) {
      const res = await raw(gw, 'POST', target, {}, body(1));
      expect(res.status, target).toBe(429);
      expect(res.body.error.details.scope, target).toBe('client');
    }
    expect(gw.gateway.lane.served).toBe(servedBefore);
  });

  it('refuses dot segments and empty segments, however spelt, before any check could be skipped', async () => {
    const gw = await start({ API_KEYS_FILE: keysFile, API_KEYS_REQUIRED: 'true' });
    const auth = { authorization: `Bearer ${TOKEN}` };
    for (const target of [
      '/v2/../v2/info',
      '/./v2/info',
      '/v2/%2e%2e/admin/cache/stats',
      '/admin/%2E/cache/stats',
      '//v2/info',
      `/contract-calls//read-only/${MAINNET_ADDR}/demo/get-balance`,
      '/explorer/../admin/cache/stats',
    ]) {
      const res = await raw(gw, 'GET', target, auth);
      expect(res.status, target).toBe(404);
      expect(res.body.error.code, target).toBe('NOT_FOUND');
    }
  });

  it('answers admin and ops routes only at their canonical path, in origin and absolute form', async () => {
    const gw = await start();
    const auth = { authorization: `Bearer ${TOKEN}` };
    for (const target of ['http://x/%61dmin/cache/stats', 'http://x/%6detrics', 'http://x/h%65alth']) {
      const res = await raw(gw, 'GET', target, auth);
      expect(res.status, target).toBe(404);
      expect(res.body.error.code, target).toBe('NOT_FOUND');
    }
    // The canonical path in absolute form is the route itself, with its own rule.
    expect((await raw(gw, 'GET', 'http://x/admin/cache/stats', auth)).status).toBe(200);
    expect((await raw(gw, 'GET', 'http://x/admin/cache/stats')).status).toBe(401);
    expect((await raw(gw, 'GET', 'http://x/metrics')).status).toBe(200);
  });
});

describe('routes that answer only their canonical path, and methods', () => {
  it('answers percent-encoded admin and ops paths 404, the canonical ones as usual', async () => {
    const gw = await start();
    const auth = { authorization: `Bearer ${TOKEN}` };
    expect((await request(`${gw.url}/admin/cache/stats`, { headers: auth })).status).toBe(200);
    for (const p of ['/%61dmin/cache/stats', '/admin/%63ache/stats', '/%6detrics', '/%72eady', '/h%65alth']) {
      const res = await request(`${gw.url}${p}`, { headers: auth });
      expect(res.status, p).toBe(404);
      expect(res.body.error.code, p).toBe('NOT_FOUND');
    }
    expect((await request(`${gw.url}/metrics`)).status).toBe(200);
  });

  it('answers CONNECT with a 405 envelope instead of dropping the connection', async () => {
    const gw = await start();
    const socket = await openSocket(
      gw.url,
      'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n',
    );
    const res = await receivedUntilClose(socket);
    expect(res.status).toBe(405);
    expect(res.body.error.code).toBe('METHOD_NOT_ALLOWED');
  });

  it('answers a method a known path does not serve with 405 and Allow', async () => {
    const gw = await start();
    const res = await request(url(gw.url), { method: 'DELETE' });
    expect(res.status).toBe(405);
    expect(res.body.error.code).toBe('METHOD_NOT_ALLOWED');
    expect(res.headers.get('allow')).toContain('POST');
  });
});

describe('a client that goes away while waiting for a budget token', () => {
  it('leaves the queue and spends no token: the node never sees its call', async () => {
    let tokens = 2;
    const waiters: Array<{ resolve: () => void }> = [];
    const budget = {
      take(maxWaitMs?: number): Promise<void> {
        if (tokens > 0 && waiters.length === 0) {
          tokens -= 1;
          return Promise.resolve();
        }
        if (maxWaitMs === 0) return Promise.reject(budgetExhaustedError('manual', 0, 1000));
        return new Promise<void>((resolve) => waiters.push({ resolve }));
      },
      waitEstimateMs: () => 0,
      available: () => tokens,
      queued: () => waiters.length,
      close(): void {},
    };
    const gw = await start({}, { budgets: { mainnet: budget, testnet: budget } });
    // The two tokens: the ABI and a first call. The next call must wait.
    expect((await ask(gw.url, 1)).status).toBe(200);
    const before = node.count('call-read');
    const controller = new AbortController();
    const pending = fetch(url(gw.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body(4242)),
      signal: controller.signal,
    }).catch((err: unknown) => err);
    // Wait until the request is queued for a token (ABI fetch first, then the call).
    const pool = gw.gateway.upstreams!;
    for (let i = 0; i < 500 && pool.waiting('mainnet') === 0; i++) await new Promise((r) => setImmediate(r));
    expect(pool.waiting('mainnet')).toBe(1);
    controller.abort();
    await pending;
    for (let i = 0; i < 500 && pool.waiting('mainnet') > 0; i++) await new Promise((r) => setTimeout(r, 2));
    expect(pool.waiting('mainnet')).toBe(0);
    // The next client queues behind nobody: the first token that comes is its own, and the
    // node sees its call alone, never the abandoned one.
    const next = request(url(gw.url), { body: body(4243) });
    for (let i = 0; i < 500 && pool.waiting('mainnet') === 0; i++) await new Promise((r) => setImmediate(r));
    // Tokens for both takes made: the abandoned one's is given back (here: dropped), the
    // next client's is used.
    for (const w of waiters.splice(0)) w.resolve();
    expect((await next).status).toBe(200);
    expect(node.count('call-read')).toBe(before + 1);
    const last = node.requests.filter((r) => r.kind === 'call-read').at(-1);
    expect(JSON.stringify(last?.body)).not.toContain(hex(Cl.principal(`${MAINNET_ADDR}.c4242`)).slice(2));
  });
});
