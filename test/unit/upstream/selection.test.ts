/**
 * The parts of several-upstream selection that need no sockets: the fair queue's order, the
 * circuit breaker's states (on an injected clock), and the pool's choices (noWait, lag, the
 * per-client cap, the estimate that refuses a turn coming too late).
 */
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/errors.js';
import { TokenBucket } from '../../../src/upstream/budget/local.js';
import type { Budget } from '../../../src/upstream/budget/upstream-budget.js';
import { type BreakerChange, CircuitBreaker } from '../../../src/upstream/circuit-breaker.js';
import { FairQueue, nthTokenMs } from '../../../src/upstream/fair-queue.js';
import { UpstreamPool } from '../../../src/upstream/pool.js';

describe('FairQueue', () => {
  it('serves clients round-robin, each first come first served', () => {
    const q = new FairQueue<string>();
    for (const item of ['a1', 'a2', 'a3']) q.push('a', item);
    q.push('b', 'b1');
    q.push('b', 'b2');
    q.push('c', 'c1');
    const out: string[] = [];
    for (let x = q.shift(); x !== undefined; x = q.shift()) out.push(x);
    expect(out).toEqual(['a1', 'b1', 'c1', 'a2', 'b2', 'a3']);
    expect(q.size).toBe(0);
  });

  it('lets a newcomer go before a client that was just served, but not a client that drained and came back', () => {
    const q = new FairQueue<string>();
    q.push('a', 'a1');
    q.push('a', 'a2');
    expect(q.shift()).toBe('a1');
    q.push('b', 'b1');
    expect(q.shift()).toBe('b1');
    expect(q.shift()).toBe('a2');
    // b drained after being served; a was served after it: b's next item goes first, then a's.
    q.push('a', 'a3');
    q.push('b', 'b2');
    expect(q.shift()).toBe('b2');
    expect(q.shift()).toBe('a3');
  });

  it('counts and removes items of one client', () => {
    const q = new FairQueue<number>();
    q.push('a', 1);
    q.push('a', 2);
    q.push('b', 3);
    expect(q.countOf('a')).toBe(2);
    expect(q.remove('a', 1)).toBe(true);
    expect(q.remove('a', 1)).toBe(false);
    expect(q.remove('b', 3)).toBe(true);
    expect([q.size, q.countOf('b'), q.shift(), q.shift()]).toEqual([1, 0, 2, undefined]);
  });
});

describe('CircuitBreaker', () => {
  function breaker(sync?: { announced: BreakerChange[]; claim: boolean }) {
    let now = 1000;
    const b = new CircuitBreaker(
      'u',
      { failures: 3, cooldownMs: 100, probeLeaseMs: 50 },
      {
        now: () => now,
        ...(sync === undefined
          ? {}
          : {
              sync: {
                announce: (_id: string, change: BreakerChange) => {
                  sync.announced.push(change);
                },
                claimProbe: async () => sync.claim,
              },
            }),
      },
    );
    return { b, advance: (ms: number) => (now += ms) };
  }

  it('opens after N consecutive failures; an answer in between resets the count', () => {
    const { b } = breaker();
    b.onFailure();
    b.onFailure();
    b.onSuccess();
    b.onFailure();
    b.onFailure();
    expect(b.state()).toBe('closed');
    b.onFailure();
    expect(b.state()).toBe('open');
    expect(b.probeDue()).toBe(false);
  });

  it('allows one probe after the cooldown; its success closes, its failure reopens', async () => {
    const { b, advance } = breaker();
    for (let i = 0; i < 3; i++) b.onFailure();
    advance(100);
    expect(b.state()).toBe('half-open');
    expect(await b.claimProbe()).toBe(true);
    expect(await b.claimProbe()).toBe(false);
    b.onFailure();
    expect(b.state()).toBe('open');
    advance(100);
    expect(await b.claimProbe()).toBe(true);
    b.onSuccess();
    expect(b.state()).toBe('closed');
    expect(b.closed).toBe(true);
  });

  it('lets another caller probe when the claimed one was not sent, or its lease ran out', async () => {
    const { b, advance } = breaker();
    for (let i = 0; i < 3; i++) b.onFailure();
    advance(100);
    expect(await b.claimProbe()).toBe(true);
    b.releaseProbe();
    expect(await b.claimProbe()).toBe(true);
    advance(50);
    expect(await b.claimProbe()).toBe(true);
  });

  it('announces its transitions, follows the others’, and defers to a probe claimed elsewhere', async () => {
    const sync = { announced: [] as BreakerChange[], claim: false };
    const { b, advance } = breaker(sync);
    for (let i = 0; i < 3; i++) b.onFailure();
    expect(sync.announced).toEqual([{ state: 'open', remainingMs: 100 }]);
    advance(100);
    expect(await b.claimProbe()).toBe(false);
    b.apply({ state: 'closed' });
    expect(b.state()).toBe('closed');
    b.apply({ state: 'open', remainingMs: 40 });
    expect(b.state()).toBe('open');
    advance(40);
    expect(b.state()).toBe('half-open');
  });
});

describe('nthTokenMs', () => {
  it('merges the token times of several budgets', () => {
    // One token every 1000 ms each, both empty: tokens come at 1000, 1000, 2000, 2000, ...
    const empty = () => {
      const b = new TokenBucket({ capacity: 60, refillPerMinute: 60, queueTimeoutMs: 0, now: () => 0 });
      for (let i = 0; i < 60; i++) void b.take();
      return b;
    };
    expect(nthTokenMs([empty(), empty()], 1)).toBe(1000);
    expect(nthTokenMs([empty(), empty()], 3)).toBe(2000);
    expect(nthTokenMs([empty()], 3)).toBe(3000);
    expect(nthTokenMs([], 1)).toBe(Number.POSITIVE_INFINITY);
  });
});

describe('UpstreamPool.acquire', () => {
  const bucket = (capacity: number, queueTimeoutMs = 10_000) =>
    new TokenBucket({ capacity, refillPerMinute: 1, queueTimeoutMs });

  it('takes from the preferred upstream with a token, and waits only when none has one', async () => {
    const a = bucket(1);
    const b = bucket(1);
    const pool = new UpstreamPool(
      [
        { id: 'a', network: 'mainnet', url: 'http://a.test', priority: 0, budget: a },
        { id: 'b', network: 'mainnet', url: 'http://b.test', priority: 1, budget: b },
      ],
      { settings: { queueTimeoutMs: 100 } },
    );
    expect((await pool.acquire('mainnet'))!.id).toBe('a');
    expect((await pool.acquire('mainnet'))!.id).toBe('b');
    expect(await pool.acquire('mainnet', { noWait: true })).toBeUndefined();
    // The next token is a minute away: refused at once, not after the queue timeout.
    await expect(pool.acquire('mainnet')).rejects.toMatchObject({ code: 'RATE_LIMIT_EXCEEDED', status: 429 });
    expect(pool.waiting('mainnet')).toBe(0);
    a.close();
    b.close();
  });

  it('caps the waiters of one client, not of others', async () => {
    const manual: Budget & { release(): void } = (() => {
      const waiters: Array<() => void> = [];
      return {
        take: (maxWaitMs?: number) =>
          maxWaitMs === 0
            ? Promise.reject(new GatewayError('RATE_LIMIT_EXCEEDED', 'none', {}))
            : new Promise<void>((resolve) => waiters.push(resolve)),
        waitEstimateMs: () => 0,
        available: () => 0,
        queued: () => waiters.length,
        close: () => undefined,
        release: () => {
          for (const w of waiters.splice(0)) w();
        },
      };
    })();
    const pool = new UpstreamPool([{ id: 'a', network: 'testnet', url: 'http://a.test', budget: manual }], {
      settings: { maxWaitingPerClient: 2 },
    });
    const first = [pool.acquire('testnet', { clientId: 'x' }), pool.acquire('testnet', { clientId: 'x' })];
    await expect(pool.acquire('testnet', { clientId: 'x' })).rejects.toMatchObject({
      code: 'RATE_LIMIT_EXCEEDED',
      details: { maxWaitingPerClient: 2 },
    });
    const other = pool.acquire('testnet', { clientId: 'y' });
    expect(pool.waiting('testnet')).toBe(3);
    for (let i = 0; i < 3; i++) {
      manual.release();
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect((await Promise.all([...first, other])).map((u) => u!.id)).toEqual(['a', 'a', 'a']);
    expect(pool.waiting('testnet')).toBe(0);
  });

  it('skips a lagging upstream for latest-state reads only, and asks it for its tip', async () => {
    const pool = new UpstreamPool([
      { id: 'a', network: 'testnet', url: 'http://a.test', priority: 0, budget: bucket(10) },
      { id: 'b', network: 'testnet', url: 'http://b.test', priority: 1, budget: bucket(10) },
    ]);
    const checked: string[] = [];
    pool.lagCheck = (u) => checked.push(u.id);
    const [a, b] = pool.upstreams('testnet');
    pool.report(a!, 'ok', 10, 100);
    pool.report(b!, 'ok', 10, 102);
    expect(pool.isLagging(a!)).toBe(false);
    pool.report(b!, 'ok', 10, 103);
    expect(pool.healthOf(a!)).toBe('lagging');
    expect((await pool.acquire('testnet'))!.id).toBe('b');
    expect((await pool.acquire('testnet', { latest: false }))!.id).toBe('a');
    expect(checked).toEqual(['a']);
  });

  it('skips an open circuit while another can serve, and tries it anyway when none can', async () => {
    const pool = new UpstreamPool(
      [
        { id: 'a', network: 'testnet', url: 'http://a.test', priority: 0, budget: bucket(10) },
        { id: 'b', network: 'testnet', url: 'http://b.test', priority: 1, budget: bucket(10) },
      ],
      { settings: { breakerFailures: 1 } },
    );
    const [a, b] = pool.upstreams('testnet');
    pool.report(a!, 'timeout', 10);
    expect(pool.healthOf(a!)).toBe('open');
    expect((await pool.acquire('testnet'))!.id).toBe('b');
    pool.report(b!, 'server-error', 10);
    expect((await pool.acquire('testnet'))!.id).toBe('a');
    expect(pool.hasAlternative('testnet', { avoid: new Set() })).toBe(false);
  });
});

describe('UpstreamPool waiting without a client', () => {
  it('does not cap the gateway’s own requests (no client id), only queues them fairly', async () => {
    const waiters: Array<() => void> = [];
    const budget: Budget = {
      take: (maxWaitMs?: number) =>
        maxWaitMs === 0
          ? Promise.reject(new GatewayError('RATE_LIMIT_EXCEEDED', 'none', {}))
          : new Promise<void>((resolve) => waiters.push(resolve)),
      waitEstimateMs: () => 0,
      available: () => 0,
      queued: () => waiters.length,
      close: () => undefined,
    };
    const pool = new UpstreamPool([{ id: 'a', network: 'testnet', url: 'http://a.test', budget }], {
      settings: { maxWaitingPerClient: 1 },
    });
    const all = [pool.acquire('testnet'), pool.acquire('testnet'), pool.acquire('testnet')];
    await new Promise((resolve) => setImmediate(resolve));
    expect(pool.waiting('testnet')).toBe(3);
    for (let i = 0; i < 3; i++) {
      for (const w of waiters.splice(0)) w();
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect((await Promise.all(all)).length).toBe(3);
  });
});
