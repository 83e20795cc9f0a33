/**
 * Quotas counted once for a fleet (two gateways on one real redis-server), and secrets that
 * no start-up message shows (the real process, its whole output searched), and an upstream
 * URL's query that is sent with every request and never printed.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Cl } from '@stacks/transactions';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { hex, MAINNET_ADDR, SAMPLE_ABI } from '../../support/fixtures.js';
import { type RunningGateway, request, startGateway, testEnv } from '../../support/gateway.js';
import { runExpectingFailure } from '../../support/process.js';
import { type RedisServer, startRedis } from '../../support/redis-server.js';
import { tmpDir } from '../../unit/cache/tmp-dir.js';

const KEY = 'k-fleet-0123456789abcdef';
let node: FakeNode;
let redis: RedisServer | undefined;
let keysFile: string;

beforeAll(async () => {
  node = await startFakeNode();
  node.setAbi(MAINNET_ADDR, 'demo', SAMPLE_ABI);
  node.setReadOnly(MAINNET_ADDR, 'demo', 'get-balance', { okay: true, result: hex(Cl.ok(Cl.uint(7))) });
  redis = await startRedis();
  const { dir } = tmpDir('fleet-quota');
  keysFile = path.join(dir, 'keys.json');
  writeFileSync(keysFile, JSON.stringify([{ name: 'fleet', key: KEY, requestsPerMinute: 4 }]));
});
afterAll(async () => {
  await node?.close();
  await redis?.stop();
});

const running: RunningGateway[] = [];
afterEach(async () => {
  for (const r of running.splice(0).reverse()) await r.close();
});

const url = (base: string) => `${base}/contract-calls/read-only/${MAINNET_ADDR}/demo/get-balance`;
const body = { functionArgs: [{ type: 'principal', value: MAINNET_ADDR }] };

describe('quotas in a fleet', () => {
  it('two instances on one Redis count one quota per key and per client address', async () => {
    if (redis === undefined) throw new Error('redis-server is needed for this test');
    const env = testEnv(node.url, {
      CACHE_STORE: 'redis',
      REDIS_URL: redis.url,
      API_KEYS_FILE: keysFile,
      ANONYMOUS_REQUESTS_PER_MINUTE: '3',
      TRUST_PROXY: '1',
    });
    const a = await startGateway(env);
    const b = await startGateway(env);
    running.push(a, b);
    const k = { 'x-api-key': KEY };
    const keyed = [];
    for (const gw of [a, b, a, b, a, b])
      keyed.push((await request(url(gw.url), { body, headers: k })).status);
    expect(keyed).toEqual([200, 200, 200, 200, 429, 429]);
    const anon = [];
    const from = { 'x-forwarded-for': '10.7.7.7' };
    for (const gw of [b, a, b, a]) anon.push((await request(url(gw.url), { body, headers: from })).status);
    expect(anon).toEqual([200, 200, 200, 429]);
    const refused = await request(url(a.url), { body, headers: from });
    expect(refused.body.error.details.scope).toBe('client');
  });
});

describe('secrets', () => {
  it('a Redis password on a wrong scheme is not printed', async () => {
    const { code, stderr } = await runExpectingFailure({
      CACHE_STORE: 'redis',
      REDIS_URL: 'http://user:Sup3rSecretRedisPw@127.0.0.1:6379',
    });
    expect(code).toBe(1);
    expect(stderr).toContain('REDIS_URL');
    expect(stderr).not.toContain('Sup3rSecretRedisPw');
  });

  it('an UPSTREAMS_FILE syntax error does not show the apiKey around it', async () => {
    const { dir } = tmpDir('upstreams-secret');
    const file = path.join(dir, 'upstreams.json');
    writeFileSync(
      file,
      '[{"network":"mainnet","url":"https://a.example","apiKey":"TopSecretApiKey123" oops}]',
    );
    const { code, stderr } = await runExpectingFailure({ UPSTREAMS_FILE: file });
    expect(code).toBe(1);
    expect(stderr).toContain('UPSTREAMS_FILE');
    expect(stderr).not.toContain('TopSecretApiKey123');
    expect(stderr).not.toContain('SecretApiKey');
  });

  it('a key in a URL query is not printed in a start-up error', async () => {
    const { code, stderr } = await runExpectingFailure({
      STACKS_API_URL_MAINNET: 'ftp://node.example/?apikey=QuerySecretValue99',
    });
    expect(code).toBe(1);
    expect(stderr).not.toContain('QuerySecretValue99');
  });

  it('an API keys file error names the entry, never the key', async () => {
    const { dir } = tmpDir('keys-secret');
    const file = path.join(dir, 'keys.json');
    writeFileSync(file, '[{"name":"a","key":"ApiKeySecretNumberOne1" ');
    const bad = await runExpectingFailure({ API_KEYS_FILE: file });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('API_KEYS_FILE');
    expect(bad.stderr).not.toContain('ApiKeySecretNumberOne1');
    writeFileSync(file, '[{"name":"a","key":"short"}]');
    const short = await runExpectingFailure({ API_KEYS_FILE: file });
    expect(short.stderr).toContain('at least 16');
    expect(short.stderr).not.toContain('"short"');
  });

  it('sends an upstream URL’s query with every request, and an upstream’s error text never reaches the client', async () => {
    const gw = await startGateway(testEnv(`${node.url}/?apikey=ProviderKey777`, { LOG_LEVEL: 'silent' }));
    running.push(gw);
    const seen = node.requests.length;
    expect(
      (await request(url(gw.url), { body: { functionArgs: [{ type: 'uint', value: '5' }] } })).status,
    ).toBe(400);
    const res = await request(url(gw.url), { body });
    expect(res.status).toBe(200);
    const sent = node.requests.slice(seen);
    expect(sent.length).toBeGreaterThan(0);
    for (const r of sent) expect(r.query['apikey']).toBe('ProviderKey777');
    node.httpError(403, 'denied for key ProviderKey777', { times: 1 });
    const failed = await request(url(gw.url), {
      body: { functionArgs: [{ type: 'principal', value: `${MAINNET_ADDR}.x` }] },
    });
    expect(failed.status).toBe(502);
    expect(failed.body.error.details.upstreamStatus).toBe(403);
    expect(JSON.stringify(failed.body)).not.toContain('ProviderKey777');
    expect(JSON.stringify(failed.body)).not.toContain('denied');
  });
});
