/**
 * The one budget interface (docs/upstreams.md): every upstream
 * attempt, retries included, first takes a token from the budget of the upstream it is sent
 * to. Budgets belong to upstreams, not to networks: today each network has one upstream, so
 * the two are the same; with several upstreams each has its own rate limit.
 *
 * Two implementations keep the same semantics: the in-process token bucket (budget/local.ts)
 * and the bucket shared through Redis (src/upstream/budget/redis-budget.ts). Their errors are built here, once,
 * so a client cannot tell which one refused it.
 */
import { GatewayError } from '../../errors.js';

export interface Budget {
  /**
   * Resolves when a token is granted; rejects with GatewayError RATE_LIMIT_EXCEEDED when it
   * would not come within `maxWaitMs` (default: the queue timeout). `take(0)` never waits: the
   * pool asks every upstream that way before anyone queues (upstream/pool.ts).
   */
  take(maxWaitMs?: number): Promise<void>;
  /**
   * About how long until `tokens` more tokens could be granted, behind those already queued
   * here (0 = now). Exact for the local bucket, from the last known level for the shared one.
   * The pool's queue uses it to refuse at once a caller whose turn would come too late.
   * Optional for stand-ins (tests): absent means "now".
   */
  waitEstimateMs?(tokens: number): number;
  /** Tokens that could be granted right now (0 while anyone is queued). For metrics. */
  available(): number;
  /** Callers waiting for a token. For metrics. */
  queued(): number;
  /** Reject every waiter and every later take(). Idempotent. */
  close(): void;
  /**
   * Give back a token that was granted but not used (its request's client went away before the
   * attempt). Optional: a budget without it keeps the token spent.
   */
  refund?(): void;
}

/** The settings every budget implementation is built from. */
export interface BudgetSettings {
  /** Largest burst; also the starting number of tokens. */
  readonly capacity: number;
  /** Tokens added per minute, spread evenly. */
  readonly refillPerMinute: number;
  /** Longest a caller may wait for its token. 0 = never wait. */
  readonly queueTimeoutMs: number;
}

/** Minimal config slice needed to build budgets. */
export interface BudgetConfig {
  readonly upstreamRateLimitPerMinute: number;
  readonly upstreamQueueTimeoutMs: number;
}

/** One budget of UPSTREAM_RATE_LIMIT_PER_MINUTE, full at start, queueing up to UPSTREAM_QUEUE_TIMEOUT_MS. */
export function budgetSettings(config: BudgetConfig): BudgetSettings {
  return {
    capacity: config.upstreamRateLimitPerMinute,
    refillPerMinute: config.upstreamRateLimitPerMinute,
    queueTimeoutMs: config.upstreamQueueTimeoutMs,
  };
}

/** Throws RangeError naming the implementation when settings cannot make a working bucket. */
export function checkBudgetSettings(kind: string, settings: BudgetSettings): void {
  if (!(settings.capacity >= 1)) throw new RangeError(`${kind} capacity must be at least 1`);
  if (!(settings.refillPerMinute > 0)) throw new RangeError(`${kind} refillPerMinute must be positive`);
  if (!(settings.queueTimeoutMs >= 0)) throw new RangeError(`${kind} queueTimeoutMs must be >= 0`);
}

/**
 * No token within the queue timeout: 429 with the retry time (whole seconds, at least 1) in
 * details.retryAfter and as data src/http renders as Retry-After, telling the client when a
 * token will be there.
 */
export function budgetExhaustedError(label: string, queueTimeoutMs: number, waitMs: number): GatewayError {
  const retryAfter = Math.max(1, Math.ceil(waitMs / 1000));
  return new GatewayError(
    'RATE_LIMIT_EXCEEDED',
    `upstream request budget for ${label} exhausted: no token within ${queueTimeoutMs} ms`,
    { retryAfter, retryable: true, queueTimeoutMs },
    { retryAfter },
  );
}

/** The budget was closed (shutdown): SERVICE_UNAVAILABLE 503, retryable, another instance may answer. */
export function budgetClosedError(label: string): GatewayError {
  return new GatewayError(
    'SERVICE_UNAVAILABLE',
    `the gateway is shutting down; upstream request budget for ${label} is closed`,
    { retryable: true, reason: 'closed' },
  );
}
