/**
 * No secret in the log, read from the real process's output: the access line's URL shows no
 * query value of an admin or ops route (and no configured secret on any route), an upstream's
 * error text logged at debug has its credentials replaced, and a REDIS_URL that start-up
 * refuses is named and never printed.
 */
import { Cl } from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { hex, MAINNET_ADDR, SAMPLE_ABI } from '../../support/fixtures.js';
import { request } from '../../support/gateway.js';
import {
  type LogLine,
  logLines,
  runExpectingFailure,
  type ServiceProcess,
  startService,
} from '../../support/process.js';

const ADMIN_TOKEN = 'AdminToken-6c02f1b9e8d4';
const QUERY_KEY = 'QueryKey-a1b2c3d4e5f6';
const HEADER_KEY = 'HeaderKey-0f9e8d7c6b5a';
/** Not configured anywhere: a guess at the admin token, still no business of the log's. */
const GUESS = 'GuessedToken-77aa88bb';
/** An upstream's own words, with credentials of its own that the gateway never configured. */
const UPSTREAM_TEXT = `denied: api_key=sk-live-abc123 password=hunter2 (Authorization: Bearer tok-9f8e7d6c) for https://node.example/v2/x?apikey=LeakedQueryValue&sig=s1g - key seen: ${HEADER_KEY}`;
const NEVER = [
  ADMIN_TOKEN,
  QUERY_KEY,
  HEADER_KEY,
  GUESS,
  'sk-live-abc123',
  'hunter2',
  'tok-9f8e7d6c',
  'LeakedQueryValue',
  's1g',
];

let node: FakeNode;
let svc: ServiceProcess;

const lines = (): LogLine[] => logLines(svc);

/** Resolves with the log lines once one satisfies `found` (the process writes it after answering). */
function logged(found: (line: LogLine) => boolean): Promise<LogLine> {
  return new Promise((resolve, reject) => {
    const check = (): void => {
      const line = lines().find(found);
      if (line === undefined) return;
      svc.child.stdout?.off('data', check);
      resolve(line);
    };
    svc.child.stdout?.on('data', check);
    void svc.exited.then(() => reject(new Error(`exited before the line was logged:\n${svc.output()}`)));
    check();
  });
}

const accessLine = (path: string) => logged((l) => l.msg === 'request' && String(l.url).startsWith(path));

beforeAll(async () => {
  node = await startFakeNode();
  node.setAbi(MAINNET_ADDR, 'locked', SAMPLE_ABI);
  node.setReadOnly(MAINNET_ADDR, 'locked', 'get-info', () => ({ status: 403, body: UPSTREAM_TEXT }));
  node.setReadOnly(MAINNET_ADDR, 'locked', 'get-balance', { okay: true, result: hex(Cl.ok(Cl.uint(5))) });
  svc = await startService({
    CACHE_STORE: 'memory',
    LOG_LEVEL: 'debug',
    ADMIN_TOKEN,
    STACKS_API_URL_MAINNET: `${node.url}/?apikey=${QUERY_KEY}`,
    STACKS_API_URL_TESTNET: node.url,
    STACKS_API_KEY: HEADER_KEY,
    UPSTREAM_RETRY_BASE_MS: '1',
    UPSTREAM_RATE_LIMIT_PER_MINUTE: '100000',
    // Every block-bounded read asks /v2/info again: a failed tip refresh is one request away.
    CACHE_MAX_BLOCKS: '1',
    CHAIN_TIP_MAX_AGE_MS: '0',
  });
});

afterAll(async () => {
  await svc?.stop();
  await node?.close();
});

describe('the access log', () => {
  it('shows no query value of an admin or ops route, whether the request was let in or not', async () => {
    const refused = await request(`${svc.url}/admin/cache/stats?token=${GUESS}`);
    expect(refused.status).toBe(401);
    const admitted = await request(`${svc.url}/admin/cache/stats?token=${ADMIN_TOKEN}&verbose`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(admitted.status).toBe(200);
    expect((await request(`${svc.url}/health?token=${GUESS}`)).status).toBe(200);

    const access = await logged(
      (l) => l.msg === 'request' && String(l.url).startsWith('/admin/cache/stats') && l.statusCode === 200,
    );
    expect(access.url).toBe('/admin/cache/stats?token=[redacted]&[redacted]');
    const refusal = await logged((l) => l.msg === 'admin request refused: missing or wrong bearer token');
    expect(refusal.url).toBe('/admin/cache/stats?token=[redacted]');
    const denied = await logged(
      (l) => l.msg === 'request' && String(l.url).startsWith('/admin/cache/stats') && l.statusCode === 401,
    );
    expect(denied.url).toBe('/admin/cache/stats?token=[redacted]');
    expect((await accessLine('/health')).url).toBe('/health?token=[redacted]');
    for (const secret of [ADMIN_TOKEN, GUESS]) expect(svc.output()).not.toContain(secret);
  });

  it("keeps an API route's query values, except a configured secret or a credential-named one", async () => {
    const path = `/v2/data_var/${MAINNET_ADDR}/locked/counter`;
    await request(`${svc.url}${path}?proof=0&note=${ADMIN_TOKEN}&api_key=${GUESS}`);
    expect((await accessLine(path)).url).toBe(`${path}?proof=0&note=[redacted]&api_key=[redacted]`);
    for (const secret of [ADMIN_TOKEN, GUESS]) expect(svc.output()).not.toContain(secret);
  });
});

describe('an upstream error text at debug', () => {
  it('is logged with its credentials, bearer tokens, URL query values and the configured key replaced', async () => {
    const res = await request(`${svc.url}/contract-calls/read-only/${MAINNET_ADDR}/locked/get-info`, {
      body: { functionArgs: [] },
    });
    expect(res.status).toBe(502);
    expect(res.body.error.details.upstreamStatus).toBe(403);
    const line = await logged((l) => l.msg === 'upstream error text');
    expect(line.upstreamText).toBe(
      'denied: api_key=[redacted] password=[redacted] (Authorization: Bearer [redacted]) for https://node.example/v2/x?apikey=[redacted]&sig=[redacted] - key seen: [redacted]',
    );
    for (const secret of NEVER) expect(svc.output()).not.toContain(secret);
  });
});

describe('an upstream error logged whole at debug', () => {
  it('carries its upstream text redacted (a failed tip refresh)', async () => {
    const read = () =>
      request(`${svc.url}/contract-calls/read-only/${MAINNET_ADDR}/locked/get-balance`, {
        body: { functionArgs: [{ type: 'principal', value: MAINNET_ADDR }] },
      });
    expect((await read()).status).toBe(200);
    node.httpError(403, UPSTREAM_TEXT, { kind: 'info', times: 1 });
    // The stored answer is judged against the tip, which is asked again, and refused.
    expect((await read()).status).toBe(200);
    const line = await logged((l) => String(l.msg).startsWith('chain tip refresh failed'));
    expect(line.err.upstreamText).toContain('api_key=[redacted] password=[redacted]');
    for (const secret of NEVER) expect(svc.output()).not.toContain(secret);
  });
});

describe('a REDIS_URL start-up refuses', () => {
  it.each([
    ['with no scheme', 'RedisPassw0rd-only-value'],
    ['that does not parse', 'redis://user:RedisPassw0rd@localhost:notaport/0'],
    ['whose password is not valid percent-encoding', 'redis://:RedisPassw0rd%zz@localhost:6379/0'],
  ])('is named, and never printed, %s', async (_what, url) => {
    const { code, stderr } = await runExpectingFailure({ CACHE_STORE: 'redis', REDIS_URL: url });
    expect(code).toBe(1);
    expect(stderr).toContain('REDIS_URL');
    expect(stderr).not.toContain('RedisPassw0rd');
    expect(stderr).not.toContain(url);
  });
});
