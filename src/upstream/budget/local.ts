/**
 * The in-process upstream budget (docs/upstreams.md): a token
 * bucket per upstream, capacity UPSTREAM_RATE_LIMIT_PER_MINUTE, refilled evenly (one token
 * every 60000 / rate ms). Every upstream attempt, retries included, takes one token; cache
 * hits never reach it.
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
import type { GatewayError } from '../../errors.js';
import {
  type Budget,
  type BudgetConfig,
  type BudgetSettings,
  budgetClosedError,
  budgetExhaustedError,
  budgetSettings,
  checkBudgetSettings,
} from './upstream-budget.js';

export interface TokenBucketOptions extends BudgetSettings {
  /** Clock in ms; monotonic by default. Tests inject Date.now with fake timers. */
  readonly now?: () => number;
  /** Shown in error messages: the upstream's id, e.g. "mainnet". */
  readonly label?: string;
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
    checkBudgetSettings('TokenBucket', options);
    this.capacity = options.capacity;
    this.intervalMs = 60_000 / options.refillPerMinute;
    this.queueTimeoutMs = options.queueTimeoutMs;
    this.now = options.now ?? (() => performance.now());
    this.label = options.label ?? 'upstream';
    this.tokens = options.capacity;
    this.lastRefill = this.now();
  }

  take(maxWaitMs: number = this.queueTimeoutMs): Promise<void> {
    if (this.closed) return Promise.reject(this.closedError());
    this.refill();
    if (this.waiters.length === 0 && this.tokens >= 1 - EPSILON) {
      this.tokens = Math.max(0, this.tokens - 1);
      return Promise.resolve();
    }
    // Tokens still needed before this caller is served: one per earlier waiter, plus its own.
    const deficit = this.waiters.length + 1 - this.tokens;
    const waitMs = Math.ceil(deficit * this.intervalMs - EPSILON);
    if (waitMs > maxWaitMs) return Promise.reject(this.rateLimited(waitMs));
    return new Promise<void>((resolve, reject) => {
      this.waiters.push({ resolve, reject, deadline: this.now() + maxWaitMs });
      this.schedule();
    });
  }

  refund(): void {
    if (this.closed) return;
    this.refill();
    this.tokens = Math.min(this.capacity, this.tokens + 1);
    this.drain();
  }

  available(): number {
    if (this.closed || this.waiters.length > 0) return 0;
    this.refill();
    return Math.floor(this.tokens + EPSILON);
  }

  queued(): number {
    return this.waiters.length;
  }

  waitEstimateMs(tokens: number): number {
    if (this.closed) return Number.POSITIVE_INFINITY;
    this.refill();
    const deficit = this.waiters.length + tokens - this.tokens;
    return Math.max(0, Math.ceil(deficit * this.intervalMs - EPSILON));
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
    return budgetExhaustedError(this.label, this.queueTimeoutMs, waitMs);
  }

  private closedError(): GatewayError {
    return budgetClosedError(this.label);
  }
}

/** One in-process TokenBucket per configured upstream, each at its own rate, by upstream id. */
export function createUpstreamBuckets(
  upstreams: readonly { readonly id: string; readonly rateLimitPerMinute: number }[],
  config: Pick<BudgetConfig, 'upstreamQueueTimeoutMs'>,
): Record<string, TokenBucket> {
  const out: Record<string, TokenBucket> = {};
  for (const u of upstreams) {
    out[u.id] = new TokenBucket({
      ...budgetSettings({
        upstreamRateLimitPerMinute: u.rateLimitPerMinute,
        upstreamQueueTimeoutMs: config.upstreamQueueTimeoutMs,
      }),
      label: u.id,
    });
  }
  return out;
}
