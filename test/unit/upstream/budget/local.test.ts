import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { GatewayError } from '../../../../src/errors.js';
import { createUpstreamBuckets, TokenBucket } from '../../../../src/upstream/budget/local.js';

/** Settle pending microtasks (promise callbacks) without moving the fake clock. */
async function flush(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

/** Track a promise's state synchronously. */
function track(p: Promise<void>) {
  const state = { status: 'pending' as 'pending' | 'resolved' | 'rejected', error: undefined as unknown };
  p.then(
    () => {
      state.status = 'resolved';
    },
    (err: unknown) => {
      state.status = 'rejected';
      state.error = err;
    },
  );
  return state;
}

function bucket(capacity: number, refillPerMinute: number, queueTimeoutMs: number): TokenBucket {
  return new TokenBucket({
    capacity,
    refillPerMinute,
    queueTimeoutMs,
    now: () => Date.now(),
    label: 'testnet',
  });
}

describe('TokenBucket', () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(1_700_000_000_000);
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('grants `capacity` tokens at once, then makes callers wait', async () => {
    const b = bucket(3, 20, 10_000);
    expect(b.available()).toBe(3);
    const granted = [track(b.take()), track(b.take()), track(b.take())];
    await flush();
    expect(granted.map((g) => g.status)).toEqual(['resolved', 'resolved', 'resolved']);
    expect(b.available()).toBe(0);

    const fourth = track(b.take());
    await flush();
    expect(fourth.status).toBe('pending');
    expect(b.queued()).toBe(1);
    b.close();
  });

  it('refills evenly, one token every 60000/rate ms, never above capacity', async () => {
    const b = bucket(2, 60, 10_000); // one token per second
    await b.take();
    await b.take();
    expect(b.available()).toBe(0);
    vi.advanceTimersByTime(999);
    expect(b.available()).toBe(0);
    vi.advanceTimersByTime(1);
    expect(b.available()).toBe(1);
    vi.advanceTimersByTime(1000);
    expect(b.available()).toBe(2);
    vi.advanceTimersByTime(60_000);
    expect(b.available()).toBe(2);
  });

  it('wakes a waiter exactly when its token accrues', async () => {
    const b = bucket(1, 60, 10_000);
    await b.take();
    const w = track(b.take());
    await vi.advanceTimersByTimeAsync(999);
    expect(w.status).toBe('pending');
    await vi.advanceTimersByTimeAsync(1);
    expect(w.status).toBe('resolved');
    expect(b.queued()).toBe(0);
  });

  it('handles a rate that does not divide a minute (7/min: one token per 8571.4 ms)', async () => {
    const b = bucket(1, 7, 10_000);
    await b.take();
    const w = track(b.take());
    await vi.advanceTimersByTimeAsync(8571);
    expect(w.status).toBe('pending');
    await vi.advanceTimersByTimeAsync(1);
    expect(w.status).toBe('resolved');
  });

  it('serves waiters first come, first served, one per refill interval', async () => {
    const b = bucket(1, 60, 10_000);
    await b.take();
    const order: string[] = [];
    const names = ['a', 'b', 'c', 'd'];
    const all = names.map((n) => b.take().then(() => order.push(n)));
    expect(b.queued()).toBe(4);
    await vi.advanceTimersByTimeAsync(1000);
    expect(order).toEqual(['a']);
    await vi.advanceTimersByTimeAsync(2000);
    expect(order).toEqual(['a', 'b', 'c']);
    await vi.advanceTimersByTimeAsync(1000);
    await Promise.all(all);
    expect(order).toEqual(['a', 'b', 'c', 'd']);
  });

  it('never lets a newcomer overtake queued waiters, even when tokens have accrued', async () => {
    const b = bucket(2, 60, 10_000);
    await b.take();
    await b.take();
    const order: string[] = [];
    const first = b.take().then(() => order.push('first'));
    const second = b.take().then(() => order.push('second'));
    // The clock jumps (e.g. a blocked event loop) without the bucket's timer having run:
    // tokens have accrued, but the earlier waiters still own them.
    vi.setSystemTime(Date.now() + 5_000);
    expect(b.available()).toBe(0);
    const late = b.take().then(() => order.push('late'));
    await flush();
    expect(order).toEqual([]);
    expect(b.queued()).toBe(3);
    // The accrued tokens go to the two earlier waiters; the newcomer waits for the next one.
    await vi.advanceTimersByTimeAsync(0);
    expect(order).toEqual(['first', 'second']);
    await vi.advanceTimersByTimeAsync(999);
    expect(order).toEqual(['first', 'second']);
    await vi.advanceTimersByTimeAsync(1);
    await Promise.all([first, second, late]);
    expect(order).toEqual(['first', 'second', 'late']);
  });

  it('rejects a caller whose turn would come after the queue timeout with RATE_LIMIT_EXCEEDED', async () => {
    const b = bucket(2, 60, 3_000);
    await b.take();
    await b.take();
    const queued = [track(b.take()), track(b.take()), track(b.take())]; // turns at 1 s, 2 s, 3 s
    const tooLate = track(b.take()); // turn at 4 s > 3 s
    await flush();
    expect(tooLate.status).toBe('rejected');
    const err = tooLate.error as GatewayError;
    expect(err).toBeInstanceOf(GatewayError);
    expect(err.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(err.status).toBe(429);
    expect(err.details).toMatchObject({ retryAfter: 4, retryable: true });
    expect(err.retryAfter).toBe(4);
    expect(err.message).toContain('testnet');
    expect(b.queued()).toBe(3);

    await vi.advanceTimersByTimeAsync(3_000);
    expect(queued.map((q) => q.status)).toEqual(['resolved', 'resolved', 'resolved']);
    // With the queue drained, a caller gets the next token in 1 s, within the timeout.
    const later = track(b.take());
    await vi.advanceTimersByTimeAsync(1_000);
    expect(later.status).toBe('resolved');
  });

  it('rejects immediately, without parking the caller or arming a timer, when the wait already exceeds the timeout', async () => {
    const b = bucket(1, 1, 10_000); // one token per minute
    await b.take();
    const timersBefore = vi.getTimerCount();
    const p = track(b.take());
    await flush();
    expect(p.status).toBe('rejected');
    expect(b.queued()).toBe(0);
    expect(vi.getTimerCount()).toBe(timersBefore);
    expect((p.error as GatewayError).details?.['retryAfter']).toBe(60);
    expect((p.error as GatewayError).retryAfter).toBe(60);
  });

  it('with a zero queue timeout never waits, and retryAfter is at least 1 second', async () => {
    const b = bucket(1, 600, 0); // one token per 100 ms
    await b.take();
    const p = track(b.take());
    await flush();
    expect(p.status).toBe('rejected');
    expect((p.error as GatewayError).details?.['retryAfter']).toBe(1);
    vi.advanceTimersByTime(100);
    await expect(b.take()).resolves.toBeUndefined();
  });

  it('keeps a single timer however many callers wait', async () => {
    const b = bucket(1, 60, 60_000);
    await b.take();
    const before = vi.getTimerCount();
    const waiters = Array.from({ length: 20 }, () => b.take());
    expect(vi.getTimerCount()).toBe(before + 1);
    await vi.advanceTimersByTimeAsync(20_000);
    await Promise.all(waiters);
    expect(vi.getTimerCount()).toBe(before);
  });

  it('close() rejects every waiter and every later take, and clears the timer', async () => {
    const b = bucket(1, 60, 10_000);
    await b.take();
    const before = vi.getTimerCount();
    const w1 = track(b.take());
    const w2 = track(b.take());
    expect(vi.getTimerCount()).toBe(before + 1);
    b.close();
    await flush();
    expect([w1.status, w2.status]).toEqual(['rejected', 'rejected']);
    expect((w1.error as GatewayError).code).toBe('SERVICE_UNAVAILABLE');
    expect(b.queued()).toBe(0);
    expect(vi.getTimerCount()).toBe(before);
    await expect(b.take()).rejects.toBeInstanceOf(GatewayError);
    expect(b.available()).toBe(0);
  });

  it('createUpstreamBuckets builds an independent bucket per upstream, each at its own rate', async () => {
    const buckets = createUpstreamBuckets(
      [
        { id: 'mainnet', rateLimitPerMinute: 2 },
        { id: 'testnet', rateLimitPerMinute: 3 },
      ],
      { upstreamQueueTimeoutMs: 0 },
    );
    await buckets['mainnet']!.take();
    await buckets['mainnet']!.take();
    await expect(buckets['mainnet']!.take()).rejects.toMatchObject({ code: 'RATE_LIMIT_EXCEEDED' });
    expect(buckets['testnet']!.available()).toBe(3);
  });
});

describe('TokenBucket with real timers', () => {
  it('does not keep the process alive while callers wait (timer is unref’d)', async () => {
    const b = new TokenBucket({ capacity: 1, refillPerMinute: 1, queueTimeoutMs: 120_000 });
    await b.take();
    const refTimers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = refTimers();
    const waiter = b.take().catch((err: unknown) => err);
    expect(b.queued()).toBe(1);
    expect(refTimers()).toBe(before);
    b.close();
    expect(await waiter).toBeInstanceOf(GatewayError);
  });
});
