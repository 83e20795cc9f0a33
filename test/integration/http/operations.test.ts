/**
 * Operating the gateway: health and readiness, Prometheus metrics checked against the traffic
 * that produced them, Cache-Status/Age headers, the admin API and its authentication, and the
 * OpenAPI document.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import { Cl } from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
import { metricValue, parseMetrics } from '../../support/prom.js';

const TOKEN = 'test-admin-token-0123456789';
let node: FakeNode;
let gw: RunningGateway;
let balance = 1n;

const ro = (fn: string, addr = MAINNET_ADDR) => `${gw.url}/contract-calls/read-only/${addr}/demo/${fn}`;
const auth = { authorization: `Bearer ${TOKEN}` };
const balanceOf = (who: string) => ({ functionArgs: [{ type: 'principal', value: who }] });

beforeAll(async () => {
  node = await startFakeNode();
  for (const addr of [MAINNET_ADDR, TESTNET_ADDR, OTHER_ADDR]) {
    node.setAbi(addr, 'demo', SAMPLE_ABI);
    node.setReadOnly(addr, 'demo', 'get-info', { okay: true, result: hex(INFO_VALUE) });
    node.setReadOnly(addr, 'demo', 'get-balance', () => ({
      okay: true,
      result: hex(Cl.ok(Cl.uint(balance))),
    }));
  }
  gw = await startGateway(testEnv(node.url, { ADMIN_TOKEN: TOKEN, UPSTREAM_RETRIES: '0' }));
});

afterAll(async () => {
  await gw?.close();
  await node?.close();
});

describe('health and readiness', () => {
  it('answers /health', async () => {
    const res = await request(`${gw.url}/health`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, data: { status: 'ok' } });
  });

  it('reports the store and each network upstream in /ready, and follows upstream failures', async () => {
    const fresh = await request(`${gw.url}/ready`);
    expect(fresh.status).toBe(200);
    expect(fresh.body.data.checks.store).toMatchObject({ ok: true, kind: 'memory' });
    expect(fresh.body.data.checks.upstream.testnet.state).toBe('unknown');

    await request(ro('get-info', TESTNET_ADDR), { body: { functionArgs: [] } });
    const up = await request(`${gw.url}/ready`);
    expect(up.body.data.checks.upstream.testnet.state).toBe('up');
    expect(up.body.data.status).toBe('ready');

    node.status5xx(503, { kind: 'call-read' });
    try {
      for (let i = 0; i < 5; i++)
        await request(ro('get-balance', TESTNET_ADDR), { body: balanceOf(`${OTHER_ADDR}.r${i}`) });
    } finally {
      node.clearFaults();
    }
    const down = await request(`${gw.url}/ready`);
    expect(down.status).toBe(200);
    expect(down.body.data.status).toBe('degraded');
    expect(down.body.data.checks.upstream.testnet.state).toBe('down');
    expect(down.body.data.checks.upstream.mainnet.state).toBe('unknown');
  });
});

describe('metrics', () => {
  it('counts requests, cache outcomes, upstream attempts and budgets as the traffic happened', async () => {
    const before = parseMetrics((await request(`${gw.url}/metrics`)).body as string);
    const who = 'SP000000000000000000002Q6VF78';
    await request(ro('get-balance'), { body: balanceOf(who) }); // miss (+ ABI miss)
    await request(ro('get-balance'), { body: balanceOf(who) }); // hit
    await request(ro('get-balance'), { body: balanceOf(who) }); // hit
    await request(ro('get-balance'), { body: { ...balanceOf(who), cacheControl: { bustCache: true } } }); // bypass
    await request(`${gw.url}/contract-calls/abi/${MAINNET_ADDR}/demo`); // ABI hit
    await request(`${gw.url}/nope`);

    const res = await request(`${gw.url}/metrics`);
    expect(res.headers.get('content-type')).toContain('text/plain');
    const after = parseMetrics(res.body as string);
    const delta = (name: string, labels: Record<string, string>) =>
      metricValue(after, name, labels) - metricValue(before, name, labels);

    expect(delta('clarity_cache_cache_requests_total', { endpoint: 'read-only', outcome: 'miss' })).toBe(1);
    expect(delta('clarity_cache_cache_requests_total', { endpoint: 'read-only', outcome: 'hit' })).toBe(2);
    expect(delta('clarity_cache_cache_requests_total', { endpoint: 'read-only', outcome: 'bypass' })).toBe(1);
    expect(
      delta('clarity_cache_cache_requests_total', { endpoint: 'abi', outcome: 'hit' }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      delta('clarity_cache_upstream_attempts_total', {
        network: 'mainnet',
        kind: 'call-read',
        outcome: 'ok',
      }),
    ).toBe(2);
    expect(
      delta('clarity_cache_upstream_latency_seconds_count', { network: 'mainnet', kind: 'call-read' }),
    ).toBe(2);
    const roRoute = '/contract-calls/read-only/:contractAddress/:contractName/:functionName';
    expect(
      delta('clarity_cache_http_requests_total', { route: roRoute, method: 'POST', status: '200' }),
    ).toBe(4);
    expect(
      delta('clarity_cache_http_requests_total', { route: 'unmatched', method: 'GET', status: '404' }),
    ).toBe(1);
    const count = (m: typeof after) =>
      metricValue(m, 'clarity_cache_http_request_duration_seconds_count', { route: roRoute });
    expect(count(after) - count(before)).toBe(4);
    for (const le of ['+Inf', '10']) {
      expect(
        metricValue(after, 'clarity_cache_http_request_duration_seconds_bucket', { route: roRoute, le }),
      ).toBe(count(after));
    }
    expect(
      delta('clarity_cache_budget_wait_seconds_count', { network: 'mainnet', result: 'granted' }),
    ).toBeGreaterThanOrEqual(2);
    expect(metricValue(after, 'clarity_cache_budget_tokens', { network: 'mainnet' })).toBeGreaterThan(0);
    expect(metricValue(after, 'clarity_cache_budget_queued', { network: 'mainnet' })).toBe(0);
    expect(metricValue(after, 'clarity_cache_hot_tier_entries')).toBeGreaterThan(0);
    expect(after.some((s) => s.name === 'clarity_cache_process_resident_memory_bytes')).toBe(true);
  });
});

describe('Cache-Status and Age', () => {
  it('says miss and stored, then hit with the age and the ttl left', async () => {
    const body = { ...balanceOf(`${OTHER_ADDR}.cs`), cacheControl: { ttl: 120 } };
    const miss = await request(ro('get-balance'), { body });
    expect(miss.headers.get('cache-status')).toBe('clarity-cache; fwd=miss; stored; ttl=120');
    expect(miss.headers.get('age')).toBe('0');
    const hit = await request(ro('get-balance'), { body });
    expect(hit.headers.get('cache-status')).toMatch(/^clarity-cache; hit; ttl=(119|120)$/);
    expect(Number(hit.headers.get('age'))).toBeGreaterThanOrEqual(0);
  });

  it('says hit without ttl for indefinite entries, fwd=request for bustCache, and no stored for skipCache', async () => {
    const body = balanceOf(`${OTHER_ADDR}.cs2`);
    await request(ro('get-balance'), { body });
    expect((await request(ro('get-balance'), { body })).headers.get('cache-status')).toBe(
      'clarity-cache; hit',
    );
    const bust = await request(ro('get-balance'), { body: { ...body, cacheControl: { bustCache: true } } });
    expect(bust.headers.get('cache-status')).toBe('clarity-cache; fwd=request; stored');
    const skip = await request(ro('get-balance'), {
      body: { ...balanceOf(`${OTHER_ADDR}.cs3`), cacheControl: { skipCache: true } },
    });
    expect(skip.headers.get('cache-status')).toBe('clarity-cache; fwd=miss');
  });

  it('marks ABI answers too', async () => {
    node.setAbi(OTHER_ADDR, 'fresh-abi', SAMPLE_ABI);
    const miss = await request(`${gw.url}/contract-calls/abi/${OTHER_ADDR}/fresh-abi`);
    expect(miss.headers.get('cache-status')).toBe('clarity-cache; fwd=miss; stored');
    const hit = await request(`${gw.url}/contract-calls/abi/${OTHER_ADDR}/fresh-abi`);
    expect(hit.headers.get('cache-status')).toBe('clarity-cache; hit');
  });
});

describe('RATE_LIMIT_EXCEEDED from the local budget', () => {
  it('answers 429 with Retry-After when no token comes in time', async () => {
    const limited = await startGateway(
      testEnv(node.url, { UPSTREAM_RATE_LIMIT_PER_MINUTE: '1', UPSTREAM_QUEUE_TIMEOUT_MS: '0' }),
    );
    try {
      // The ABI fetch takes the only token; the call itself finds none.
      const res = await request(`${limited.url}/contract-calls/read-only/${MAINNET_ADDR}/demo/get-info`, {
        body: { functionArgs: [] },
      });
      expect(res.status).toBe(429);
      expect(res.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(res.body.error.details.retryAfter).toBe(Number(res.headers.get('retry-after')));
    } finally {
      await limited.close();
    }
  });
});

describe('admin API', () => {
  const routes: Array<[string, string, unknown?]> = [
    ['DELETE', '/admin/cache'],
    ['DELETE', `/admin/cache/contracts/${MAINNET_ADDR}/demo`],
    ['DELETE', `/admin/cache/contracts/${MAINNET_ADDR}/demo/functions/get-info`],
    [
      'POST',
      '/admin/cache/invalidate',
      { contractAddress: MAINNET_ADDR, contractName: 'demo', functionName: 'get-info', functionArgs: [] },
    ],
    ['POST', '/admin/abis/warm', { contracts: [`${MAINNET_ADDR}.demo`] }],
    ['GET', '/admin/cache/stats'],
  ];
  const badCredentials: Array<[string, Record<string, string>]> = [
    ['no header', {}],
    ['a wrong token', { authorization: 'Bearer wrong' }],
    ['a token prefix', { authorization: `Bearer ${TOKEN.slice(0, -1)}` }],
    ['another scheme', { authorization: `Basic ${TOKEN}` }],
    ['an empty bearer', { authorization: 'Bearer ' }],
  ];

  for (const [method, path, body] of routes) {
    for (const [what, headers] of badCredentials) {
      it(`refuses ${method} ${path} with ${what}`, async () => {
        const res = await request(`${gw.url}${path}`, {
          method,
          headers,
          ...(body === undefined ? {} : { body }),
        });
        expect(res.status).toBe(401);
        expect(res.body).toMatchObject({ success: false, error: { code: 'UNAUTHORIZED' } });
        expect(res.headers.get('www-authenticate')).toContain('Bearer');
      });
    }
  }

  it('invalidates one entry so that the next call goes upstream', async () => {
    const body = balanceOf(`${OTHER_ADDR}.inv1`);
    balance = 10n;
    await request(ro('get-balance'), { body });
    balance = 11n;
    expect((await request(ro('get-balance'), { body })).body.data).toBe('10');
    const res = await request(`${gw.url}/admin/cache/invalidate`, {
      headers: auth,
      body: { contractAddress: MAINNET_ADDR, contractName: 'demo', functionName: 'get-balance', ...body },
    });
    expect(res.body).toEqual({ success: true, data: { deleted: 1 } });
    node.resetStats();
    expect((await request(ro('get-balance'), { body })).body.data).toBe('11');
    expect(node.count('call-read')).toBe(1);
  });

  it('invalidates all entries of a function, of a contract, and everything', async () => {
    for (const who of ['f1', 'f2'])
      await request(ro('get-balance'), { body: balanceOf(`${OTHER_ADDR}.${who}`) });
    await request(ro('get-info'), { body: { functionArgs: [] } });
    const fn = await request(`${gw.url}/admin/cache/contracts/${MAINNET_ADDR}/demo/functions/get-balance`, {
      method: 'DELETE',
      headers: auth,
    });
    expect(fn.body.data.deleted).toBeGreaterThanOrEqual(2);
    node.resetStats();
    await request(ro('get-info'), { body: { functionArgs: [] } });
    expect(node.count('call-read')).toBe(0);

    const contract = await request(`${gw.url}/admin/cache/contracts/${MAINNET_ADDR}/demo`, {
      method: 'DELETE',
      headers: auth,
    });
    expect(contract.body.data.deleted).toBeGreaterThanOrEqual(1);
    await request(ro('get-info'), { body: { functionArgs: [] } });
    expect(node.count('call-read')).toBe(1);
    expect(node.count('interface')).toBe(0);

    const all = await request(`${gw.url}/admin/cache`, { method: 'DELETE', headers: auth });
    expect(all.body.data.deleted).toBeGreaterThanOrEqual(2);
    const known = await request(`${gw.url}/contract-calls/known-contracts`);
    expect(known.body.data.stats.total).toBe(0);
  });

  it('warms ABIs and reports per contract, then shows statistics', async () => {
    const res = await request(`${gw.url}/admin/abis/warm`, {
      headers: auth,
      body: { contracts: [`${TESTNET_ADDR}.demo`, `${MAINNET_ADDR}.ghost`, 'nonsense'] },
    });
    expect(res.status).toBe(200);
    expect(res.body.data.results).toEqual([
      { contract: `${TESTNET_ADDR}.demo`, ok: true, outcome: expect.any(String) },
      {
        contract: `${MAINNET_ADDR}.ghost`,
        ok: false,
        error: expect.objectContaining({ code: 'UPSTREAM_API_ERROR' }),
      },
      {
        contract: 'nonsense',
        ok: false,
        error: expect.objectContaining({ code: 'INVALID_CONTRACT_ADDRESS' }),
      },
    ]);
    const known = await request(`${gw.url}/contract-calls/known-contracts`);
    expect(known.body.data.contracts.cached).toContainEqual({
      contractAddress: TESTNET_ADDR,
      contractName: 'demo',
      network: 'testnet',
    });
    const stats = await request(`${gw.url}/admin/cache/stats`, { headers: auth });
    expect(stats.body.data).toMatchObject({ store: 'memory', entries: { abis: 1 } });
  });

  it('does not exist without ADMIN_TOKEN', async () => {
    const plain = await startGateway(testEnv(node.url));
    try {
      const res = await request(`${plain.url}/admin/cache/stats`, { headers: auth });
      expect(res.status).toBe(404);
      const spec = await request(`${plain.url}/openapi.json`);
      expect(Object.keys(spec.body.paths).some((p) => p.startsWith('/admin'))).toBe(false);
    } finally {
      await plain.close();
    }
  });
});

describe('OpenAPI', () => {
  it('serves a valid OpenAPI 3.1 document covering every public route, and the /docs reference', async () => {
    const res = await request(`${gw.url}/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    const validator = new Validator();
    const result = await validator.validate(res.body);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    const paths = Object.keys(res.body.paths);
    for (const p of [
      '/contract-calls/decode-clarity-value',
      '/contract-calls/read-only/{contractAddress}/{contractName}/{functionName}',
      '/contract-calls/abi/{contractAddress}/{contractName}',
      '/contract-calls/abi/{contractId}',
      '/contract-calls/read-only/{contractId}/{functionName}',
      '/contract-calls',
      '/',
      '/contract-calls/known-contracts',
      '/health',
      '/ready',
      '/metrics',
      '/admin/cache',
      '/admin/cache/invalidate',
      '/admin/abis/warm',
      '/admin/cache/stats',
    ]) {
      expect(paths).toContain(p);
    }
    const docs = await fetch(`${gw.url}/docs`, { redirect: 'follow' });
    expect(docs.status).toBe(200);
    expect(await docs.text()).toContain('swagger');
  });
});
