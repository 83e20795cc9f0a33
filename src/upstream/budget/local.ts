/**
 * The upstream budget (decisions.md, "Upstream budget and retries"): a token bucket per
 * network, capacity UPSTREAM_RATE_LIMIT_PER_MINUTE, refilled evenly (one token every
 * 60000 / rate ms). Every upstream attempt, retries included, takes one token; cache hits
 * never reach it.
 *
 * Waiters are served strictly first come, first served: once somebody is queued, a new
 * caller queues behind them even if a token is available at that instant. Because refill is
 * deterministic and nobody can overtake, the moment each waiter will be served is known when
 * it arrives; a caller whose turn would come later than UPSTREAM_QUEUE_TIMEOUT_MS is refused
 * at once with RATE_LIMIT_EXCEEDED (429, details.retryAfter, Retry-After) instead of being
 * parked only to fail later. A waiter's deadline is still checked on every wake-up, as a
 * safety net (a late timer, or a future budget whose tokens others can take).
 *
 * One timer at a time, unref'd so an idle bucket never keeps the process alive.
 */
import { GatewayError } from '../errors.js';

/** What the upstream client needs from a budget; a Redis-backed global budget can implement it. */
export interface Budget {
  /** Resolves when a token is granted; rejects with GatewayError RATE_LIMIT_EXCEEDED otherwise. */
  take(): Promise<void>;
  /** Tokens that could be granted right now (0 while anyone is queued). For metrics. */
  available(): number;
  /** Callers waiting for a token. For metrics. */
  queued(): number;
  /** Reject every waiter and every later take(). Idempotent. */
  close(): void;
}

export interface TokenBucketOptions {
  /** Largest burst; also the starting number of tokens. */
  capacity: number;
  /** Tokens added per minute, spread evenly. */
  refillPerMinute: number;
  /** Longest a caller may wait for its token. 0 = never wait. */
  queueTimeoutMs: number;
  /** Clock in ms; monotonic by default. Tests inject Date.now with fake timers. */
  now?: () => number;
  /** Shown in error messages, e.g. "mainnet". */
  label?: string;
}

interface Waiter {
  resolve: () => void;
  reject: (err: Error) => void;
  deadline: number;
}

/** Float slack for fractional token arithmetic (60000 / 7 is not a whole number of ms). */
const EPSILON = 1e-9;

export class TokenBucket implements Budget {
  private readonly capacity: number;
  private readonly intervalMs: number;
  private readonly queueTimeoutMs: number;
  private readonly now: () => number;
  private readonly label: string;
  private tokens: number;
  private lastRefill: number;
  private waiters: Waiter[] = [];
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(options: TokenBucketOptions) {
    if (!(options.capacity >= 1)) throw new RangeError('TokenBucket capacity must be at least 1');
    if (!(options.refillPerMinute > 0)) throw new RangeError('TokenBucket refillPerMinute must be positive');
    if (!(options.queueTimeoutMs >= 0)) throw new RangeError('TokenBucket queueTimeoutMs must be >= 0');
    this.capacity = options.capacity;
    this.intervalMs = 60_000 / options.refillPerMinute;
    this.queueTimeoutMs = options.queueTimeoutMs;
    this.now = options.now ?? (() => performance.now());
    this.label = options.label ?? 'upstream';
    this.tokens = options.capacity;
    this.lastRefill = this.now();
  }

  take(): Promise<void> {
    if (this.closed) return Promise.reject(this.closedError());
    this.refill();
    if (this.waiters.length === 0 && this.tokens >= 1 - EPSILON) {
      this.tokens = Math.max(0, this.tokens - 1);
      return Promise.resolve();
    }
    // Tokens still needed before this caller is served: one per earlier waiter, plus its own.
    const deficit = this.waiters.length + 1 - this.tokens;
    const waitMs = Math.ceil(deficit * this.intervalMs - EPSILON);
    if (waitMs > this.queueTimeoutMs) return Promise.reject(this.rateLimited(waitMs));
    return new Promise<void>((resolve, reject) => {
      this.waiters.push({ resolve, reject, deadline: this.now() + this.queueTimeoutMs });
      this.schedule();
    });
  }

  available(): number {
    if (this.closed || this.waiters.length > 0) return 0;
    this.refill();
    return Math.floor(this.tokens + EPSILON);
  }

  queued(): number {
    return this.waiters.length;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w.reject(this.closedError());
  }

  private refill(): void {
    const now = this.now();
    const elapsed = now - this.lastRefill;
    this.lastRefill = now;
    if (elapsed > 0) this.tokens = Math.min(this.capacity, this.tokens + elapsed / this.intervalMs);
  }

  /** Serve the head of the queue while tokens last, expire overdue waiters, re-arm the timer. */
  private drain(): void {
    this.refill();
    while (this.waiters.length > 0 && this.tokens >= 1 - EPSILON) {
      this.tokens = Math.max(0, this.tokens - 1);
      this.waiters.shift()!.resolve();
    }
    const now = this.now();
    while (this.waiters.length > 0 && this.waiters[0]!.deadline <= now) {
      // Only reachable if the timer fired late with no token accrued; the waiter's time is up.
      const deficit = this.waiters.length - this.tokens;
      this.waiters.shift()!.reject(this.rateLimited(Math.ceil(deficit * this.intervalMs)));
    }
    this.schedule();
  }

  private schedule(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    const head = this.waiters[0];
    if (head === undefined) return;
    const untilToken = Math.ceil((1 - this.tokens) * this.intervalMs - EPSILON);
    const untilDeadline = head.deadline - this.now();
    const delay = Math.max(0, Math.min(untilToken, untilDeadline));
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.drain();
    }, delay);
    this.timer.unref();
  }

  private rateLimited(waitMs: number): GatewayError {
    const retryAfter = Math.max(1, Math.ceil(waitMs / 1000));
    return new GatewayError(
      'RATE_LIMIT_EXCEEDED',
      `upstream request budget for ${this.label} exhausted: no token within ${this.queueTimeoutMs} ms`,
      { retryAfter, retryable: true, queueTimeoutMs: this.queueTimeoutMs },
      { status: 429, headers: { 'Retry-After': String(retryAfter) } },
    );
  }

  private closedError(): GatewayError {
    return new GatewayError(
      'UPSTREAM_API_ERROR',
      `upstream request budget for ${this.label} is closed (shutting down)`,
      { retryable: true, reason: 'closed' },
      { status: 502 },
    );
  }
}

/** Minimal config slice needed to build one bucket per network. */
export interface BudgetConfig {
  readonly upstreamRateLimitPerMinute: number;
  readonly upstreamQueueTimeoutMs: number;
}

/** One in-process TokenBucket per network, from the configuration. */
export function createTokenBuckets<N extends string>(
  networks: readonly N[],
  config: BudgetConfig,
  now?: () => number,
): Record<N, TokenBucket> {
  const out = {} as Record<N, TokenBucket>;
  for (const network of networks) {
    out[network] = new TokenBucket({
      capacity: config.upstreamRateLimitPerMinute,
      refillPerMinute: config.upstreamRateLimitPerMinute,
      queueTimeoutMs: config.upstreamQueueTimeoutMs,
      label: network,
      ...(now === undefined ? {} : { now }),
    });
  }
  return out;
}
