import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway } from '../../src/app.js';
import { loadConfig } from '../../src/config/index.js';
import type { FakeNode } from '../support/fake-node.js';
import { MAINNET_ADDR } from '../support/fixtures.js';
import { type RunningGateway, testEnv } from '../support/gateway.js';
import { keyedDemo } from '../support/keyed-demo.js';
import { spawnNode } from '../support/process.js';

const ALICE = 'k-alice-usage-0123456789abcdef';
const BOB = 'k-bob-usage-0123456789abcdef';
const TOKEN = 'admin-token-for-cli-usage';
const DEMO = `${MAINNET_ADDR}.demo`;
const FIGURES = ['requests', 'units', 'upstreamRequests', 'bytesSent'] as const;

let node: FakeNode;
let gw: RunningGateway;
/** Requests the gateway received on its usage routes. */
const usageRequests: string[] = [];
/** A server that answers every path with an HTML page: no gateway. */
let page: http.Server;
let pageUrl: string;

async function call(fn: string, key?: string): Promise<void> {
  const res = await fetch(`${gw.url}/contract-calls/read-only/${MAINNET_ADDR}/demo/${fn}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key === undefined ? {} : { 'x-api-key': key }) },
    body: JSON.stringify({ functionArgs: [] }),
  });
  await res.arrayBuffer();
}

beforeAll(async () => {
  let keysFile: string;
  ({ node, keysFile } = await keyedDemo('cli-usage', { alice: ALICE, bob: BOB }));
  const gateway = await createGateway(
    loadConfig(testEnv(node.url, { API_KEYS_FILE: keysFile, ADMIN_TOKEN: TOKEN })),
  );
  gateway.app.addHook('onRequest', async (request) => {
    if (request.url.includes('usage')) usageRequests.push(request.url);
  });
  const url = await gateway.app.listen({ port: 0, host: '127.0.0.1' });
  gw = { url, gateway, close: () => gateway.close() };
  // A known mix: alice a miss, two hits and an error; bob one hit; an anonymous hit.
  await call('get-info', ALICE);
  await call('get-info', ALICE);
  await call('get-info', ALICE);
  await call('fails', ALICE);
  await call('get-info', BOB);
  await call('get-info');
  page = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<!doctype html><p>not a gateway</p>');
  });
  await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve));
  pageUrl = `http://127.0.0.1:${(page.address() as AddressInfo).port}`;
});

afterAll(async () => {
  if (page !== undefined) await new Promise((resolve) => page.close(resolve));
  await gw?.close();
  await node?.close();
});

/** The command as users run it; the credentials are only those given (none inherited). */
function usage(argv: string[], env: { ADMIN_TOKEN?: string; CLARITY_CACHE_API_KEY?: string } = {}) {
  return spawnNode(['--import', 'tsx', 'src/cli/main.ts', 'usage', ...argv], {
    ADMIN_TOKEN: env.ADMIN_TOKEN ?? '',
    CLARITY_CACHE_API_KEY: env.CLARITY_CACHE_API_KEY ?? '',
    CLARITY_CACHE_URL: gw.url,
  }).done;
}

/** What the gateway answers to a plain request (not through the command line). */
async function asked(route: string, headers: Record<string, string>, csv = false) {
  const res = await fetch(`${gw.url}${route}`, {
    headers: csv ? { ...headers, accept: 'text/csv' } : headers,
  });
  if (csv) return res.text();
  // biome-ignore lint/suspicious/noExplicitAny: the envelope's data, compared as a whole
  return ((await res.json()) as { data: any }).data;
}
const admin = { authorization: `Bearer ${TOKEN}` };

describe('clarity-cache usage: the admin (ADMIN_TOKEN) sees every key', () => {
  it('prints a table: the group fields, the four figures, aligned, and a total line', async () => {
    const r = await usage(['--group-by', 'key,outcome'], { ADMIN_TOKEN: TOKEN });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const data = await asked('/admin/usage?groupBy=key,outcome', admin);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe(`usage from ${data.from} to ${data.to} (UTC days)`);
    const table = lines.slice(1);
    expect(table[0]!.split(/\s+/)).toEqual(['key', 'outcome', ...FIGURES]);
    // One line per row, in the gateway's order, the anonymous key in words; then the totals.
    const expected = [
      ['(anonymous)', 'hit'],
      ['alice', 'error'],
      ['alice', 'hit'],
      ['alice', 'miss'],
      ['bob', 'hit'],
    ];
    expect(data.rows).toHaveLength(expected.length);
    expect(table.slice(1, -1).map((l) => l.split(/\s+/))).toEqual(
      // biome-ignore lint/suspicious/noExplicitAny: rows of the plain answer
      data.rows.map((row: any, i: number) => [...expected[i]!, ...FIGURES.map((f) => String(row[f]))]),
    );
    expect(table.at(-1)!.split(/\s+/)).toEqual(['total', ...FIGURES.map((f) => String(data.totals[f]))]);
    expect(data.totals.requests).toBe(6);
    // Aligned: text columns start together, figures end together (right-aligned to the header).
    const width = table[0]!.length;
    for (const line of table) expect(line.length, line).toBe(width);
    for (const figure of FIGURES) {
      const end = table[0]!.indexOf(figure) + figure.length;
      for (const line of table) expect(line.slice(end - 1, end + 1), line).toMatch(/^\S( |$)/);
    }
    const outcomeAt = table[0]!.indexOf('outcome');
    for (const line of table.slice(1, -1)) expect(line[outcomeAt - 1]).toBe(' ');
    for (const line of table.slice(1, -1)) expect(line[outcomeAt]).not.toBe(' ');
  });

  it('--json prints the answer’s data, --csv the gateway’s CSV as it is', async () => {
    const [json, csv] = await Promise.all([
      usage(['--json', '--group-by', 'key,route,function,outcome'], { ADMIN_TOKEN: TOKEN }),
      usage(['--csv', '--group-by', 'key,function'], { ADMIN_TOKEN: TOKEN }),
    ]);
    expect(json.stderr).toBe('');
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual(
      await asked('/admin/usage?groupBy=key,route,function,outcome', admin),
    );
    expect(csv.stderr).toBe('');
    expect(csv.code).toBe(0);
    const expected = await asked('/admin/usage?groupBy=key,function', admin, true);
    expect(csv.stdout).toBe(expected);
    expect(csv.stdout.split('\r\n')[0]).toBe('key,function,requests,units,upstreamRequests,bytesSent');
  });

  it('--key, --from and --to reach the gateway: one key, anonymous requests (-), an empty period', async () => {
    const [alice, anonymous, empty] = await Promise.all([
      usage(['--key', 'alice', '--json', '--group-by', 'key'], { ADMIN_TOKEN: TOKEN }),
      usage(['--key=-', '--group-by', 'key,outcome'], { ADMIN_TOKEN: TOKEN }),
      usage(['--from', '2020-01-01', '--to', '2020-01-02', '--json'], { ADMIN_TOKEN: TOKEN }),
    ]);
    expect(alice.code).toBe(0);
    const data = JSON.parse(alice.stdout);
    expect(data.rows).toEqual([expect.objectContaining({ key: 'alice', requests: 4, units: 12 })]);
    expect(anonymous.code).toBe(0);
    const rows = anonymous.stdout.trimEnd().split('\n').slice(2, -1);
    expect(rows.map((l) => l.split(/\s+/).slice(0, 3))).toEqual([['(anonymous)', 'hit', '1']]);
    expect(empty.code).toBe(0);
    // Before the retention period: the gateway says from which day it has rows.
    expect(JSON.parse(empty.stdout)).toMatchObject({ to: '2020-01-02', rows: [], totals: { requests: 0 } });
  });
});

describe('clarity-cache usage: a key holder (CLARITY_CACHE_API_KEY) sees its own', () => {
  it('asks GET /usage with the key: its rows only, in every output', async () => {
    const before = usageRequests.length;
    const [json, table, csv] = await Promise.all([
      usage(['--json', '--group-by', 'key,outcome'], { CLARITY_CACHE_API_KEY: BOB }),
      usage(['--group-by', 'key'], { CLARITY_CACHE_API_KEY: ALICE }),
      usage(['--csv', '--group-by', 'key,outcome'], { CLARITY_CACHE_API_KEY: BOB }),
    ]);
    const sent = usageRequests.slice(before);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual(await asked('/usage?groupBy=key,outcome', { 'x-api-key': BOB }));
    expect(JSON.parse(json.stdout).rows).toEqual([expect.objectContaining({ key: 'bob', outcome: 'hit' })]);
    expect(table.code).toBe(0);
    expect(table.stdout.split('\n')[2]!.split(/\s+/).slice(0, 3)).toEqual(['alice', '4', '12']);
    expect(csv.code).toBe(0);
    expect(csv.stdout).toMatch(
      /^key,outcome,requests,units,upstreamRequests,bytesSent\r\nbob,hit,1,1,0,\d+\r\n$/,
    );
    expect(sent.sort()).toEqual([
      '/usage?groupBy=key',
      '/usage?groupBy=key%2Coutcome',
      '/usage?groupBy=key%2Coutcome',
    ]);
  });

  it('ADMIN_TOKEN wins when both are set', async () => {
    const r = await usage(['--json', '--group-by', 'key'], {
      ADMIN_TOKEN: TOKEN,
      CLARITY_CACHE_API_KEY: BOB,
    });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).rows.map((row: { key: string | null }) => row.key)).toEqual([
      null,
      'alice',
      'bob',
    ]);
  });
});

describe('clarity-cache usage: errors', () => {
  it.each([
    ['no credential', [], {}, 'usage needs ADMIN_TOKEN'],
    [
      '--key with a key only',
      ['--key', 'alice'],
      { CLARITY_CACHE_API_KEY: ALICE },
      '--key needs ADMIN_TOKEN',
    ],
    [
      'a day that does not exist',
      ['--from', '2026-02-30'],
      { ADMIN_TOKEN: TOKEN },
      '--from must be a UTC day',
    ],
    ['a day in another form', ['--to', '27/11/2026'], { ADMIN_TOKEN: TOKEN }, '--to must be a UTC day'],
    ['from after to', ['--from', '2026-02-02', '--to', '2026-02-01'], { ADMIN_TOKEN: TOKEN }, 'is after'],
    ['an unknown dimension', ['--group-by', 'key,colour'], { ADMIN_TOKEN: TOKEN }, 'got "colour"'],
    ['a dimension twice', ['--group-by', 'day,day'], { ADMIN_TOKEN: TOKEN }, 'at most once, got "day"'],
    ['two outputs', ['--json', '--csv'], { ADMIN_TOKEN: TOKEN }, 'give one of them'],
    ['an argument', ['alice'], { ADMIN_TOKEN: TOKEN }, 'got 1 argument(s)'],
    [
      'an option of call',
      ['--sender', MAINNET_ADDR],
      { ADMIN_TOKEN: TOKEN },
      '--sender is not an option of usage',
    ],
  ])('%s: exit 2, one line, no request', async (_what, argv, env, message) => {
    const before = usageRequests.length;
    const r = await usage(argv, env);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^clarity-cache: USAGE_ERROR: .*\(see clarity-cache --help\)\n$/);
    expect(r.stderr).toContain(message);
    expect(usageRequests.length).toBe(before);
  });

  it('usage options on another command are a usage error', async () => {
    const r = await spawnNode(['--import', 'tsx', 'src/cli/main.ts', 'call', DEMO, 'get-info', '--json'], {
      CLARITY_CACHE_URL: gw.url,
    }).done;
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      'clarity-cache: USAGE_ERROR: --json is an option of usage only (see clarity-cache --help)\n',
    );
  });

  it('the gateway’s refusal (a wrong token, an unknown key): exit 1 with its code, the secret never printed', async () => {
    const [token, tokenCsv, key] = await Promise.all([
      usage([], { ADMIN_TOKEN: 'not-the-token' }),
      usage(['--csv'], { ADMIN_TOKEN: 'not-the-token' }),
      usage(['--json'], { CLARITY_CACHE_API_KEY: 'k-nobody-0123456789abcdef' }),
    ]);
    for (const r of [token, tokenCsv, key]) {
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/^clarity-cache: UNAUTHORIZED \(HTTP 401\): /);
      expect(r.stderr).not.toMatch(/\n\s+at /);
      expect(r.stderr).not.toContain('not-the-token');
      expect(r.stderr).not.toContain('k-nobody');
    }
  });

  it('no gateway, or something else at the URL: exit 1, one line', async () => {
    const [refused, html, htmlCsv] = await Promise.all([
      usage(['--url', 'http://127.0.0.1:9'], { ADMIN_TOKEN: TOKEN }),
      usage(['--url', pageUrl], { ADMIN_TOKEN: TOKEN }),
      usage(['--url', pageUrl, '--csv'], { ADMIN_TOKEN: TOKEN }),
    ]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /^clarity-cache: NETWORK_ERROR: GET http:\/\/127\.0\.0\.1:9\/admin\/usage failed: .*\n$/,
    );
    for (const r of [html, htmlCsv]) {
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
    expect(html.stderr).toContain('without a JSON envelope');
    expect(htmlCsv.stderr).toMatch(/^clarity-cache: UNEXPECTED_ANSWER: the answer is not CSV usage rows/);
  });
});
