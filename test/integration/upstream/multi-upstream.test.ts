/**
 * Several upstreams and fair waiting for budget tokens (docs/upstreams.md),
 * over real HTTP: in-process gateways on real sockets in front of two or three fault-injecting
 * fake Stacks nodes, each an independent server with its own faults and counters.
 *
 * Nothing here measures time: the order of events is what is asserted (which node got which
 * request, which request the node saw aborted, what /ready and /metrics say).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Cl } from '@stacks/transactions';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { TokenBucket } from '../../../src/upstream/budget/local.js';
import { budgetExhaustedError } from '../../../src/upstream/budget/upstream-budget.js';
import { CALL_READ } from '../../../src/upstream/endpoints.js';
import { UpstreamPool } from '../../../src/upstream/pool.js';
import { StacksNodeClient } from '../../../src/upstream/stacks-node.js';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { GET_N_ABI, hex, TESTNET_ADDR } from '../../support/fixtures.js';
import {
  type JsonResponse,
  type RunningGateway,
  request,
  startGateway,
  testEnv,
} from '../../support/gateway.js';
import { startService } from '../../support/process.js';
import { metricValue, parseMetrics } from '../../support/prom.js';
import { startRedis } from '../../support/redis-server.js';

const running: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const r of running.splice(0).reverse()) await r.close();
});

/** A fake node that knows demo::get-n, which answers its argument. */
async function node(tipHeight = 100): Promise<FakeNode> {
  const n = await startFakeNode({ tipHeight });
  n.setAbi(TESTNET_ADDR, 'demo', GET_N_ABI);
  n.setReadOnly(TESTNET_ADDR, 'demo', 'get-n', ({ arguments: args }) => ({ okay: true, result: args[0]! }));
  running.push(n);
  return n;
}

async function gateway(
  env: Record<string, string>,
  deps: Parameters<typeof startGateway>[1] = {},
): Promise<RunningGateway> {
  const gw = await startGateway(env, deps);
  running.push(gw);
  return gw;
}

/** Gateway env with the testnet upstreams given as a comma-separated list. */
function listEnv(nodes: readonly FakeNode[], env: Record<string, string> = {}): Record<string, string> {
  return testEnv(nodes[0]!.url, { STACKS_API_URL_TESTNET: nodes.map((n) => n.url).join(','), ...env });
}

/** A distinct read-only call per n (each a cache miss). */
function read(gw: RunningGateway, n: number, headers: Record<string, string> = {}): Promise<JsonResponse> {
  return request(`${gw.url}/contract-calls/read-only/${TESTNET_ADDR}/demo/get-n`, {
    body: { functionArgs: [hex(Cl.uint(n))] },
    headers,
  });
}

async function ready(gw: RunningGateway): Promise<JsonResponse> {
  return request(`${gw.url}/ready`);
}

function states(res: JsonResponse): string[] {
  return res.body.data.checks.upstream.testnet.upstreams.map((u: { state: string }) => u.state);
}

async function metrics(gw: RunningGateway) {
  const res = await fetch(`${gw.url}/metrics`);
  return { text: await res.clone().text(), samples: parseMetrics(await res.text()) };
}

/** Resolves once cond() holds; checks on every turn of the event loop (bounded). */
async function until(cond: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe('failover', () => {
  it('moves on from a node answering 503 to the next upstream, within UPSTREAM_RETRIES', async () => {
    const [a, b] = [await node(), await node()];
    a.status5xx(503);
    const gw = await gateway(listEnv([a, b]));
    const res = await read(gw, 1);
    expect(res.status).toBe(200);
    expect(res.body.data).toBe('1');
    // Both the ABI and the call were tried on the first upstream, then answered by the second.
    expect(a.count('interface')).toBe(1);
    expect(a.count('call-read')).toBe(1);
    expect(b.count('interface')).toBe(1);
    expect(b.count('call-read')).toBe(1);
  });

  it('moves on from a closed port', async () => {
    const [a, b] = [await node(), await node()];
    await a.down();
    const gw = await gateway(listEnv([a, b]));
    const res = await read(gw, 2);
    expect(res.status).toBe(200);
    expect(res.body.data).toBe('2');
    expect(b.count('call-read')).toBe(1);
  });

  it('moves on from a garbage (non-JSON) answer to another upstream, never back to the same', async () => {
    const [a, b] = [await node(), await node()];
    a.garbage();
    const gw = await gateway(listEnv([a, b]));
    expect((await read(gw, 4)).status).toBe(200);
    expect([a.total, b.total]).toEqual([2, 2]);
    b.garbage();
    const res = await read(gw, 5);
    expect(res.status).toBe(502);
    expect(res.body.error.details).toMatchObject({ reason: 'malformed', retryable: true });
    // One attempt each: garbage is not retried on the node that sent it.
    expect([a.count('call-read'), b.count('call-read')]).toEqual([2, 2]);
  });

  it('answers the last failure when every upstream fails and the retries are spent', async () => {
    const [a, b] = [await node(), await node()];
    a.status5xx(503);
    b.status5xx(502);
    const gw = await gateway(listEnv([a, b], { UPSTREAM_RETRIES: '2' }));
    const res = await read(gw, 3);
    expect(res.status).toBe(502);
    expect(res.body.error.code).toBe('UPSTREAM_API_ERROR');
    // Three attempts in all (UPSTREAM_RETRIES counts across upstreams), on the ABI.
    expect(a.count('interface') + b.count('interface')).toBe(3);
  });
});

describe('selection', () => {
  it('sends everything to the preferred upstream while all are healthy (UPSTREAMS_FILE priorities), then the next', async () => {
    const nodes = [await node(), await node(), await node()];
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cc-upstreams-'));
    const file = path.join(dir, 'upstreams.json');
    writeFileSync(
      file,
      JSON.stringify(nodes.map((n, i) => ({ url: n.url, network: 'testnet', priority: [2, 0, 1][i] }))),
    );
    try {
      const gw = await gateway({
        ...testEnv(nodes[0]!.url),
        STACKS_API_URL_TESTNET: '',
        UPSTREAMS_FILE: file,
      });
      for (let i = 0; i < 5; i++) expect((await read(gw, i)).status).toBe(200);
      expect(nodes.map((n) => n.count('call-read'))).toEqual([0, 5, 0]);
      nodes[1]!.status5xx(503);
      for (let i = 5; i < 8; i++) expect((await read(gw, i)).status).toBe(200);
      expect(nodes[2]!.count('call-read')).toBe(3);
      expect(nodes[0]!.count('call-read')).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('uses the second upstream’s budget before any request waits, then refuses', async () => {
    const [a, b] = [await node(), await node()];
    const gw = await gateway(
      listEnv([a, b], { UPSTREAM_RATE_LIMIT_PER_MINUTE: '2', UPSTREAM_QUEUE_TIMEOUT_MS: '0' }),
    );
    // The first read takes the ABI and the call from the first upstream's two tokens ...
    expect((await read(gw, 1)).status).toBe(200);
    expect([a.total, b.total]).toEqual([2, 0]);
    // ... the next two are served by the second upstream's ...
    expect((await read(gw, 2)).status).toBe(200);
    expect((await read(gw, 3)).status).toBe(200);
    expect([a.total, b.total]).toEqual([2, 2]);
    // ... and only when neither has one is a request refused (it may not wait here).
    const refused = await read(gw, 4);
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
    expect([a.total, b.total]).toEqual([2, 2]);
  });
});

describe('circuit breaker', () => {
  it('opens after N failures, sends one probe after the cooldown, and closes when it succeeds', async () => {
    const [a, b] = [await node(), await node()];
    a.status5xx(503);
    const gw = await gateway(
      listEnv([a, b], { UPSTREAM_BREAKER_FAILURES: '2', UPSTREAM_BREAKER_COOLDOWN_MS: '150' }),
    );
    expect((await read(gw, 1)).status).toBe(200); // ABI and call: two failures on a
    expect(a.total).toBe(2);
    expect(states(await ready(gw))).toEqual(['open', 'ok']);

    // Open: a is skipped at once, not tried first.
    expect((await read(gw, 2)).status).toBe(200);
    expect(a.total).toBe(2);

    // After the cooldown the next request is the probe; hold it at the node.
    a.clearFaults();
    a.gate();
    let probe: Promise<JsonResponse> | undefined;
    for (let i = 100; probe === undefined; i++) {
      const p = read(gw, i);
      const first = await Promise.race([
        p.then(() => 'answered' as const),
        a.waitForRequests(3).then(() => 'probe' as const),
      ]);
      if (first === 'probe') probe = p;
    }
    // While the probe is out, nobody else is sent there.
    const during = await Promise.all([read(gw, 1000), read(gw, 1001), read(gw, 1002)]);
    expect(during.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(a.total).toBe(3);
    expect(states(await ready(gw))).toEqual(['open', 'ok']);

    a.release();
    expect((await probe).status).toBe(200);
    expect(states(await ready(gw))).toEqual(['ok', 'ok']);
    const before = a.count('call-read');
    expect((await read(gw, 2000)).status).toBe(200);
    expect(a.count('call-read')).toBe(before + 1);
  });

  it('opens again when the probe fails', async () => {
    const [a, b] = [await node(), await node()];
    a.status5xx(503);
    const gw = await gateway(
      listEnv([a, b], { UPSTREAM_BREAKER_FAILURES: '1', UPSTREAM_BREAKER_COOLDOWN_MS: '100' }),
    );
    expect((await read(gw, 1)).status).toBe(200);
    const opened = a.total;
    for (let i = 10; a.total === opened; i++) expect((await read(gw, i)).status).toBe(200);
    // The probe failed (still 503) and was answered by b: a is open again.
    expect(a.total).toBe(opened + 1);
    expect(states(await ready(gw))).toEqual(['open', 'ok']);
  });
});

describe('hedging', () => {
  it('answers from a second upstream when the first is quiet past UPSTREAM_HEDGE_MS, aborts the first, budgets both', async () => {
    const [a, b] = [await node(), await node()];
    const gw = await gateway(
      // A timeout far beyond the test's: only the hedge can answer while a holds the call.
      listEnv([a, b], {
        UPSTREAM_HEDGE_MS: '200',
        UPSTREAM_RATE_LIMIT_PER_MINUTE: '10',
        UPSTREAM_TIMEOUT_MS: '600000',
      }),
    );
    a.gate({ kind: 'call-read' });
    const res = await read(gw, 7);
    expect(res.status).toBe(200);
    expect(res.body.data).toBe('7');
    // Answered while a still holds its request: b gave the answer ...
    expect(a.held()).toBe(1);
    expect(b.count('call-read')).toBe(1);
    // ... and the gateway gave up on a (seen by the node, not inferred from times).
    await a.waitForAborts(1, { kind: 'call-read' });
    expect(a.aborted('call-read')).toBe(1);
    // Both attempts took a token: every request either node saw was paid from its own budget.
    const { samples } = await metrics(gw);
    expect(metricValue(samples, 'clarity_cache_budget_tokens', { upstream: 'testnet' })).toBe(10 - a.total);
    expect(metricValue(samples, 'clarity_cache_budget_tokens', { upstream: 'testnet-2' })).toBe(10 - b.total);
    a.release();
  });

  it('sends no hedge when the first answers in time', async () => {
    const [a, b] = [await node(), await node()];
    const gw = await gateway(listEnv([a, b], { UPSTREAM_HEDGE_MS: '5000' }));
    expect((await read(gw, 1)).status).toBe(200);
    expect(b.total).toBe(0);
  });
});

describe('lag', () => {
  it('skips a lagging upstream for latest-state reads and shows it in /ready', async () => {
    const [a, b] = [await node(100), await node(110)];
    const gw = await gateway(listEnv([a, b]));
    expect((await read(gw, 1)).status).toBe(200); // a reports 100
    a.status5xx(503, { times: 1 });
    expect((await read(gw, 2)).status).toBe(200); // failover: b reports 110
    expect(states(await ready(gw))).toEqual(['lagging', 'ok']);
    const before = a.count('call-read');
    expect((await read(gw, 3)).status).toBe(200);
    expect(a.count('call-read')).toBe(before);
    const ready2 = (await ready(gw)).body.data.checks.upstream.testnet.upstreams;
    expect(ready2.map((u: { tipHeight: number }) => u.tipHeight)).toEqual([100, 110]);
  });

  it('uses a lagging upstream for pinned reads, and asks another when the pinned tip is unknown', async () => {
    const [a, b] = [await node(100), await node(110)];
    // The fake nodes share one deterministic chain: a knows blocks up to 100, b up to 110, so a
    // block of height 105 is known to b only, and they answer 404 for a block neither has.
    const KNOWN = a.block(90).indexBlockHash;
    const ONLY_B = b.block(105).indexBlockHash;
    const NOWHERE = 'cc'.repeat(32);
    const echo = ({ arguments: args }: { arguments: string[] }) =>
      ({ okay: true, result: args[0]! }) as const;
    a.setReadOnly(TESTNET_ADDR, 'demo', 'get-n', echo);
    b.setReadOnly(TESTNET_ADDR, 'demo', 'get-n', echo);
    const budget = () => new TokenBucket({ capacity: 1000, refillPerMinute: 1000, queueTimeoutMs: 0 });
    const pool = new UpstreamPool([
      { id: 'a', network: 'testnet', url: a.url, priority: 0, budget: budget() },
      { id: 'b', network: 'testnet', url: b.url, priority: 1, budget: budget() },
    ]);
    const client = new StacksNodeClient({
      config: {
        upstreamUrls: { mainnet: a.url, testnet: a.url },
        stacksApiKey: undefined,
        upstreamTimeoutMs: 2000,
        upstreamRetries: 3,
        upstreamRetryBaseMs: 1,
        upstreamRetryAfterCapMs: 1,
      },
      pool,
    });
    running.push(client);
    const call = (n: number, tip?: string) =>
      client.send(CALL_READ, {
        network: 'testnet',
        params: { address: TESTNET_ADDR, contract: 'demo', function: 'get-n' },
        query: { tip },
        body: JSON.stringify({ sender: TESTNET_ADDR, arguments: [hex(Cl.uint(n))] }),
        latest: tip === undefined,
        read: 'result',
      });
    expect((await call(1)).upstream).toBe('a');
    a.status5xx(503, { times: 1 });
    expect((await call(2)).upstream).toBe('b');
    expect(pool.healthOf(pool.byId('a')!)).toBe('lagging');
    // Latest state: never the lagging node.
    expect((await call(3)).upstream).toBe('b');
    // Pinned: the preferred node, lagging or not, when it knows the block.
    const atKnown = await call(4, KNOWN);
    expect(atKnown.upstream).toBe('a');
    expect(a.lastRequest('call-read')!.query).toEqual({ tip: KNOWN });
    // Unknown to a: asked of b, which knows it.
    const atB = await call(5, ONLY_B);
    expect(atB.upstream).toBe('b');
    // Unknown everywhere: 404 naming the tip, after asking each upstream once.
    const before = [a.count('call-read'), b.count('call-read')];
    const err = await call(6, NOWHERE).then(
      () => undefined,
      (e: unknown) => e as { code: string; status: number; details: Record<string, unknown> },
    );
    expect(err).toMatchObject({ code: 'UPSTREAM_API_ERROR', status: 404, details: { tip: NOWHERE } });
    expect([a.count('call-read') - before[0]!, b.count('call-read') - before[1]!]).toEqual([1, 1]);
  });
});

describe('fair waiting for budget tokens', () => {
  /** A budget whose tokens the test hands out one by one. */
  function manualBudget(initial: number) {
    let tokens = initial;
    const waiters: Array<{ resolve: () => void; reject: (e: Error) => void }> = [];
    return {
      take(maxWaitMs?: number): Promise<void> {
        if (tokens > 0 && waiters.length === 0) {
          tokens -= 1;
          return Promise.resolve();
        }
        if (maxWaitMs === 0) return Promise.reject(budgetExhaustedError('manual', 0, 1000));
        return new Promise<void>((resolve, reject) => waiters.push({ resolve, reject }));
      },
      grant(): void {
        const w = waiters.shift();
        if (w === undefined) tokens += 1;
        else w.resolve();
      },
      waitEstimateMs: () => 0,
      available: () => tokens,
      queued: () => waiters.length,
      close(): void {
        for (const w of waiters.splice(0)) w.reject(new Error('closed'));
      },
    };
  }

  it('serves waiters round-robin across clients, FIFO within one, and caps each client’s waiters', async () => {
    const n = await node();
    const budget = manualBudget(2);
    const gw = await gateway(testEnv(n.url, { TRUST_PROXY: 'true', UPSTREAM_MAX_WAITING_PER_CLIENT: '3' }), {
      budgets: { mainnet: manualBudget(100), testnet: budget },
    });
    const pool = gw.gateway.upstreams!;
    // One trusted proxy appends the client's address: the rightmost entry; what a client wrote
    // to the left of it (here a constant) is not who it is.
    const from = (ip: string) => ({ 'x-forwarded-for': `10.9.9.9, ${ip}` });
    expect((await read(gw, 0, from('10.0.0.9'))).status).toBe(200); // ABI and call: the two tokens

    const pending: Array<Promise<JsonResponse>> = [];
    for (const [i, arg] of [11, 12, 13].entries()) {
      pending.push(read(gw, arg, from('10.0.0.1')));
      await until(() => pool.waiting('testnet') === i + 1, `${i + 1} waiters`);
    }
    // A fourth from the same client is refused at once; the cache still answers it.
    const capped = await read(gw, 14, from('10.0.0.1'));
    expect(capped.status).toBe(429);
    expect(capped.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
    expect((await read(gw, 0, from('10.0.0.1'))).status).toBe(200);
    // Another client is not affected by the first one's cap.
    pending.push(read(gw, 21, from('10.0.0.2')));
    await until(() => pool.waiting('testnet') === 4, '4 waiters');

    for (let i = 1; i <= 4; i++) {
      budget.grant();
      await n.waitForRequests(1 + i, { kind: 'call-read' });
    }
    const args = n.requests
      .filter((r) => r.kind === 'call-read')
      .slice(1)
      .map((r) => (r.body as { arguments: string[] }).arguments[0]);
    expect(args).toEqual([11, 21, 12, 13].map((v) => hex(Cl.uint(v))));
    expect((await Promise.all(pending)).map((r) => r.status)).toEqual([200, 200, 200, 200]);
  });
});

describe('/ready and /metrics per upstream', () => {
  it('lists each upstream without credentials, labels metrics by upstream, and never shows an API key', async () => {
    const [a, b] = [await node(), await node()];
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cc-upstreams-'));
    const file = path.join(dir, 'upstreams.json');
    const withUser = a.url.replace('http://', 'http://operator:pw-secret-1@');
    writeFileSync(
      file,
      JSON.stringify([
        { url: withUser, network: 'testnet' },
        { url: `${b.url}/`, network: 'testnet', apiKey: 'key-secret-2', rateLimitPerMinute: 50 },
      ]),
    );
    try {
      const gw = await gateway({ ...testEnv(a.url), STACKS_API_URL_TESTNET: '', UPSTREAMS_FILE: file });
      a.status5xx(503, { times: 1 });
      expect((await read(gw, 1)).status).toBe(200); // the ABI from b, the call from a
      // The key goes to its own upstream only; the URL's user:password is never sent.
      expect(b.lastRequest()!.headers['x-api-key']).toBe('key-secret-2');
      expect(a.requests.every((r) => r.headers['x-api-key'] === undefined)).toBe(true);
      expect(a.requests.every((r) => r.headers.authorization === undefined)).toBe(true);

      const res = await ready(gw);
      expect(res.status).toBe(200);
      const listed = res.body.data.checks.upstream.testnet.upstreams;
      expect(listed).toEqual([
        expect.objectContaining({ id: 'testnet', url: a.url, state: 'ok', priority: 0, tipHeight: 100 }),
        expect.objectContaining({ id: 'testnet-2', url: b.url, state: 'ok', priority: 1, tipHeight: 100 }),
      ]);
      // The existing fields stay.
      expect(res.body.data.checks.upstream.testnet).toMatchObject({ state: expect.any(String) });
      expect(res.body.data.checks.upstream.mainnet.upstreams).toEqual([
        expect.objectContaining({ id: 'mainnet', url: a.url }),
      ]);

      const { text, samples } = await metrics(gw);
      const attempts = (upstream: string, outcome: string) =>
        metricValue(samples, 'clarity_cache_upstream_attempts_total', {
          network: 'testnet',
          upstream,
          kind: 'interface',
          outcome,
        });
      expect(attempts('testnet', 'server-error')).toBe(1);
      expect(attempts('testnet-2', 'ok')).toBe(1);
      expect(metricValue(samples, 'clarity_cache_upstream_state', { upstream: 'testnet', state: 'ok' })).toBe(
        1,
      );
      expect(metricValue(samples, 'clarity_cache_budget_tokens', { upstream: 'testnet-2' })).toBe(49);
      expect(metricValue(samples, 'clarity_cache_upstream_tip_height', { upstream: 'testnet-2' })).toBe(100);
      for (const body of [text, JSON.stringify(res.body)]) {
        expect(body).not.toContain('secret');
        expect(body).not.toContain('operator');
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('logs', () => {
  it('never carry a URL’s credentials or an API key, even at debug level with failures and breakers', async () => {
    const [a, b] = [await node(), await node()];
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cc-upstreams-'));
    const file = path.join(dir, 'upstreams.json');
    writeFileSync(
      file,
      JSON.stringify([
        {
          url: a.url.replace('http://', 'http://operator:pw-secret-1@'),
          network: 'testnet',
          apiKey: 'key-secret-1',
        },
        { url: b.url, network: 'testnet', apiKey: 'key-secret-2' },
      ]),
    );
    const svc = await startService({
      CACHE_STORE: 'memory',
      LOG_LEVEL: 'debug',
      STACKS_API_URL_MAINNET: a.url,
      UPSTREAMS_FILE: file,
      UPSTREAM_BREAKER_FAILURES: '1',
      UPSTREAM_RETRY_BASE_MS: '1',
    });
    try {
      // After the start-up checks (mainnet and testnet-1 are on a, testnet-2 on b), a fails.
      await a.waitForRequests(2, { kind: 'info' });
      await b.waitForRequests(1, { kind: 'info' });
      a.status5xx(503);
      const res = await request(`${svc.url}/contract-calls/read-only/${TESTNET_ADDR}/demo/get-n`, {
        body: { functionArgs: [hex(Cl.uint(1))] },
      });
      expect(res.status).toBe(200);
      expect(b.lastRequest()!.headers['x-api-key']).toBe('key-secret-2');
      expect(a.lastRequest()!.headers['x-api-key']).toBe('key-secret-1');
      await request(`${svc.url}/ready`);
    } finally {
      await svc.stop();
      rmSync(dir, { recursive: true, force: true });
    }
    const out = svc.output();
    expect(out).toContain('upstream circuit open');
    expect(out).toContain('failing over to another upstream');
    expect(out).toContain('"upstream":"testnet-2"');
    for (const secret of ['pw-secret', 'key-secret', 'operator']) expect(out).not.toContain(secret);
  });
});

const redis = await startRedis();
afterAll(async () => {
  await redis?.stop();
});

describe.skipIf(redis === undefined)('with Redis (CACHE_STORE=redis)', () => {
  it('shares breaker state: an upstream one instance found broken is skipped by the other', async () => {
    const [a, b] = [await node(), await node()];
    a.status5xx(503);
    const env = listEnv([a, b], {
      CACHE_STORE: 'redis',
      REDIS_URL: redis!.url,
      UPSTREAM_BREAKER_FAILURES: '2',
      UPSTREAM_BREAKER_COOLDOWN_MS: '60000',
    });
    const one = await gateway(env);
    const two = await gateway(env);
    expect((await read(one, 1)).status).toBe(200); // ABI and call fail on a: open
    expect(a.total).toBe(2);
    expect(states(await ready(one))).toEqual(['open', 'ok']);
    // The other instance learns it from Redis, without a failure of its own.
    const breaker = two.gateway.upstreams!.byId('testnet')!.breaker;
    await until(() => breaker.state() === 'open', 'the second instance to see the open circuit');
    expect(states(await ready(two))).toEqual(['open', 'ok']);
    expect((await read(two, 2)).status).toBe(200);
    expect(a.total).toBe(2);
    expect(b.count('call-read')).toBe(2);
  });

  it('shares each upstream’s budget: tokens one instance spent are gone for the other', async () => {
    const [a, b] = [await node(), await node()];
    const env = listEnv([a, b], {
      CACHE_STORE: 'redis',
      REDIS_URL: redis!.url,
      UPSTREAM_RATE_LIMIT_PER_MINUTE: '2',
      UPSTREAM_QUEUE_TIMEOUT_MS: '0',
    });
    // Fresh buckets and cache: an earlier test of this file used the same keys.
    const { Redis } = await import('ioredis');
    const admin = new Redis(redis!.url);
    await admin.flushall();
    await admin.quit();
    const one = await gateway(env);
    const two = await gateway(env);
    expect((await read(one, 1)).status).toBe(200); // a's two tokens: ABI and call
    expect([a.total, b.total]).toEqual([2, 0]);
    expect((await read(two, 2)).status).toBe(200); // a has none left, for any instance
    expect((await read(one, 3)).status).toBe(200);
    expect([a.total, b.total]).toEqual([2, 2]);
    const refused = await read(two, 4);
    expect(refused.status).toBe(429);
    expect([a.total, b.total]).toEqual([2, 2]);
  });
});

describe('an upstream that reports a tip height nobody could reach', () => {
  it('does not capture traffic: its answers are discarded, the healthy upstreams answer, the tip never moves to it', async () => {
    // The hostile node is first in preference; the honest one is at the real tip.
    const hostile = await node(100);
    const honest = await node(100);
    const gw = await gateway(listEnv([hostile, honest], { CHAIN_TIP_MAX_ADVANCE: '30' }));
    // Start-up (main.ts): one /v2/info of each upstream; the gateway believes tip 100 (both agree at first).
    expect(await gw.gateway.startupRound?.()).toEqual([]);
    expect((await read(gw, 1)).status).toBe(200);
    hostile.setTipHeight(9_007_199_254_740_991);
    const answers: JsonResponse[] = [];
    for (let i = 2; i < 8; i++) answers.push(await read(gw, i));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200]);
    // Every answer came from the honest node and says its height, never the hostile one.
    for (const a of answers) expect(a.headers.get('x-canonical-stacks-tip-height')).toBe('100');
    expect(gw.gateway.chain.known('testnet')?.height).toBe(100);
    const ready = await request(`${gw.url}/ready`);
    const states = ready.body.data.checks.upstream.testnet.upstreams.map((u: { state: string }) => u.state);
    expect(states).toContain('implausible');
    expect(states).toContain('ok');
  });

  it('refuses a height far above the believed tip, but follows a node that moves a few blocks', async () => {
    const n = await node(100);
    const gw = await gateway(listEnv([n], { CHAIN_TIP_MAX_ADVANCE: '30' }));
    await gw.gateway.startupRound?.();
    expect((await read(gw, 1)).status).toBe(200);
    n.setTipHeight(105);
    expect((await read(gw, 2)).headers.get('x-canonical-stacks-tip-height')).toBe('105');
    expect(gw.gateway.chain.known('testnet')?.height).toBe(105);
    n.setTipHeight(1000);
    const far = await read(gw, 3);
    // The only upstream cannot be believed: the gateway says so instead of serving its state.
    expect(far.status).toBe(502);
    expect(far.body.error.details.reason).toBe('implausible chain tip height');
    expect(gw.gateway.chain.known('testnet')?.height).toBe(105);
  });
});
