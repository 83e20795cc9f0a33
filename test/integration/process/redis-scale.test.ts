/**
 * Several instances on one Redis (CACHE_STORE=redis), as users run them: two real gateway
 * processes (`node --import tsx src/main.ts`) sharing a throwaway redis-server, in front of
 * one fake Stacks node that counts every upstream request.
 *
 * - a miss on one instance is a hit on the other (results, ABIs, known contracts, TTLs);
 * - a concurrent cold burst spread over both makes one upstream call;
 * - the upstream budget is global;
 * - a Redis kill and restart under load costs no failed request.
 *
 * The figures each test measured are printed (one "[redis-scale]" line each).
 */
import { Cl } from '@stacks/transactions';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { hex, SAMPLE_ABI, TESTNET_ADDR } from '../../support/fixtures.js';
import { type JsonResponse, request } from '../../support/gateway.js';
import { type ServiceProcess, startService } from '../../support/process.js';
import { type RedisServer, startRedis } from '../../support/redis-server.js';

const redis = await startRedis();

const BALANCE = hex(Cl.ok(Cl.uint(77)));
const WAIT_LINE = 'coalescing: waiting for another instance';
const DOWN_LINE = 'redis unavailable';
const READY_LINE = 'redis connection ready';

/** Resolves once svc has printed `text` at least `times` times (event-based, bounded). */
function waitForOutput(svc: ServiceProcess, text: string, times = 1, timeoutMs = 20_000): Promise<void> {
  const count = (): number => svc.output().split(text).length - 1;
  if (count() >= times) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onData = (): void => {
      if (count() < times) return;
      cleanup();
      resolve();
    };
    const timer = setTimeout(() => {
      cleanup();
      reject(
        new Error(
          `expected "${text}" ${times}x in the service output within ${timeoutMs} ms:\n${svc.output()}`,
        ),
      );
    }, timeoutMs);
    const cleanup = (): void => {
      clearTimeout(timer);
      svc.child.stdout?.off('data', onData);
      svc.child.stderr?.off('data', onData);
    };
    // Registered after startService's own listeners, so output() already holds the chunk.
    svc.child.stdout?.on('data', onData);
    svc.child.stderr?.on('data', onData);
  });
}

const report = (line: string): void => {
  console.log(`[redis-scale] ${line}`);
};

describe.skipIf(redis === undefined)('two gateway processes sharing one Redis', () => {
  let node: FakeNode;
  let admin: Redis;
  const running: ServiceProcess[] = [];
  let principals = 0;

  /** A principal never asked for before: a cold cache key. */
  const newWho = (): string => `${TESTNET_ADDR}.p${++principals}`;
  const call = (
    svc: ServiceProcess,
    who: string,
    cacheControl?: Record<string, unknown>,
  ): Promise<JsonResponse> =>
    request(`${svc.url}/contract-calls/read-only/${TESTNET_ADDR}/demo/get-balance`, {
      body: { functionArgs: [{ type: 'principal', value: who }], ...(cacheControl ? { cacheControl } : {}) },
    });

  /** Two instances on redisUrl, started side by side. */
  const pair = async (
    redisUrl: string,
    env: Record<string, string> = {},
  ): Promise<[ServiceProcess, ServiceProcess]> => {
    const base = {
      CACHE_STORE: 'redis',
      REDIS_URL: redisUrl,
      STACKS_API_URL_MAINNET: node.url,
      STACKS_API_URL_TESTNET: node.url,
      UPSTREAM_RETRY_BASE_MS: '1',
      UPSTREAM_RATE_LIMIT_PER_MINUTE: '100000',
      ...env,
    };
    const started = await Promise.all([startService(base), startService(base)]);
    running.push(...started);
    return started;
  };

  beforeAll(async () => {
    node = await startFakeNode();
    node.setAbi(TESTNET_ADDR, 'demo', SAMPLE_ABI);
    node.setReadOnly(TESTNET_ADDR, 'demo', 'get-balance', { okay: true, result: BALANCE });
    admin = new Redis(redis!.url, { lazyConnect: true });
    await admin.connect();
  });

  afterEach(async () => {
    node.clearFaults();
    node.release();
    const stopping = running.splice(0);
    const codes = await Promise.all(stopping.map((svc) => svc.stop()));
    expect(codes).toEqual(stopping.map(() => 0));
    await admin.flushall();
    node.resetStats();
  });

  afterAll(async () => {
    admin?.disconnect();
    await node?.close();
    await redis?.stop();
  });

  it('a miss on one instance is a hit on the other: results, ABIs, known contracts, TTLs as Redis expiries', async () => {
    const [a, b] = await pair(redis!.url);
    const who = newWho();

    const first = await call(a, who);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ success: true, data: '77' });
    expect(node.count('interface')).toBe(1);
    expect(node.count('call-read')).toBe(1);

    const second = await call(b, who);
    expect(second.body).toEqual({ success: true, data: '77' });
    const abi = await request(`${b.url}/contract-calls/abi/${TESTNET_ADDR}/demo`);
    expect(abi.body).toEqual({ success: true, data: SAMPLE_ABI });
    const known = await request(`${b.url}/contract-calls/known-contracts`);
    expect(known.body.data.contracts.cached).toEqual([
      expect.objectContaining({ contractAddress: TESTNET_ADDR, contractName: 'demo' }),
    ]);
    // Nothing more went upstream (besides each instance's start-up /v2/info check): b answered
    // everything from what a stored.
    expect(node.total - node.count('info')).toBe(2);

    // A ttl is a Redis expiry on the shared entry: the ttl plus CACHE_STALE_MAX_S (default one
    // day), for which the entry is kept past its freshness for stale answers.
    const withTtl = newWho();
    expect((await call(b, withTtl, { ttl: 60 })).status).toBe(200);
    // (KEYS is fine in a test; the gateway itself never uses it.) Two results: one with a ttl.
    const keys = await admin.keys('cc:k:ro:*');
    expect(keys).toHaveLength(2);
    const ttls = (await Promise.all(keys.map((k) => admin.pttl(k)))).sort((x, y) => x - y);
    expect(ttls[0]).toBe(-1);
    expect(ttls[1]).toBeGreaterThan(86_400_000);
    expect(ttls[1]).toBeLessThanOrEqual(86_460_000);
    expect((await call(a, withTtl)).body.data).toBe('77');
    expect(node.count('call-read')).toBe(2);
    report(
      `miss on A then B: upstream interface=${node.count('interface')} call-read=1; B answered from Redis`,
    );
  });

  it('keeps hot tiers coherent: a bustCache or an admin invalidation on one instance reaches the other', async () => {
    const token = 'scale-admin-token';
    const [a, b] = await pair(redis!.url, { ADMIN_TOKEN: token });
    const who = newWho();
    let balance = 1n;
    node.setReadOnly(TESTNET_ADDR, 'demo', 'get-balance', () => ({
      okay: true,
      result: hex(Cl.ok(Cl.uint(balance))),
    }));
    try {
      expect((await call(a, who)).body.data).toBe('1');
      expect((await call(b, who)).body.data).toBe('1'); // now in b's hot tier too
      balance = 2n;
      expect((await call(a, who, { bustCache: true })).body.data).toBe('2');
      // b drops its hot copy when a's write is announced, and reads the fresh value from Redis.
      await expect.poll(async () => (await call(b, who)).body.data, { timeout: 5_000 }).toBe('2');

      balance = 3n;
      const deleted = await request(
        `${a.url}/admin/cache/contracts/${TESTNET_ADDR}/demo/functions/get-balance`,
        {
          method: 'DELETE',
          headers: { authorization: `Bearer ${token}` },
        },
      );
      expect(deleted.body.data.deleted).toBeGreaterThanOrEqual(1);
      await expect.poll(async () => (await call(b, who)).body.data, { timeout: 5_000 }).toBe('3');
      report('coherence: bustCache on A and an invalidation on A were seen by B');
    } finally {
      node.setReadOnly(TESTNET_ADDR, 'demo', 'get-balance', { okay: true, result: BALANCE });
    }
  });

  it('a concurrent cold burst spread over both instances makes one upstream call', async () => {
    const [a, b] = await pair(redis!.url, { LOG_LEVEL: 'debug' });
    const who = newWho();
    node.gate({ kind: 'call-read' });

    const perInstance = 25;
    const burst = Array.from({ length: perInstance * 2 }, (_, i) => call(i % 2 === 0 ? a : b, who));
    // One instance holds the call upstream; the other waits for it (it says so at debug level).
    await node.waitForRequests(1, { kind: 'call-read', timeoutMs: 20_000 });
    await Promise.race([waitForOutput(a, WAIT_LINE), waitForOutput(b, WAIT_LINE)]);
    node.release();

    const results = await Promise.all(burst);
    expect(results.map((r) => r.status)).toEqual(results.map(() => 200));
    expect(new Set(results.map((r) => r.body.data))).toEqual(new Set(['77']));
    expect(node.count('call-read')).toBe(1);
    expect(node.count('interface')).toBe(1);
    report(
      `cold burst of ${results.length} identical calls over 2 instances: upstream call-read=${node.count('call-read')} interface=${node.count('interface')}`,
    );
  });

  it('the upstream budget is global: both instances together get UPSTREAM_RATE_LIMIT_PER_MINUTE', async () => {
    // 5 a minute (a token every 12 s: nothing refills during the test), no queueing. Each
    // instance's start-up /v2/info check takes one of the network's tokens first.
    const started = Date.now();
    const [a, b] = await pair(redis!.url, {
      UPSTREAM_RATE_LIMIT_PER_MINUTE: '5',
      UPSTREAM_QUEUE_TIMEOUT_MS: '0',
      UPSTREAM_RETRIES: '0',
    });
    await node.waitForRequests(4, { kind: 'info' });
    node.resetStats();
    const statuses: number[] = [];
    let refused: JsonResponse | undefined;
    for (let i = 0; i < 8; i++) {
      const res = await call(i % 2 === 0 ? a : b, newWho());
      statuses.push(res.status);
      if (res.status === 429) refused ??= res;
    }
    // The ABI and two calls took the 3 tokens; every later call, on either instance, is refused.
    expect(node.total).toBe(3);
    expect(statuses).toEqual([200, 200, 429, 429, 429, 429, 429, 429]);
    expect(refused!.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
    // The next token is due 12 s after the bucket began refilling, less what has passed since
    // (a loaded machine can take over a second to get here).
    const retryAfter = refused!.body.error.details.retryAfter as number;
    const elapsedS = Math.ceil((Date.now() - started) / 1000);
    expect(retryAfter).toBeLessThanOrEqual(12);
    expect(retryAfter).toBeGreaterThanOrEqual(12 - elapsedS);
    expect(refused!.headers.get('retry-after')).toBe(String(retryAfter));
    report(
      `budget 5/min shared by 2 instances (2 taken by the start-up checks): 8 distinct cold calls -> ${node.total} upstream requests (local buckets would allow 8), ${statuses.filter((s) => s === 200).length} x 200, ${statuses.filter((s) => s === 429).length} x 429 Retry-After ${retryAfter}`,
    );
  });

  describe('a Redis outage', () => {
    let own: RedisServer;

    beforeAll(async () => {
      own = (await startRedis())!;
    });

    afterAll(async () => {
      await own?.stop();
    });

    it('costs no failed request: hot hits served, misses go upstream, both instances reconnect and share again', async () => {
      const [a, b] = await pair(own.url);
      const warm = newWho();
      expect((await call(a, warm)).status).toBe(200);
      expect((await call(b, warm)).status).toBe(200); // from Redis, now in both hot tiers

      // Load on both instances throughout: mostly hot hits, every fourth a cold miss.
      const statuses: number[] = [];
      let slowest = 0;
      let stop = false;
      const loop = async (svc: ServiceProcess): Promise<void> => {
        for (let i = 0; !stop; i++) {
          const started = performance.now();
          try {
            statuses.push((await call(svc, i % 4 === 0 ? newWho() : warm)).status);
          } catch {
            statuses.push(0); // no answer at all
          }
          slowest = Math.max(slowest, performance.now() - started);
        }
      };
      const load = Promise.all([loop(a), loop(b)]);
      const warmArg = hex(Cl.principal(warm));
      const upstreamFor = (from: number, warmOnly: boolean): number =>
        node.requests
          .slice(from)
          .filter(
            (r) =>
              r.kind === 'call-read' &&
              warmOnly === ((r.body as { arguments?: string[] } | undefined)?.arguments?.[0] === warmArg),
          ).length;
      let outageRequests = 0;
      let outageUpstream = 0;
      try {
        await expect.poll(() => statuses.length, { timeout: 10_000 }).toBeGreaterThan(20);
        await own.kill();
        await Promise.all([waitForOutput(a, DOWN_LINE), waitForOutput(b, DOWN_LINE)]);
        const outageStart = statuses.length;
        const upstreamStart = node.requests.length;

        // While Redis is gone: hot hits are served, misses go upstream under the local budget.
        expect((await call(a, warm)).body.data).toBe('77');
        expect((await call(b, warm)).body.data).toBe('77');
        expect((await call(b, newWho())).body.data).toBe('77');
        await expect.poll(() => statuses.length - outageStart, { timeout: 10_000 }).toBeGreaterThan(100);
        outageRequests = statuses.length - outageStart;
        outageUpstream = upstreamFor(upstreamStart, false);
        expect(outageUpstream).toBeGreaterThan(0);

        await own.restart();
        // "redis connection ready" once at start-up, once more after the restart.
        await Promise.all([waitForOutput(a, READY_LINE, 2), waitForOutput(b, READY_LINE, 2)]);
        const afterRestart = statuses.length;
        await expect.poll(() => statuses.length - afterRestart, { timeout: 10_000 }).toBeGreaterThan(50);
      } finally {
        stop = true;
        await load;
      }
      // The warm entry never went upstream again: the hot tiers answered it throughout.
      expect(upstreamFor(0, true)).toBe(1);

      // Shared again: a miss on a is a hit on b.
      node.resetStats();
      const shared = newWho();
      expect((await call(a, shared)).status).toBe(200);
      expect((await call(b, shared)).status).toBe(200);
      expect(node.count('call-read')).toBe(1);
      expect(node.count('interface')).toBe(0);

      const failed = statuses.filter((s) => s !== 200).length;
      expect(failed).toBe(0);
      for (const svc of [a, b]) expect(svc.output()).toContain('upstream budget: redis unreachable');
      report(
        `Redis SIGKILL + restart under load: ${statuses.length} requests over 2 instances (${outageRequests} while Redis was down, ${outageUpstream} of them cold misses sent upstream), ${failed} failed, slowest ${Math.round(slowest)} ms`,
      );
    });
  });
});
