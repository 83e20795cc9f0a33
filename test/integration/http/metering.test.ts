/**
 * Usage metered per key (docs/usage.md) over real HTTP: the Clarity-Cache-Cost of every kind of
 * answer (full path and fast-lane replays alike), the usage rows a known mix of requests adds
 * (exact figures: requests, units, upstream requests, the body bytes the client received),
 * reading them (GET /admin/usage, GET /usage, CSV), an event stream's units, rows that survive
 * a restart on SQLite, and rows that count exactly the access log's lines.
 */
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { Cl } from '@stacks/transactions';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { hex, INFO_VALUE, MAINNET_ADDR, SAMPLE_ABI, TESTNET_ADDR } from '../../support/fixtures.js';
import { type RunningGateway, startGateway, testEnv } from '../../support/gateway.js';
import { logLines, type ServiceProcess, startService } from '../../support/process.js';
import { tmpDir } from '../../unit/cache/tmp-dir.js';
import { ChainValues, COUNTER, counterRead, installContracts, subscribe } from '../watch/helpers.js';

const ALICE = 'k-alice-0123456789abcdef';
const BOB = 'k-bob-0123456789abcdef';
const LIMITED = 'k-limited-0123456789abcdef';
const WRONG = 'k-wrong-0123456789abcdef';
const TOKEN = 'admin-token-for-metering';
const ORIGIN = 'https://app.example';

const READ_ROUTE = '/contract-calls/read-only/{contractAddress}/{contractName}/{functionName}';
const CALL_READ_ROUTE = '/v2/contracts/call-read/{address}/{contract}/{function}';
const BATCH_ROUTE = '/contract-calls/batch';
const DECODE_ROUTE = '/contract-calls/decode-clarity-value';
const EVENTS_ROUTE = '/subscriptions/{id}/events';
const BALANCE_FN = `${MAINNET_ADDR}.demo::get-balance`;
const INFO_FN = `${MAINNET_ADDR}.demo::get-info`;

let node: FakeNode;
let keysFile: string;
const chain = new ChainValues();

beforeAll(async () => {
  node = await startFakeNode({ tipHeight: 100 });
  node.setAbi(MAINNET_ADDR, 'demo', SAMPLE_ABI);
  node.setReadOnly(MAINNET_ADDR, 'demo', 'get-balance', { okay: true, result: hex(Cl.ok(Cl.uint(7))) });
  node.setReadOnly(MAINNET_ADDR, 'demo', 'get-info', { okay: true, result: hex(INFO_VALUE) });
  chain.set('get-n', 0, 1);
  installContracts(node, chain);
  const { dir } = tmpDir('metering');
  keysFile = path.join(dir, 'keys.json');
  writeFileSync(
    keysFile,
    JSON.stringify([
      { name: 'alice', key: ALICE },
      { name: 'bob', key: BOB },
      { name: 'limited', key: LIMITED, requestsPerMinute: 3 },
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

async function start(env: Record<string, string> = {}): Promise<RunningGateway> {
  const gw = await startGateway(
    testEnv(node.url, {
      API_KEYS_FILE: keysFile,
      ADMIN_TOKEN: TOKEN,
      CORS_ORIGINS: ORIGIN,
      ...env,
    }),
  );
  running.push(gw);
  return gw;
}

// --- requests -----------------------------------------------------------------------------------

interface Answer {
  readonly status: number;
  readonly headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: envelopes of every shape
  readonly body: any;
  readonly text: string;
  /** Body bytes as the client received them. */
  readonly bytes: number;
  readonly cost: string | null;
}

async function call(
  url: string,
  init: { method?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const hasBody = init.body !== undefined || init.rawBody !== undefined;
  const res = await fetch(url, {
    method: init.method ?? (hasBody ? 'POST' : 'GET'),
    headers: { ...(hasBody ? { 'content-type': 'application/json' } : {}), ...init.headers },
    ...(hasBody ? { body: init.rawBody ?? JSON.stringify(init.body) } : {}),
  });
  const raw = Buffer.from(await res.arrayBuffer());
  const text = raw.toString('utf8');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return {
    status: res.status,
    headers: res.headers,
    body,
    text,
    bytes: raw.length,
    cost: res.headers.get('clarity-cache-cost'),
  };
}

const key = (k: string) => ({ 'x-api-key': k });
const admin = { authorization: `Bearer ${TOKEN}` };

const readUrl = (base: string, fn = 'get-balance') =>
  `${base}/contract-calls/read-only/${MAINNET_ADDR}/demo/${fn}`;
/** A distinct get-balance call per `n` (the lane and the cache hold answers per exact body). */
const balanceBody = (n: number) => ({
  functionArgs: [{ type: 'principal', value: n === 0 ? MAINNET_ADDR : `${MAINNET_ADDR}.c${n}` }],
});
const batchCall = (n: number, fn = 'get-balance') => ({
  contractAddress: MAINNET_ADDR,
  contractName: 'demo',
  functionName: fn,
  functionArgs: fn === 'get-balance' ? balanceBody(n).functionArgs : [],
});
const callReadPath = (prefix = '') => `${prefix}/v2/contracts/call-read/${MAINNET_ADDR}/demo/get-balance`;
const callReadBody = (n: number) => ({
  sender: MAINNET_ADDR,
  arguments: [hex(Cl.principal(`${MAINNET_ADDR}.n${n}`))],
});
const decodeBody = { clarityValue: hex(Cl.uint(5)) };

function cacheStatus(a: Answer): string {
  return a.headers.get('cache-status') ?? '';
}

// --- usage rows -----------------------------------------------------------------------------------

interface Row {
  key?: string | null;
  day?: string;
  route?: string;
  function?: string;
  outcome?: string;
  requests: number;
  units: number;
  upstreamRequests: number;
  bytesSent: number;
}

/** What one request should add to the rows (the test's own model of docs/usage.md). */
interface Expected {
  readonly key: string | null;
  readonly route: string;
  readonly function: string;
  readonly outcome: 'hit' | 'miss' | 'error' | 'refused';
  readonly units: number;
  readonly upstreamRequests: number;
  readonly bytesSent: number;
  readonly requests?: number;
}

/** The row one answer about BALANCE_FN adds (its bytes apart). */
function balance(
  key: string | null,
  route: string,
  outcome: Expected['outcome'],
  units: number,
  upstreamRequests: number,
): Omit<Expected, 'bytesSent'> {
  return { key, route, function: BALANCE_FN, outcome, units, upstreamRequests };
}

function compare(a: string | null | undefined, b: string | null | undefined): number {
  if (a === b) return 0;
  if (a === null || a === undefined) return -1;
  if (b === null || b === undefined) return 1;
  return a < b ? -1 : 1;
}

/** The rows a list of requests gives, grouped by key, route, function, outcome and sorted. */
function tally(list: readonly Expected[]): Row[] {
  const rows = new Map<string, Row>();
  for (const e of list) {
    const id = JSON.stringify([e.key, e.route, e.function, e.outcome]);
    const row = rows.get(id) ?? {
      key: e.key,
      route: e.route,
      function: e.function,
      outcome: e.outcome,
      requests: 0,
      units: 0,
      upstreamRequests: 0,
      bytesSent: 0,
    };
    row.requests += e.requests ?? 1;
    row.units += e.units;
    row.upstreamRequests += e.upstreamRequests;
    row.bytesSent += e.bytesSent;
    rows.set(id, row);
  }
  return [...rows.values()].sort(
    (a, b) =>
      compare(a.key, b.key) ||
      compare(a.route, b.route) ||
      compare(a.function, b.function) ||
      compare(a.outcome, b.outcome),
  );
}

function totalsOf(rows: readonly Row[]): Omit<Row, 'key' | 'route' | 'function' | 'outcome' | 'day'> {
  const t = { requests: 0, units: 0, upstreamRequests: 0, bytesSent: 0 };
  for (const r of rows) {
    t.requests += r.requests;
    t.units += r.units;
    t.upstreamRequests += r.upstreamRequests;
    t.bytesSent += r.bytesSent;
  }
  return t;
}

async function adminUsage(base: string, query: string): Promise<Answer> {
  return call(`${base}/admin/usage?${query}`, { headers: admin });
}

async function adminRows(base: string, query = 'groupBy=key,route,function,outcome'): Promise<Row[]> {
  const res = await adminUsage(base, query);
  expect(res.status, res.text).toBe(200);
  return res.body.data.rows;
}

const today = () => new Date().toISOString().slice(0, 10);
const dayOffset = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10);

// --- costs ----------------------------------------------------------------------------------------

describe('Clarity-Cache-Cost', () => {
  it('is 10 for a miss, 1 for a hit on the full path and on a fast-lane replay, and 1 for a decode', async () => {
    const gw = await start();
    const miss = await call(readUrl(gw.url), { body: balanceBody(1) });
    expect(cacheStatus(miss)).toContain('fwd=miss');
    expect(miss.cost).toBe('10');
    const hit = await call(readUrl(gw.url), { body: balanceBody(1) });
    expect(cacheStatus(hit)).toContain('; hit');
    expect(gw.gateway.lane.served).toBe(0);
    expect(hit.cost).toBe('1');
    const replay = await call(readUrl(gw.url), { body: balanceBody(1) });
    expect(gw.gateway.lane.served).toBe(1);
    expect(replay.cost).toBe('1');
    const decoded = [
      await call(`${gw.url}${DECODE_ROUTE}`, { body: decodeBody }),
      await call(`${gw.url}${DECODE_ROUTE}`, { body: decodeBody }),
      await call(`${gw.url}${DECODE_ROUTE}`, { body: decodeBody }),
    ];
    expect(decoded.map((d) => d.status)).toEqual([200, 200, 200]);
    expect(decoded.map((d) => d.cost)).toEqual(['1', '1', '1']);
    // A decode is pure: the lane replays it from the second on.
    expect(gw.gateway.lane.served).toBe(3);
  });

  it('is the node route’s too: call-read 10 on a miss, 1 on a hit and on a replay, in its /mainnet form too', async () => {
    const gw = await start();
    const url = `${gw.url}${callReadPath()}`;
    const miss = await call(url, { body: callReadBody(1) });
    expect(miss.status).toBe(200);
    expect(miss.body).toEqual({ okay: true, result: hex(Cl.ok(Cl.uint(7))) });
    expect(miss.cost).toBe('10');
    const hit = await call(url, { body: callReadBody(1) });
    expect(cacheStatus(hit)).toContain('; hit');
    expect(hit.cost).toBe('1');
    const before = gw.gateway.lane.served;
    const replay = await call(url, { body: callReadBody(1) });
    expect(gw.gateway.lane.served).toBe(before + 1);
    expect(replay.cost).toBe('1');
    const prefixedMiss = await call(`${gw.url}${callReadPath('/mainnet')}`, { body: callReadBody(2) });
    expect(prefixedMiss.cost).toBe('10');
    // Another node route (the generic cached read): the same rule.
    const infoMiss = await call(`${gw.url}/v2/info`);
    expect(infoMiss.status).toBe(200);
    expect(infoMiss.cost).toBe(cacheStatus(infoMiss).includes('; hit') ? '1' : '10');
  });

  it('of a batch is the sum of its items’ (a failed item: 0)', async () => {
    const gw = await start();
    expect((await call(readUrl(gw.url), { body: balanceBody(1) })).cost).toBe('10');
    const batch = await call(`${gw.url}${BATCH_ROUTE}`, {
      body: { calls: [batchCall(1), batchCall(2), batchCall(3, 'no-such-fn')] },
    });
    expect(batch.status).toBe(200);
    const items = batch.body.data.results ?? batch.body.data;
    expect(JSON.stringify(items)).toContain('INVALID_FUNCTION');
    expect(batch.cost).toBe(String(1 + 10 + 0));
    // Every item from the cache now: 1 + 1, the failed one still 0.
    const again = await call(`${gw.url}${BATCH_ROUTE}`, {
      body: { calls: [batchCall(1), batchCall(2), batchCall(4, 'no-such-fn')] },
    });
    expect(again.cost).toBe('2');
    // A batch of failed items only: nothing.
    const failed = await call(`${gw.url}${BATCH_ROUTE}`, { body: { calls: [batchCall(5, 'no-such-fn')] } });
    expect(failed.cost).toBe('0');
    // A batch refused whole (not a list): an error, 0.
    const invalid = await call(`${gw.url}${BATCH_ROUTE}`, { body: { calls: 'no' } });
    expect(invalid.status).toBe(400);
    expect(invalid.cost).toBe('0');
  });

  it('is 0 for an error and for refusals: 401 for a bad key, 429 past a requestsPerMinute quota', async () => {
    const gw = await start();
    const invalid = await call(readUrl(gw.url), { body: { functionArgs: 'no' } });
    expect(invalid.status).toBe(400);
    expect(invalid.cost).toBe('0');
    const unknownNodeRoute = await call(`${gw.url}/v2/no-such-route`);
    expect(unknownNodeRoute.status).toBe(404);
    expect(unknownNodeRoute.cost).toBe('0');
    node.status5xx(500, { kind: 'call-read' });
    try {
      const upstreamDown = await call(readUrl(gw.url), { body: balanceBody(9) });
      expect(upstreamDown.status).toBeGreaterThanOrEqual(500);
      expect(upstreamDown.cost).toBe('0');
    } finally {
      node.clearFaults();
    }
    const badKey = await call(readUrl(gw.url), { body: balanceBody(1), headers: key(WRONG) });
    expect(badKey.status).toBe(401);
    expect(badKey.cost).toBe('0');
    // Three admitted (a miss, a hit, a replay), then refused on the lane's answer and on the routes'.
    const limited = [];
    for (let i = 0; i < 3; i++)
      limited.push(await call(readUrl(gw.url), { body: balanceBody(1), headers: key(LIMITED) }));
    expect(limited.map((l) => [l.status, l.cost])).toEqual([
      [200, '10'],
      [200, '1'],
      [200, '1'],
    ]);
    expect(gw.gateway.lane.served).toBe(1);
    for (const n of [1, 77]) {
      const refused = await call(readUrl(gw.url), { body: balanceBody(n), headers: key(LIMITED) });
      expect(refused.status).toBe(429);
      expect(refused.cost).toBe('0');
    }
  });

  it('follows COST_HIT, COST_MISS and COST_DECODE', async () => {
    const gw = await start({ COST_HIT: '3', COST_MISS: '7', COST_DECODE: '5' });
    const costs = [];
    for (let i = 0; i < 3; i++) costs.push((await call(readUrl(gw.url), { body: balanceBody(1) })).cost);
    expect(gw.gateway.lane.served).toBe(1);
    expect(costs).toEqual(['7', '3', '3']);
    const decode = [];
    for (let i = 0; i < 3; i++)
      decode.push((await call(`${gw.url}${DECODE_ROUTE}`, { body: decodeBody })).cost);
    expect(gw.gateway.lane.served).toBe(3);
    expect(decode).toEqual(['5', '5', '5']);
    const batch = await call(`${gw.url}${BATCH_ROUTE}`, {
      body: { calls: [batchCall(1), batchCall(2), batchCall(3, 'no-such-fn')] },
    });
    expect(batch.cost).toBe(String(3 + 7 + 0));
    expect((await call(`${gw.url}${callReadPath()}`, { body: callReadBody(1) })).cost).toBe('7');
    expect((await call(`${gw.url}${callReadPath()}`, { body: callReadBody(1) })).cost).toBe('3');
  });

  it('is never on /health, /admin/* or /usage, and CORS exposes it', async () => {
    const gw = await start();
    for (const [url, headers] of [
      [`${gw.url}/health`, {}],
      [`${gw.url}/admin/keys`, admin],
      [`${gw.url}/admin/usage`, admin],
      [`${gw.url}/usage`, key(ALICE)],
      [`${gw.url}/usage`, {}],
    ] as const) {
      const res = await call(url, { headers });
      expect(res.status, url).toBeLessThan(500);
      expect(res.cost, url).toBeNull();
    }
    const cors = await call(readUrl(gw.url), { body: balanceBody(1), headers: { origin: ORIGIN } });
    expect(cors.cost).toBe('10');
    expect(cors.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    const exposed = (cors.headers.get('access-control-expose-headers') ?? '').split(/,\s*/);
    expect(exposed).toContain('Clarity-Cache-Cost');
    // A replay keeps the exposure.
    await call(readUrl(gw.url), { body: balanceBody(1), headers: { origin: ORIGIN } });
    const replay = await call(readUrl(gw.url), { body: balanceBody(1), headers: { origin: ORIGIN } });
    expect(gw.gateway.lane.served).toBe(1);
    expect((replay.headers.get('access-control-expose-headers') ?? '').split(/,\s*/)).toContain(
      'Clarity-Cache-Cost',
    );
  });
});

// --- rows -----------------------------------------------------------------------------------------

/**
 * A known mix of requests on a fresh gateway: keys and anonymous, misses and hits (full path
 * and replays), node routes in both forms, a batch, errors and refusals, and routes never
 * metered in between. Returns what each metered request should add.
 */
async function knownMix(gw: RunningGateway): Promise<Expected[]> {
  const out: Expected[] = [];
  const expectCost = (a: Answer, e: Omit<Expected, 'bytesSent'>) => {
    expect(a.cost, JSON.stringify(e)).toBe(String(e.units));
    out.push({ ...e, bytesSent: a.bytes });
  };
  const lane = () => gw.gateway.lane.served;

  // alice: a miss (its ABI and its call: 2 upstream requests), a hit, a replay.
  let a = await call(readUrl(gw.url), { body: balanceBody(1), headers: key(ALICE) });
  expect(cacheStatus(a)).toContain('fwd=miss');
  expectCost(a, balance('alice', READ_ROUTE, 'miss', 10, 2));
  a = await call(readUrl(gw.url), { body: balanceBody(1), headers: key(ALICE) });
  expectCost(a, balance('alice', READ_ROUTE, 'hit', 1, 0));
  let served = lane();
  a = await call(readUrl(gw.url), { body: balanceBody(1), headers: key(ALICE) });
  expect(lane()).toBe(served + 1);
  expectCost(a, balance('alice', READ_ROUTE, 'hit', 1, 0));

  // Never metered, in between.
  expect((await call(`${gw.url}/health`)).status).toBe(200);
  expect((await call(`${gw.url}/admin/keys`, { headers: admin })).status).toBe(200);
  expect((await call(`${gw.url}/usage`, { headers: key(ALICE) })).status).toBe(200);

  // anonymous: a miss of another function (its ABI is held: 1 upstream request).
  a = await call(readUrl(gw.url, 'get-info'), { rawBody: '{"functionArgs":[]}' });
  expectCost(a, {
    key: null,
    route: READ_ROUTE,
    function: INFO_FN,
    outcome: 'miss',
    units: 10,
    upstreamRequests: 1,
  });
  // anonymous: the node's call-read in its /mainnet form, then its plain form: one template.
  a = await call(`${gw.url}${callReadPath('/mainnet')}`, { body: callReadBody(1) });
  expect(a.status).toBe(200);
  expectCost(a, balance(null, CALL_READ_ROUTE, 'miss', 10, 1));
  a = await call(`${gw.url}${callReadPath()}`, { body: callReadBody(1) });
  expect(cacheStatus(a)).toContain('; hit');
  expectCost(a, balance(null, CALL_READ_ROUTE, 'hit', 1, 0));
  a = await call(`${gw.url}${callReadPath('/mainnet')}`, { body: callReadBody(2) });
  expectCost(a, balance(null, CALL_READ_ROUTE, 'miss', 10, 1));

  // bob: a batch (a hit, a miss, a failed item), an error.
  a = await call(`${gw.url}${BATCH_ROUTE}`, {
    body: { calls: [batchCall(1), batchCall(2), batchCall(3, 'no-such-fn')] },
    headers: key(BOB),
  });
  expect(a.status).toBe(200);
  expectCost(a, {
    key: 'bob',
    route: BATCH_ROUTE,
    function: '',
    outcome: 'miss',
    units: 11,
    upstreamRequests: 1,
  });
  a = await call(readUrl(gw.url), { body: { functionArgs: 'no' }, headers: key(BOB) });
  expect(a.status).toBe(400);
  expectCost(a, balance('bob', READ_ROUTE, 'error', 0, 0));

  // anonymous: a bad key (counted as anonymous, refused), an unknown node route (an error), a decode.
  a = await call(readUrl(gw.url), { body: balanceBody(1), headers: key(WRONG) });
  expect(a.status).toBe(401);
  expectCost(a, balance(null, READ_ROUTE, 'refused', 0, 0));
  a = await call(`${gw.url}/v2/no-such-route`);
  expect(a.status).toBe(404);
  expectCost(a, { key: null, route: '/v2/*', function: '', outcome: 'error', units: 0, upstreamRequests: 0 });
  a = await call(`${gw.url}${DECODE_ROUTE}`, { body: decodeBody });
  expectCost(a, {
    key: null,
    route: DECODE_ROUTE,
    function: '',
    outcome: 'hit',
    units: 1,
    upstreamRequests: 0,
  });

  // limited: three replays of alice's answer, then refused on the lane's path and on the routes'.
  served = lane();
  for (let i = 0; i < 3; i++) {
    a = await call(readUrl(gw.url), { body: balanceBody(1), headers: key(LIMITED) });
    expectCost(a, balance('limited', READ_ROUTE, 'hit', 1, 0));
  }
  expect(lane()).toBe(served + 3);
  for (const n of [1, 2]) {
    a = await call(readUrl(gw.url), { body: balanceBody(n), headers: key(LIMITED) });
    expect(a.status).toBe(429);
    expectCost(a, balance('limited', READ_ROUTE, 'refused', 0, 0));
  }
  return out;
}

describe('usage rows', () => {
  it('after a known mix, GET /admin/usage?groupBy=key,route,function,outcome has exactly its figures', async () => {
    const gw = await start();
    const before = node.total;
    const mix = await knownMix(gw);
    const expected = tally(mix);
    const res = await adminUsage(gw.url, 'groupBy=key,route,function,outcome');
    expect(res.status).toBe(200);
    expect(res.cost).toBeNull();
    expect(res.body.data).toMatchObject({
      from: dayOffset(-89),
      to: today(),
      groupBy: ['key', 'route', 'function', 'outcome'],
    });
    expect(res.body.data.rows).toEqual(expected);
    expect(res.body.data.totals).toEqual(totalsOf(expected));
    // Every call-read and ABI request the node saw was one of these answers' (a GET /v2/info
    // of the chain tracker's, learning the tip, is the gateway's own, no answer's).
    const exchanges = node.requests.slice(before).filter((r) => r.kind !== 'info');
    expect(exchanges.map((r) => r.kind)).toEqual(['interface', ...Array(5).fill('call-read')]);
    expect(res.body.data.totals.upstreamRequests).toBe(exchanges.length);
    expect(res.body.data.totals.requests).toBe(mix.length);

    // key=- selects the anonymous rows, a name that key's.
    expect(await adminRows(gw.url, 'groupBy=key,route,function,outcome&key=-')).toEqual(
      expected.filter((r) => r.key === null),
    );
    expect(await adminRows(gw.url, 'groupBy=key,route,function,outcome&key=bob')).toEqual(
      expected.filter((r) => r.key === 'bob'),
    );
    // The default grouping: key and day.
    const byDay = await adminRows(gw.url, '');
    expect(byDay).toEqual(
      [null, 'alice', 'bob', 'limited'].map((k) => ({
        key: k,
        day: today(),
        ...totalsOf(expected.filter((r) => r.key === k)),
      })),
    );
  });

  it('filters by from and to (UTC days, inclusive)', async () => {
    const gw = await start();
    const mix = await knownMix(gw);
    const all = totalsOf(tally(mix));
    const q = (range: string) => adminUsage(gw.url, `groupBy=outcome&${range}`);
    const zero = { requests: 0, units: 0, upstreamRequests: 0, bytesSent: 0 };
    for (const [range, totals] of [
      [`from=${today()}&to=${today()}`, all],
      [`from=${today()}`, all],
      [`to=${today()}`, all],
      [`from=${dayOffset(1)}&to=${dayOffset(2)}`, zero],
      [`from=${dayOffset(-3)}&to=${dayOffset(-1)}`, zero],
      [`from=${dayOffset(-1)}&to=${dayOffset(1)}`, all],
    ] as const) {
      const res = await q(range);
      expect(res.status, range).toBe(200);
      expect(res.body.data.totals, range).toEqual(totals);
      expect(res.body.data.rows.length === 0, range).toBe(totals.requests === 0);
    }
  });

  it('refuses a bad groupBy, from or to with 400 VALIDATION_ERROR', async () => {
    const gw = await start();
    const seen: Array<[string, number, string | undefined]> = [];
    for (const query of [
      'groupBy=key,nope',
      'groupBy=key,key',
      'groupBy=bytesSent',
      'from=2026-13-01',
      'from=2026-02-30',
      'to=yesterday',
      'from=20261127',
      `from=${dayOffset(1)}&to=${today()}`,
    ]) {
      const res = await adminUsage(gw.url, query);
      seen.push([query, res.status, res.body?.error?.code]);
    }
    expect(seen).toEqual(seen.map(([query]) => [query, 400, 'VALIDATION_ERROR']));
    // The same on GET /usage.
    const own = await call(`${gw.url}/usage?groupBy=nope`, { headers: key(ALICE) });
    expect(own.status).toBe(400);
    expect(own.body.error.code).toBe('VALIDATION_ERROR');
  });

  it('answers RFC 4180 CSV with a header row to Accept: text/csv', async () => {
    const gw = await start();
    const expected = tally(await knownMix(gw));
    const res = await call(`${gw.url}/admin/usage?groupBy=key,route,function,outcome`, {
      headers: { ...admin, accept: 'text/csv' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/csv\b/);
    expect(res.text.endsWith('\r\n')).toBe(true);
    const lines = res.text.slice(0, -2).split('\r\n');
    expect(lines.some((l) => l.includes('\n'))).toBe(false);
    expect(lines[0]).toBe('key,route,function,outcome,requests,units,upstreamRequests,bytesSent');
    expect(lines.slice(1)).toEqual(
      expected.map((r) =>
        [
          r.key ?? '',
          r.route,
          r.function,
          r.outcome,
          r.requests,
          r.units,
          r.upstreamRequests,
          r.bytesSent,
        ].join(','),
      ),
    );
    // GET /usage too, the caller's rows only.
    const own = await call(`${gw.url}/usage?groupBy=outcome`, {
      headers: { ...key(BOB), accept: 'text/csv' },
    });
    expect(own.status).toBe(200);
    // groupBy=outcome: sorted by outcome.
    const bob = expected.filter((r) => r.key === 'bob').sort((x, y) => compare(x.outcome, y.outcome));
    expect(own.text).toBe(
      `outcome,requests,units,upstreamRequests,bytesSent\r\n${bob
        .map((r) => `${r.outcome},${r.requests},${r.units},${r.upstreamRequests},${r.bytesSent}`)
        .join('\r\n')}\r\n`,
    );
  });
});

// --- GET /usage -----------------------------------------------------------------------------------

describe('GET /usage', () => {
  it('is 401 without a key and with a bad one', async () => {
    const gw = await start();
    const none = await call(`${gw.url}/usage`);
    expect(none.status).toBe(401);
    expect(none.body.error.code).toBe('UNAUTHORIZED');
    const bad = await call(`${gw.url}/usage`, { headers: key(WRONG) });
    expect(bad.status).toBe(401);
    expect(bad.body.error.code).toBe('UNAUTHORIZED');
    const bearer = await call(`${gw.url}/usage`, { headers: { authorization: `Bearer ${WRONG}` } });
    expect(bearer.status).toBe(401);
    // Neither is a row: nothing was metered.
    expect(await adminRows(gw.url)).toEqual([]);
  });

  it('answers the caller’s own rows only, is not metered itself, and spends no quota', async () => {
    const gw = await start();
    const expected = tally(await knownMix(gw));
    const adminBefore = await adminUsage(gw.url, 'groupBy=key,route,function,outcome');
    for (const [k, name] of [
      [ALICE, 'alice'],
      [BOB, 'bob'],
      [LIMITED, 'limited'],
    ] as const) {
      const own = await call(`${gw.url}/usage?groupBy=key,route,function,outcome`, { headers: key(k) });
      expect(own.status).toBe(200);
      expect(own.body.data.rows).toEqual(expected.filter((r) => r.key === name));
      expect(own.body.data.totals).toEqual(totalsOf(expected.filter((r) => r.key === name)));
      // Bearer too, and ?key= cannot read another key's rows.
      const other = await call(`${gw.url}/usage?groupBy=key,outcome&key=-`, {
        headers: { authorization: `Bearer ${k}` },
      });
      expect(other.status).toBe(200);
      expect(other.body.data.rows.map((r: Row) => r.key)).toEqual(
        [...new Set(expected.filter((r) => r.key === name).map((r) => r.outcome))].map(() => name),
      );
      expect(other.body.data.totals).toEqual(own.body.data.totals);
    }
    // None of those requests added a row.
    const adminAfter = await adminUsage(gw.url, 'groupBy=key,route,function,outcome');
    expect(adminAfter.body.data).toEqual(adminBefore.body.data);

    // `limited` is past its 3 requests a minute, and /usage still answers it, again and again.
    for (let i = 0; i < 5; i++) {
      expect((await call(`${gw.url}/usage`, { headers: key(LIMITED) })).status).toBe(200);
    }
    const keys = await call(`${gw.url}/admin/keys`, { headers: admin });
    const limited = keys.body.data.keys.find((u: { name: string }) => u.name === 'limited');
    expect(limited).toMatchObject({ windowAdmitted: 3, windowRefused: 2 });
  });

  it('spends none of a fresh key’s quota: its three requests a minute stay after many /usage reads', async () => {
    const gw = await start();
    for (let i = 0; i < 6; i++) {
      expect((await call(`${gw.url}/usage`, { headers: key(LIMITED) })).status).toBe(200);
    }
    const statuses = [];
    for (let i = 0; i < 4; i++) {
      statuses.push((await call(readUrl(gw.url), { body: balanceBody(i), headers: key(LIMITED) })).status);
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
  });
});

// --- an event stream ------------------------------------------------------------------------------

interface RawStream {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  /** Each event block as received (comments and the retry line are not events). */
  readonly events: string[];
  /** Resolves once `n` events have arrived. */
  events$(n: number): Promise<void>;
  /** Resolves once the stream is over (ended by the server or closed here). */
  readonly ended: Promise<void>;
  close(): void;
}

/** An event stream read over node:http, keeping each event's exact text (its bytes are metered). */
function openStream(url: string, headers: Record<string, string>): Promise<RawStream> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers: { accept: 'text/event-stream', ...headers } }, (res) => {
      const events: string[] = [];
      const waiters: Array<() => void> = [];
      let buffer = '';
      const ended = new Promise<void>((done) => {
        res.once('close', done);
        res.once('end', done);
      });
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let cut = buffer.indexOf('\n\n');
        while (cut >= 0) {
          const block = buffer.slice(0, cut + 2);
          buffer = buffer.slice(cut + 2);
          if (block.startsWith('event:')) events.push(block);
          cut = buffer.indexOf('\n\n');
        }
        for (const w of waiters.splice(0)) w();
      });
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        events,
        events$(n) {
          return new Promise<void>((done, fail) => {
            const timer = setTimeout(
              () => fail(new Error(`fewer than ${n} events: ${JSON.stringify(events)}`)),
              20_000,
            );
            const look = (): void => {
              if (events.length >= n) {
                clearTimeout(timer);
                done();
              } else waiters.push(look);
            };
            look();
          });
        },
        ended,
        close: () => req.destroy(),
      });
    });
    req.on('error', reject);
  });
}

describe('an event stream', () => {
  /** No event observer: the gateway polls the node's tip this often while a stream is open. */
  const POLLING = { CHAIN_TIP_MAX_AGE_MS: '200' };
  const eventsRow = async (gw: RunningGateway) =>
    (await adminRows(gw.url, 'groupBy=key,route,outcome&key=alice')).find((r) => r.route === EVENTS_ROUTE);
  const bytes = (stream: RawStream, n = stream.events.length) =>
    stream.events.slice(0, n).reduce((s, e) => s + Buffer.byteLength(e), 0);
  const row = (requests: number, units: number, bytesSent: number) => ({
    key: 'alice',
    route: EVENTS_ROUTE,
    outcome: 'hit',
    requests,
    units,
    upstreamRequests: 0,
    bytesSent,
  });

  /** A stream of alice's, open, its first event read, and a second one at the next block. */
  async function twoEvents(gw: RunningGateway): Promise<{ stream: RawStream; id: string }> {
    const sub = await subscribe(gw.url, [counterRead()], key(ALICE));
    const stream = await openStream(`${gw.url}${sub.events}`, key(ALICE));
    expect(stream.status).toBe(200);
    expect(stream.headers['clarity-cache-cost']).toBe('0');
    await stream.events$(1);
    expect(await eventsRow(gw)).toEqual(row(0, 1, bytes(stream, 1)));
    // A change at the next block: a second event, one more unit and its bytes.
    chain.set('get-n', node.tipHeight + 1, chain.at('get-n', node.tipHeight) + 1);
    node.mine();
    await stream.events$(2);
    expect(stream.events[1]).toMatch(/^event: values\n/);
    expect(await eventsRow(gw)).toEqual(row(0, 2, bytes(stream, 2)));
    return { stream, id: sub.id };
  }

  it('costs 0 to open and 1 unit and its bytes per event; ended by the gateway, its request is counted once', async () => {
    const gw = await start(POLLING);
    const { stream, id } = await twoEvents(gw);
    try {
      // Deleted: a last `error` event (a unit too), and the stream ends.
      const deleted = await call(`${gw.url}/subscriptions/${id}`, { method: 'DELETE', headers: key(ALICE) });
      expect(deleted.status).toBe(200);
      await stream.events$(3);
      expect(stream.events[2]).toMatch(/^event: error\n/);
      await stream.ended;
      await expect.poll(async () => (await eventsRow(gw))?.requests).toBe(1);
      expect(await eventsRow(gw)).toEqual(row(1, 3, bytes(stream)));
      // Its creation is a row of its own, as its header said.
      const created = (await adminRows(gw.url, 'groupBy=key,route&key=alice')).find(
        (r) => r.route === '/subscriptions',
      );
      expect(created?.requests).toBe(1);
    } finally {
      stream.close();
    }
  });

  it('left by its client, its request is counted once, with no units or bytes of its own', async () => {
    const gw = await start(POLLING);
    const { stream } = await twoEvents(gw);
    stream.close();
    await stream.ended;
    await expect.poll(async () => (await eventsRow(gw))?.requests).toBe(1);
    expect(await eventsRow(gw)).toEqual(row(1, 2, bytes(stream)));
  });
});

describe('rows that last', () => {
  it('survive a restart on SQLite', async () => {
    const { dir, remove } = tmpDir('metering-sqlite');
    try {
      const env = { CACHE_STORE: 'sqlite', DATA_DIR: dir };
      const first = await start(env);
      const mix: Expected[] = [];
      let a = await call(readUrl(first.url), { body: balanceBody(1), headers: key(ALICE) });
      mix.push({ ...balance('alice', READ_ROUTE, 'miss', 10, 2), bytesSent: a.bytes });
      a = await call(readUrl(first.url), { body: balanceBody(1), headers: key(ALICE) });
      mix.push({ ...balance('alice', READ_ROUTE, 'hit', 1, 0), bytesSent: a.bytes });
      a = await call(readUrl(first.url), { body: { functionArgs: 'no' } });
      mix.push({ ...balance(null, READ_ROUTE, 'error', 0, 0), bytesSent: a.bytes });
      const expected = tally(mix);
      expect(await adminRows(first.url)).toEqual(expected);
      // Closed before the first flush could run: the close writes them.
      await first.close();
      running.splice(running.indexOf(first), 1);

      const second = await start(env);
      expect(await adminRows(second.url)).toEqual(expected);
      // And the new instance adds to them.
      a = await call(readUrl(second.url), { body: balanceBody(1), headers: key(ALICE) });
      mix.push({ ...balance('alice', READ_ROUTE, 'hit', 1, 0), bytesSent: a.bytes });
      expect(await adminRows(second.url)).toEqual(tally(mix));
    } finally {
      for (const r of running.splice(0).reverse()) await r.close();
      remove();
    }
  });

  describe('in a service process', () => {
    let svc: ServiceProcess | undefined;
    afterAll(async () => {
      await svc?.stop();
    });

    it('count as many requests as the access log has lines for metered routes', async () => {
      svc = await startService({
        LOG_LEVEL: 'info',
        CACHE_STORE: 'memory',
        API_KEYS_FILE: keysFile,
        ADMIN_TOKEN: TOKEN,
        STACKS_API_URL_MAINNET: node.url,
        STACKS_API_URL_TESTNET: node.url,
        UPSTREAM_RETRY_BASE_MS: '1',
        UPSTREAM_RATE_LIMIT_PER_MINUTE: '100000',
      });
      const base = svc.url;
      let metered = 0;
      const ask = async (url: string, init: Parameters<typeof call>[1] = {}) => {
        const res = await call(`${base}${url}`, init);
        if (res.cost !== null) metered++;
        return res;
      };
      const read = `/contract-calls/read-only/${MAINNET_ADDR}/demo/get-balance`;
      for (let i = 0; i < 4; i++) await ask(read, { body: balanceBody(1), headers: key(ALICE) }); // miss, hit, replays
      for (let i = 0; i < 5; i++) await ask(read, { body: balanceBody(i), headers: key(LIMITED) }); // 3 then 429s
      await ask(read, { body: balanceBody(1), headers: key(WRONG) });
      await ask(read, { body: { functionArgs: 'no' } });
      await ask(BATCH_ROUTE, { body: { calls: [batchCall(1), batchCall(9), batchCall(3, 'no-such-fn')] } });
      await ask(`/testnet/v2/contracts/call-read/${TESTNET_ADDR}/${COUNTER}/get-n`, {
        body: { sender: TESTNET_ADDR, arguments: [] },
      });
      await ask(callReadPath(), { body: callReadBody(1) });
      await ask('/v2/no-such-route');
      for (let i = 0; i < 3; i++) await ask(DECODE_ROUTE, { body: decodeBody });
      await ask('/health');
      await ask('/usage', { headers: key(ALICE) });
      await ask('/admin/keys', { headers: admin });
      expect(metered).toBe(4 + 5 + 1 + 1 + 1 + 1 + 1 + 1 + 3);

      const isMetered = (url: string) =>
        /^\/(contract-calls|subscriptions|v2|v3|mainnet|testnet)\//.test(url);
      const accessLines = () =>
        logLines(svc!).filter((l) => l.msg === 'request' && typeof l.url === 'string' && isMetered(l.url));
      await expect.poll(() => accessLines().length).toBe(metered);
      const res = await call(`${base}/admin/usage?groupBy=outcome`, { headers: admin });
      expect(res.status).toBe(200);
      expect(res.body.data.totals.requests).toBe(accessLines().length);
      expect(res.body.data.rows.map((r: Row) => [r.outcome, r.requests])).toEqual([
        // a bad body, an unknown node route
        ['error', 2],
        // alice's hit and replays, limited's one hit, the decodes
        ['hit', 3 + 1 + 3],
        // alice's miss, limited's two, the batch, two call-reads
        ['miss', 1 + 2 + 1 + 2],
        // the bad key, limited's two past its quota
        ['refused', 3],
      ]);
    });
  });
});
