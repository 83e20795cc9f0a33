/**
 * Retry policy: the pure backoff / Retry-After arithmetic, and the client's attempt loop
 * driven through an undici MockAgent with an injected sleep (no real waiting, no sockets).
 */
import { MockAgent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import type { Network } from '../../../src/config/index.js';
import { GatewayError } from '../../../src/errors.js';
import type { AttemptEvent } from '../../../src/upstream/attempts.js';
import type { Budget } from '../../../src/upstream/budget/upstream-budget.js';
import { CALL_READ, INTERFACE } from '../../../src/upstream/endpoints.js';
import {
  backoffDelayMs,
  parseRetryAfterMs,
  retryDelayMs,
  toRetryAfterSeconds,
} from '../../../src/upstream/retry.js';
import { StacksNodeClient, type UpstreamConfig } from '../../../src/upstream/stacks-node.js';

describe('backoffDelayMs (equal jitter)', () => {
  it('stays within [exp/2, exp] for exp = base * 2^retry', () => {
    let seed = 42;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let retry = 0; retry < 6; retry++) {
      const exp = 500 * 2 ** retry;
      for (let i = 0; i < 200; i++) {
        const d = backoffDelayMs(retry, 500, random, 1_000_000);
        expect(d).toBeGreaterThanOrEqual(exp / 2);
        expect(d).toBeLessThanOrEqual(exp);
      }
    }
  });

  it('uses the random value across the whole range', () => {
    expect(backoffDelayMs(0, 500, () => 0, 1e6)).toBe(250);
    expect(backoffDelayMs(0, 500, () => 0.5, 1e6)).toBe(375);
    expect(backoffDelayMs(0, 500, () => 0.999999, 1e6)).toBe(500);
  });

  it('grows exponentially: the shortest wait before retry n+1 is the longest before retry n', () => {
    for (let retry = 0; retry < 5; retry++) {
      const longest = backoffDelayMs(retry, 300, () => 0.999999, 1e6);
      const nextShortest = backoffDelayMs(retry + 1, 300, () => 0, 1e6);
      expect(nextShortest).toBeGreaterThanOrEqual(longest);
      expect(nextShortest).toBe(300 * 2 ** retry);
    }
  });

  it('is capped by maxBackoffMs', () => {
    expect(backoffDelayMs(20, 500, () => 0.999999, 30_000)).toBe(30_000);
    expect(backoffDelayMs(20, 500, () => 0, 30_000)).toBe(15_000);
  });
});

describe('parseRetryAfterMs', () => {
  const now = Date.parse('2025-01-01T00:00:00Z');
  it('reads delta-seconds, fractional too', () => {
    expect(parseRetryAfterMs('3', now)).toBe(3000);
    expect(parseRetryAfterMs(' 1.5 ', now)).toBe(1500);
    expect(parseRetryAfterMs(['7', '9'], now)).toBe(7000);
  });
  it('reads an HTTP-date relative to now, never negative', () => {
    expect(parseRetryAfterMs('Wed, 01 Jan 2025 00:00:05 GMT', now)).toBe(5000);
    expect(parseRetryAfterMs('Tue, 31 Dec 2024 23:59:00 GMT', now)).toBe(0);
  });
  it('ignores absent or unparseable values', () => {
    expect(parseRetryAfterMs(undefined, now)).toBeUndefined();
    expect(parseRetryAfterMs('', now)).toBeUndefined();
    expect(parseRetryAfterMs('soon', now)).toBeUndefined();
    expect(parseRetryAfterMs('-3', now)).toBeUndefined();
  });
});

describe('retryDelayMs and toRetryAfterSeconds', () => {
  const policy = { baseMs: 500, maxBackoffMs: 30_000, retryAfterCapMs: 10_000, random: () => 0.5 };
  it('honours Retry-After exactly below the cap and caps it above', () => {
    expect(retryDelayMs(0, 2000, policy)).toBe(2000);
    expect(retryDelayMs(2, 0, policy)).toBe(0);
    expect(retryDelayMs(0, 120_000, policy)).toBe(10_000);
  });
  it('falls back to the backoff without Retry-After', () => {
    expect(retryDelayMs(2, undefined, policy)).toBe(1500);
  });
  it('rounds up to whole seconds, at least 1', () => {
    expect(toRetryAfterSeconds(0)).toBe(1);
    expect(toRetryAfterSeconds(1001)).toBe(2);
    expect(toRetryAfterSeconds(3000)).toBe(3);
  });
});

// --- the client's attempt loop -------------------------------------------------------------

const ORIGIN = 'http://node.test';
const ADDR = 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM';
const CALL_PATH = `/v2/contracts/call-read/${ADDR}/counter/get-count`;
const ABI_PATH = `/v2/contracts/interface/${ADDR}/counter`;
const NOW = Date.parse('2025-01-01T00:00:00Z');
const OK_BODY = JSON.stringify({ okay: true, result: '0x0100000000000000000000000000000005' });

interface Harness {
  agent: MockAgent;
  client: StacksNodeClient;
  sleeps: number[];
  log: string[];
  events: AttemptEvent[];
  takes: Record<Network, number>;
}

const agents: MockAgent[] = [];
afterEach(async () => {
  for (const a of agents.splice(0)) await a.close();
});

function setup(
  opts: { retries?: number; budget?: (network: Network, n: number) => Promise<void>; cap?: number } = {},
): Harness {
  const agent = new MockAgent();
  agent.disableNetConnect();
  agents.push(agent);
  const log: string[] = [];
  const takes: Record<Network, number> = { mainnet: 0, testnet: 0 };
  const budget = (network: Network): Budget => ({
    take: async () => {
      takes[network] += 1;
      log.push(`take:${network}`);
      if (opts.budget) await opts.budget(network, takes[network]);
    },
    available: () => 0,
    queued: () => 0,
    close: () => undefined,
  });
  const config: UpstreamConfig = {
    upstreamUrls: { mainnet: ORIGIN, testnet: ORIGIN },
    stacksApiKey: undefined,
    upstreamTimeoutMs: 5000,
    upstreamRetries: opts.retries ?? 3,
    upstreamRetryBaseMs: 500,
    upstreamRetryAfterCapMs: opts.cap ?? 10_000,
  };
  const sleeps: number[] = [];
  const events: AttemptEvent[] = [];
  const client = new StacksNodeClient({
    config,
    budgets: { mainnet: budget('mainnet'), testnet: budget('testnet') },
    dispatcher: agent,
    sleep: async (ms) => {
      sleeps.push(ms);
      log.push(`sleep:${ms}`);
    },
    random: () => 0.5,
    now: () => NOW,
    onAttempt: (e) => events.push(e),
  });
  return { agent, client, sleeps, log, events, takes };
}

type Reply =
  | { status: number; body?: string; headers?: Record<string, string> }
  | { error: Error & { code?: string } };

/** Script the replies for one path, in order; each HTTP answer is logged as "request". */
function script(h: Harness, path: string, method: 'GET' | 'POST', replies: Reply[]): void {
  const pool = h.agent.get(ORIGIN);
  for (const r of replies) {
    const interceptor = pool.intercept({ path, method });
    if ('error' in r) {
      // (a throwing reply callback would not consume the interceptor; errors are not logged)
      interceptor.replyWithError(r.error);
    } else {
      interceptor.reply(() => {
        h.log.push('request');
        return { statusCode: r.status, data: r.body ?? '', responseOptions: { headers: r.headers ?? {} } };
      });
    }
  }
}

function netError(code: string): Error & { code: string } {
  return Object.assign(new Error(`simulated ${code}`), { code });
}

function call(h: Harness, network: Network = 'testnet') {
  return readCount(h.client, network);
}

/** counter's get-count as the read-only service asks for it. */
function readCount(client: StacksNodeClient, network: Network = 'testnet') {
  return client.send(CALL_READ, {
    network,
    params: { address: ADDR, contract: 'counter', function: 'get-count' },
    body: JSON.stringify({ sender: ADDR, arguments: [] }),
    read: 'result',
  });
}

async function failure(p: Promise<unknown>): Promise<GatewayError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    return err as GatewayError;
  }
  throw new Error('expected a GatewayError, got success');
}

describe('StacksNodeClient retries', () => {
  it('retries 5xx with growing jittered backoff, then fails with 502 retryable and the attempt count', async () => {
    const h = setup({ retries: 3 });
    script(
      h,
      CALL_PATH,
      'POST',
      Array.from({ length: 4 }, () => ({ status: 503, body: 'busy' })),
    );
    const err = await failure(call(h));
    expect(err.code).toBe('UPSTREAM_API_ERROR');
    expect(err.status).toBe(502);
    expect(err.details).toMatchObject({ retryable: true, attempts: 4, upstreamStatus: 503 });
    // random = 0.5 → 3/4 of base * 2^n
    expect(h.sleeps).toEqual([375, 750, 1500]);
    expect(h.events.map((e) => e.outcome)).toEqual([
      'server-error',
      'server-error',
      'server-error',
      'server-error',
    ]);
    expect(h.events.map((e) => e.attempt)).toEqual([0, 1, 2, 3]);
    h.agent.assertNoPendingInterceptors();
  });

  it('takes a budget token before every attempt, retries included, from the right network', async () => {
    const h = setup({ retries: 2 });
    script(h, CALL_PATH, 'POST', [{ status: 500 }, { status: 502 }, { status: 200, body: OK_BODY }]);
    await expect(call(h, 'mainnet')).resolves.toMatchObject({
      result: '0x0100000000000000000000000000000005',
    });
    expect(h.log).toEqual([
      'take:mainnet',
      'request',
      'sleep:375',
      'take:mainnet',
      'request',
      'sleep:750',
      'take:mainnet',
      'request',
    ]);
    expect(h.takes).toEqual({ mainnet: 3, testnet: 0 });
  });

  it('stops when the budget refuses a retry: RATE_LIMIT_EXCEEDED, no further request', async () => {
    const h = setup({
      retries: 3,
      // Every token after the first is refused (the pool asks once without waiting, then waits).
      budget: async (_network, n) => {
        if (n >= 2) {
          throw new GatewayError(
            'RATE_LIMIT_EXCEEDED',
            'budget exhausted',
            { retryAfter: 7 },
            { retryAfter: 7 },
          );
        }
      },
    });
    script(h, CALL_PATH, 'POST', [{ status: 503 }]);
    const err = await failure(call(h));
    expect(err.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(err.status).toBe(429);
    expect(err.retryAfter).toBe(7);
    expect(err.details).toMatchObject({ retryAfter: 7, attempts: 1 });
    expect(err.message).toContain(`testnet POST ${CALL_PATH}`);
    expect(h.log.filter((l) => l === 'request')).toHaveLength(1);
  });

  it('honours a 429 Retry-After in seconds instead of the backoff', async () => {
    const h = setup();
    script(h, CALL_PATH, 'POST', [
      { status: 429, headers: { 'retry-after': '2' } },
      { status: 200, body: OK_BODY },
    ]);
    await call(h);
    expect(h.sleeps).toEqual([2000]);
  });

  it('honours a Retry-After HTTP-date relative to the injected clock', async () => {
    const h = setup();
    script(h, CALL_PATH, 'POST', [
      { status: 429, headers: { 'retry-after': 'Wed, 01 Jan 2025 00:00:04 GMT' } },
      { status: 200, body: OK_BODY },
    ]);
    await call(h);
    expect(h.sleeps).toEqual([4000]);
  });

  it('caps a huge Retry-After at upstreamRetryAfterCapMs', async () => {
    const h = setup({ cap: 3000 });
    script(h, CALL_PATH, 'POST', [
      { status: 429, headers: { 'retry-after': '3600' } },
      { status: 200, body: OK_BODY },
    ]);
    await call(h);
    expect(h.sleeps).toEqual([3000]);
  });

  it('honours Retry-After on 503 but not on other 5xx', async () => {
    const h = setup();
    script(h, CALL_PATH, 'POST', [
      { status: 503, headers: { 'retry-after': '4' } },
      { status: 500, headers: { 'retry-after': '9' } },
      { status: 200, body: OK_BODY },
    ]);
    await call(h);
    expect(h.sleeps).toEqual([4000, 750]);
  });

  it('after retries, a persistent 429 is RATE_LIMIT_EXCEEDED with the upstream retryAfter and header', async () => {
    const h = setup({ retries: 1 });
    script(h, CALL_PATH, 'POST', [
      { status: 429, headers: { 'retry-after': '5' } },
      { status: 429, headers: { 'retry-after': '6' } },
    ]);
    const err = await failure(call(h));
    expect(err.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(err.status).toBe(429);
    expect(err.details).toMatchObject({ retryAfter: 6, attempts: 2, retryable: true });
    expect(err.retryAfter).toBe(6);
  });

  it.each([['ECONNREFUSED'], ['ECONNRESET'], ['EPIPE'], ['UND_ERR_SOCKET']])(
    'retries the connection error %s and reports it as the cause',
    async (code) => {
      const h = setup({ retries: 2 });
      script(h, CALL_PATH, 'POST', [
        { error: netError(code) },
        { error: netError(code) },
        { error: netError(code) },
      ]);
      const err = await failure(call(h));
      expect(err.code).toBe('UPSTREAM_API_ERROR');
      expect(err.status).toBe(502);
      expect(err.details).toMatchObject({ cause: code, retryable: true, attempts: 3 });
      expect(h.takes.testnet).toBe(3);
      expect(h.events.every((e) => e.outcome === 'connection-error')).toBe(true);
    },
  );

  it('prefers the system code of a wrapped cause (UND_ERR_SOCKET caused by ECONNRESET)', async () => {
    const h = setup({ retries: 0 });
    const wrapped = Object.assign(new Error('other side closed'), {
      code: 'UND_ERR_SOCKET',
      cause: netError('ECONNRESET'),
    });
    script(h, CALL_PATH, 'POST', [{ error: wrapped }]);
    const err = await failure(call(h));
    expect(err.details?.['cause']).toBe('ECONNRESET');
  });

  it.each([['UND_ERR_HEADERS_TIMEOUT'], ['UND_ERR_BODY_TIMEOUT'], ['UND_ERR_CONNECT_TIMEOUT']])(
    'retries the undici timeout %s and ends with TIMEOUT 504',
    async (code) => {
      const h = setup({ retries: 1 });
      script(h, CALL_PATH, 'POST', [{ error: netError(code) }, { error: netError(code) }]);
      const err = await failure(call(h));
      expect(err.code).toBe('TIMEOUT');
      expect(err.status).toBe(504);
      expect(err.details).toMatchObject({ timeoutMs: 5000, retryable: true, attempts: 2 });
      expect(h.sleeps).toHaveLength(1);
    },
  );

  it('a transient failure followed by success returns the result with one retry', async () => {
    const h = setup();
    script(h, CALL_PATH, 'POST', [
      { error: netError('ECONNRESET') },
      { status: 200, body: OK_BODY, headers: { 'x-canonical-stacks-tip-height': '777' } },
    ]);
    await expect(call(h)).resolves.toEqual({
      result: '0x0100000000000000000000000000000005',
      tipHeight: 777,
      upstream: 'testnet',
    });
    expect(h.events.map((e) => e.outcome)).toEqual(['connection-error', 'ok']);
  });

  it('with UPSTREAM_RETRIES=0 makes exactly one attempt', async () => {
    const h = setup({ retries: 0 });
    script(h, CALL_PATH, 'POST', [{ status: 503 }]);
    const err = await failure(call(h));
    expect(err.details).toMatchObject({ attempts: 1, retryable: true });
    expect(h.sleeps).toEqual([]);
    expect(h.takes.testnet).toBe(1);
  });

  describe('final outcomes: one attempt, one token, no sleep', () => {
    const cases: Array<[string, Reply, { code: string; status: number }]> = [
      [
        '400 bad request',
        { status: 400, body: 'Failed to deserialize' },
        { code: 'UPSTREAM_API_ERROR', status: 502 },
      ],
      ['403 forbidden', { status: 403, body: 'bad api key' }, { code: 'UPSTREAM_API_ERROR', status: 502 }],
      [
        '404 unknown tip',
        { status: 404, body: 'No such block' },
        { code: 'UPSTREAM_API_ERROR', status: 502 },
      ],
      [
        'okay:false',
        { status: 200, body: JSON.stringify({ okay: false, cause: 'RuntimeCheck(UndefinedFunction("x"))' }) },
        { code: 'UPSTREAM_API_ERROR', status: 422 },
      ],
      [
        'okay:false NoSuchContract',
        { status: 200, body: JSON.stringify({ okay: false, cause: 'Unchecked(NoSuchContract("ST1.x"))' }) },
        { code: 'UPSTREAM_API_ERROR', status: 404 },
      ],
      ['200 garbage', { status: 200, body: '<html>oops' }, { code: 'UPSTREAM_API_ERROR', status: 502 }],
      [
        '200 non-hex result',
        { status: 200, body: JSON.stringify({ okay: true, result: 'u5' }) },
        { code: 'UPSTREAM_API_ERROR', status: 502 },
      ],
      [
        'non-network error',
        { error: netError('UND_ERR_INVALID_ARG') },
        { code: 'UPSTREAM_API_ERROR', status: 502 },
      ],
    ];
    it.each(cases)('%s', async (_name, reply, expected) => {
      const h = setup({ retries: 3 });
      script(h, CALL_PATH, 'POST', [reply]);
      const err = await failure(call(h));
      expect({ code: err.code, status: err.status }).toEqual(expected);
      expect(h.takes.testnet).toBe(1);
      expect(h.sleeps).toEqual([]);
      expect(h.events).toHaveLength(1);
      h.agent.assertNoPendingInterceptors();
    });

    it('ABI 404 "No contract interface data found" is a final 404', async () => {
      const h = setup({ retries: 3 });
      script(h, ABI_PATH, 'GET', [{ status: 404, body: 'No contract interface data found' }]);
      const err = await failure(
        h.client.send(INTERFACE, {
          network: 'testnet',
          params: { address: ADDR, contract: 'counter' },
          read: 'abi',
        }),
      );
      expect(err.status).toBe(404);
      expect(h.takes.testnet).toBe(1);
    });
  });

  it('a throwing onAttempt hook does not break the call', async () => {
    const agent = new MockAgent();
    agent.disableNetConnect();
    agents.push(agent);
    agent.get(ORIGIN).intercept({ path: CALL_PATH, method: 'POST' }).reply(200, OK_BODY);
    const free: Budget = {
      take: async () => undefined,
      available: () => 1,
      queued: () => 0,
      close: () => undefined,
    };
    const client = new StacksNodeClient({
      config: {
        upstreamUrls: { mainnet: ORIGIN, testnet: ORIGIN },
        stacksApiKey: undefined,
        upstreamTimeoutMs: 1000,
        upstreamRetries: 0,
        upstreamRetryBaseMs: 1,
        upstreamRetryAfterCapMs: 1,
      },
      budgets: { mainnet: free, testnet: free },
      dispatcher: agent,
      onAttempt: () => {
        throw new Error('metrics bug');
      },
    });
    await expect(readCount(client)).resolves.toMatchObject({
      result: '0x0100000000000000000000000000000005',
    });
  });
});
