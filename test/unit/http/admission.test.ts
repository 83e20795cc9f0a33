/**
 * The admission path (src/http/admission/admission.ts) on its own, without a server: what it
 * decides for each kind of route (API, node, admin, ops, open, CORS preflight), the admin
 * token, API keys, quotas (an in-memory store with a clock the test moves, and one that
 * answers later, as Redis does), the one spelling of a target, and the verdict's CORS flag,
 * which cors.ts reads instead of classifying paths itself.
 */
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import {
  Admission,
  type AdmissionOptions,
  type Refused,
  type Verdict,
  verdictOf,
} from '../../../src/http/admission/admission.js';
import { ApiKeyRing, parseApiKeys } from '../../../src/http/admission/api-keys.js';
import { MemoryQuota } from '../../../src/http/admission/quota-store.js';
import { sameSecret, secretDigest } from '../../../src/http/admission/secret.js';
import { laterQuota } from '../../support/later-quota.js';

const ADMIN_TOKEN = 'admin-token-0123456789abcdef';
const GOOD = 'k-good-0123456789abcdef';
const LIMITED = 'k-limited-0123456789abcdef';
const STINGY = 'k-stingy-0123456789abcdef';
const CALL = '/contract-calls/read-only/SP000000000000000000002Q6VF78/pox-4/get-info';

const keys = (): ApiKeyRing =>
  new ApiKeyRing(
    parseApiKeys([
      { name: 'good', key: GOOD },
      { name: 'limited', key: LIMITED, requestsPerMinute: 2 },
      { name: 'stingy', key: STINGY, upstreamPerMinute: 1 },
    ]),
  );

/** What admission reads of a request: method, target, headers and the socket's address. */
function req(
  method: string,
  url: string,
  headers: Record<string, string> = {},
  remoteAddress = '192.0.2.7',
): IncomingMessage {
  return { method, url, headers, socket: { remoteAddress } } as unknown as IncomingMessage;
}

function admission(options: Partial<AdmissionOptions> = {}): Admission {
  return new Admission({ trustProxy: 0, quota: new MemoryQuota(), ...options });
}

/** The verdict of a store that answers at once (every store here but the deferred one). */
function now(verdict: Verdict | Promise<Verdict>): Verdict {
  if (verdict instanceof Promise) throw new Error('expected a synchronous verdict');
  return verdict;
}

function refused(verdict: Verdict): Refused {
  if (verdict.ok) throw new Error(`expected a refusal, got an admitted ${verdict.kind} request`);
  return verdict;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe('route kinds', () => {
  const gate = admission({ adminToken: ADMIN_TOKEN });
  const cases: Array<[string, string, Record<string, string>, Verdict['kind'], boolean]> = [
    ['POST', CALL, {}, 'api', true],
    ['GET', '/contract-calls', {}, 'api', true],
    ['GET', '/contract-calls/abi/SP000000000000000000002Q6VF78/pox-4', {}, 'api', true],
    ['GET', '/v2/info', {}, 'node', true],
    ['GET', '/v3/blocks/height/1', {}, 'node', true],
    ['GET', '/mainnet/v2/info', {}, 'node', true],
    ['GET', '/testnet/v2/accounts/ST000000000000000000002AMW42H', {}, 'node', true],
    ['GET', '/admin/cache/stats', bearer(ADMIN_TOKEN), 'admin', false],
    ['DELETE', '/admin/cache', bearer(ADMIN_TOKEN), 'admin', false],
    ['GET', '/health', {}, 'ops', true],
    ['GET', '/health/', {}, 'ops', true],
    ['GET', '/ready', {}, 'ops', true],
    ['GET', '/metrics', {}, 'ops', true],
    ['GET', '/', {}, 'open', true],
    ['GET', '/explorer', {}, 'open', true],
    ['GET', '/docs', {}, 'open', true],
    ['GET', '/openapi.json', {}, 'open', true],
    ['OPTIONS', CALL, {}, 'preflight', true],
    ['OPTIONS', '/v2/info', {}, 'preflight', true],
    ['OPTIONS', '/health', {}, 'preflight', true],
    ['OPTIONS', '/explorer', {}, 'preflight', true],
  ];
  for (const [method, url, headers, kind, cors] of cases) {
    it(`admits ${method} ${url} as ${kind}, ${cors ? 'with' : 'without'} CORS`, () => {
      const verdict = now(gate.admit(req(method, url, headers)));
      expect(verdict).toMatchObject({ ok: true, kind, cors, clientId: '192.0.2.7', key: undefined });
    });
  }

  it('remembers the verdict on the request, for the lane, the hooks and CORS', () => {
    const r = req('GET', '/v2/info');
    expect(verdictOf(r)).toBeUndefined();
    const verdict = now(gate.admit(r));
    expect(verdictOf(r)).toBe(verdict);
  });

  it('takes the client address from the entry the trusted proxy wrote', () => {
    const behind = admission({ trustProxy: 1 });
    const verdict = now(behind.admit(req('GET', '/v2/info', { 'x-forwarded-for': 'spoof, 198.51.100.4' })));
    expect(verdict.clientId).toBe('198.51.100.4');
    expect(now(gate.admit(req('GET', '/v2/info', { 'x-forwarded-for': '198.51.100.4' }))).clientId).toBe(
      '192.0.2.7',
    );
  });
});

describe('the admin token', () => {
  const gate = admission({
    adminToken: ADMIN_TOKEN,
    keys: keys(),
    keysRequired: true,
    anonymousPerMinute: 1,
  });

  it('lets in the right token, as a bearer in any case and spacing, on every admin path and method', () => {
    for (const authorization of [
      `Bearer ${ADMIN_TOKEN}`,
      `bearer ${ADMIN_TOKEN}`,
      `BEARER   ${ADMIN_TOKEN}  `,
      `Bearer\t${ADMIN_TOKEN}`,
    ])
      for (const [method, url] of [
        ['GET', '/admin/cache/stats'],
        ['DELETE', '/admin/cache'],
        ['POST', '/admin/abis/warm'],
        ['GET', '/admin'],
        ['GET', '/admin/no-such-route'],
      ] as const) {
        const verdict = now(gate.admit(req(method, url, { authorization })));
        expect(verdict, `${method} ${url} ${authorization}`).toMatchObject({
          ok: true,
          kind: 'admin',
          cors: false,
          key: undefined,
        });
      }
  });

  const wrong: Array<[string, Record<string, string>]> = [
    ['no header', {}],
    ['a wrong token', bearer('wrong')],
    ['a token prefix', bearer(ADMIN_TOKEN.slice(0, -1))],
    ['a longer token', bearer(`${ADMIN_TOKEN}x`)],
    ['another scheme', { authorization: `Basic ${ADMIN_TOKEN}` }],
    ['an empty bearer', { authorization: 'Bearer ' }],
    ['the token without a scheme', { authorization: ADMIN_TOKEN }],
    ['the token as an API key header', { 'x-api-key': ADMIN_TOKEN }],
    ['a valid API key', bearer(GOOD)],
  ];
  for (const [what, headers] of wrong) {
    it(`refuses ${what} with the admin API's 401, no CORS, and spends no quota`, () => {
      const verdict = refused(now(gate.admit(req('GET', '/admin/cache/stats', headers))));
      expect(verdict).toMatchObject({ kind: 'admin', cors: false, rule: 'admin-token', key: undefined });
      expect(verdict.error).toMatchObject({
        code: 'UNAUTHORIZED',
        status: 401,
        message: 'a valid admin bearer token is required',
        headers: { 'www-authenticate': 'Bearer realm="clarity-cache admin"' },
      });
    });
  }

  it('holds for every method: an OPTIONS on an admin route is no preflight', () => {
    const verdict = refused(now(gate.admit(req('OPTIONS', '/admin/cache'))));
    expect(verdict).toMatchObject({ kind: 'admin', cors: false, rule: 'admin-token' });
    expect(now(gate.admit(req('OPTIONS', '/admin/cache', bearer(ADMIN_TOKEN))))).toMatchObject({
      ok: true,
      kind: 'admin',
      cors: false,
    });
  });

  it('is no API key: the admin token on an API route is a key that is not valid', () => {
    const verdict = refused(now(gate.admit(req('POST', CALL, bearer(ADMIN_TOKEN)))));
    expect(verdict).toMatchObject({ kind: 'api', cors: true, rule: 'api-key' });
  });

  it('without ADMIN_TOKEN admits admin paths for the router to answer 404, and says it checks nothing', () => {
    const open = admission();
    expect(open.checksAdminToken).toBe(false);
    expect(gate.checksAdminToken).toBe(true);
    expect(now(open.admit(req('GET', '/admin/cache/stats')))).toMatchObject({
      ok: true,
      kind: 'admin',
      cors: false,
    });
  });
});

describe('one secret comparison, for keys and the admin token', () => {
  it('compares digests in constant time, and a digest of another length is simply not the secret', () => {
    const held = secretDigest(ADMIN_TOKEN);
    expect(held).toHaveLength(32);
    expect(sameSecret(secretDigest(ADMIN_TOKEN), held)).toBe(true);
    expect(sameSecret(secretDigest(`${ADMIN_TOKEN} `), held)).toBe(false);
    expect(sameSecret(Buffer.alloc(3), held)).toBe(false);
  });
});

describe('API keys', () => {
  it('ignores both headers without a keys file', () => {
    const open = admission();
    for (const headers of [{ 'x-api-key': 'anything-at-all' }, bearer('whatever-it-is')])
      expect(now(open.admit(req('POST', CALL, headers)))).toMatchObject({
        ok: true,
        kind: 'api',
        key: undefined,
      });
  });

  it('finds a key sent as X-API-Key or as a bearer, on API and node routes, and tells each use', () => {
    const uses: Array<[string, boolean]> = [];
    const gate = admission({ keys: keys(), onKeyUse: (name, ok) => uses.push([name, ok]) });
    for (const [url, kind] of [
      [CALL, 'api'],
      ['/v2/info', 'node'],
    ] as const)
      for (const headers of [{ 'x-api-key': GOOD }, bearer(GOOD), { 'x-api-key': ` ${GOOD} ` }])
        expect(now(gate.admit(req('POST', url, headers)))).toMatchObject({
          ok: true,
          kind,
          cors: true,
          key: { name: 'good' },
          admitUpstream: undefined,
        });
    expect(uses).toEqual(Array(6).fill(['good', true]));
  });

  it('refuses a key that is not in the file, whether keys are required or not', () => {
    for (const keysRequired of [false, true]) {
      const gate = admission({ keys: keys(), keysRequired });
      const verdict = refused(
        now(gate.admit(req('POST', CALL, { 'x-api-key': 'k-wrong-0123456789abcdef' }))),
      );
      expect(verdict).toMatchObject({ kind: 'api', cors: true, rule: 'api-key', key: undefined });
      expect(verdict.error).toMatchObject({
        code: 'UNAUTHORIZED',
        status: 401,
        message: 'the API key is not valid',
      });
    }
  });

  it('refuses a request without a key only when keys are required', () => {
    expect(now(admission({ keys: keys() }).admit(req('GET', '/v2/info')))).toMatchObject({
      ok: true,
      kind: 'node',
      key: undefined,
    });
    const verdict = refused(
      now(admission({ keys: keys(), keysRequired: true }).admit(req('GET', '/v2/info'))),
    );
    expect(verdict).toMatchObject({ kind: 'node', cors: true, rule: 'api-key' });
    expect(verdict.error.message).toContain('X-API-Key');
  });

  it('asks no key of ops, open routes and preflights, even when keys are required', () => {
    const gate = admission({ keys: keys(), keysRequired: true });
    for (const [method, url] of [
      ['GET', '/health'],
      ['GET', '/explorer'],
      ['OPTIONS', CALL],
      ['OPTIONS', '/v2/info'],
    ] as const)
      expect(now(gate.admit(req(method, url, { 'x-api-key': 'k-wrong-0123456789abcdef' }))).ok).toBe(true);
  });
});

describe('quotas', () => {
  /** A memory store on a clock the test moves. */
  function clocked(): { quota: MemoryQuota; advance(ms: number): void } {
    let t = 1_000_000;
    return { quota: new MemoryQuota(() => t), advance: (ms) => (t += ms) };
  }

  it("counts a key's requests and refuses past its quota with 429, Retry-After and scope key", () => {
    const { quota, advance } = clocked();
    const uses: Array<[string, boolean]> = [];
    const gate = admission({ keys: keys(), quota, onKeyUse: (name, ok) => uses.push([name, ok]) });
    const ask = () => now(gate.admit(req('POST', CALL, { 'x-api-key': LIMITED })));
    expect([ask().ok, ask().ok]).toEqual([true, true]);
    const verdict = refused(ask());
    expect(verdict).toMatchObject({ kind: 'api', cors: true, rule: 'quota', key: { name: 'limited' } });
    expect(verdict.error).toMatchObject({
      code: 'RATE_LIMIT_EXCEEDED',
      status: 429,
      retryAfter: 30,
      details: { scope: 'key', retryAfter: 30, limitPerMinute: 2 },
    });
    expect(uses).toEqual([
      ['limited', true],
      ['limited', true],
      ['limited', false],
    ]);
    // Another key and keyless requests do not spend from it.
    expect(now(gate.admit(req('POST', CALL, { 'x-api-key': GOOD }))).ok).toBe(true);
    expect(now(gate.admit(req('POST', CALL))).ok).toBe(true);
    // Half a minute refills one of two tokens.
    advance(30_000);
    expect(ask().ok).toBe(true);
    expect(ask().ok).toBe(false);
  });

  it('counts keyless requests per client address, on API and node routes only', () => {
    const { quota } = clocked();
    const gate = admission({ anonymousPerMinute: 1, quota });
    expect(now(gate.admit(req('POST', CALL))).ok).toBe(true);
    const verdict = refused(now(gate.admit(req('GET', '/v2/info'))));
    expect(verdict).toMatchObject({ kind: 'node', rule: 'quota', clientId: '192.0.2.7' });
    expect(verdict.error.details).toMatchObject({ scope: 'client', limitPerMinute: 1 });
    expect(now(gate.admit(req('POST', CALL, {}, '192.0.2.8'))).ok).toBe(true);
    for (const [method, url] of [
      ['GET', '/health'],
      ['GET', '/explorer'],
      ['OPTIONS', CALL],
      ['GET', '/admin/cache/stats'],
    ] as const)
      expect(now(gate.admit(req(method, url))).ok, `${method} ${url}`).toBe(true);
  });

  it('gives a key its upstream gate, which refuses past upstreamPerMinute', () => {
    const { quota, advance } = clocked();
    const gate = admission({ keys: keys(), quota });
    const verdict = now(gate.admit(req('POST', CALL, { 'x-api-key': STINGY })));
    if (!verdict.ok || verdict.admitUpstream === undefined) throw new Error('expected an upstream gate');
    expect(verdict.admitUpstream()).toBeUndefined();
    expect(() => verdict.admitUpstream?.()).toThrow(/upstream requests per minute/);
    advance(60_000);
    expect(verdict.admitUpstream()).toBeUndefined();
    // One gate per key, made once.
    const again = now(gate.admit(req('POST', CALL, { 'x-api-key': STINGY })));
    expect(again.ok && again.admitUpstream).toBe(verdict.admitUpstream);
  });

  it('waits for a store that answers later (Redis) and remembers that verdict too', async () => {
    const later = laterQuota(5_000);
    const gate = admission({ keys: keys(), quota: later });
    const first = req('POST', CALL, { 'x-api-key': LIMITED });
    const pending = gate.admit(first);
    expect(pending).toBeInstanceOf(Promise);
    expect(verdictOf(first)).toBeUndefined();
    expect(await pending).toMatchObject({ ok: true, kind: 'api', key: { name: 'limited' } });
    expect(verdictOf(first)).toBe(await pending);
    await gate.admit(req('POST', CALL, { 'x-api-key': LIMITED }));
    const third = refused(await gate.admit(req('POST', CALL, { 'x-api-key': LIMITED })));
    expect(third.error).toMatchObject({ status: 429, retryAfter: 5 });
    // A key without a request quota never waits for the store.
    expect(gate.admit(req('POST', CALL, { 'x-api-key': GOOD }))).not.toBeInstanceOf(Promise);
  });
});

describe('one spelling per route', () => {
  const gate = admission({ adminToken: ADMIN_TOKEN, keys: keys(), keysRequired: true });

  it('rewrites the target to the spelling the router serves, and judges that route', () => {
    const r = req('POST', `/%63ontract-calls/read-only/SP000000000000000000002Q6VF78/pox-4/get-info?tip=`);
    expect(refused(now(gate.admit(r)))).toMatchObject({ kind: 'api', rule: 'api-key' });
    expect(r.url).toBe(`${CALL}?tip=`);
    const absolute = req('GET', 'http://host:3000/v2/info', { 'x-api-key': GOOD });
    expect(now(gate.admit(absolute))).toMatchObject({ ok: true, kind: 'node' });
    expect(absolute.url).toBe('/v2/info');
  });

  it('refuses other spellings of admin and ops routes, and dot segments, as NOT_FOUND', () => {
    for (const [url, kind, cors] of [
      ['/%61dmin/cache/stats', 'admin', false],
      ['/%6detrics', 'ops', true],
      ['/v2/../admin/cache/stats', 'node', true],
      ['//v2/info', 'open', true],
    ] as const) {
      const r = req('GET', url, bearer(ADMIN_TOKEN));
      const verdict = refused(now(gate.admit(r)));
      expect(verdict, url).toMatchObject({ kind, cors, rule: 'target' });
      expect(verdict.error, url).toMatchObject({ code: 'NOT_FOUND', status: 404 });
      expect(r.url, 'a refused target is left as sent').toBe(url);
    }
  });

  it('judges a refused OPTIONS as the preflight it was, so that no CORS header is added to its 404', () => {
    const verdict = refused(now(gate.admit(req('OPTIONS', '/v2/../v2/info'))));
    expect(verdict).toMatchObject({ kind: 'preflight', rule: 'target' });
  });
});
