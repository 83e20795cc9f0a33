/**
 * Retry policy for upstream attempts (docs/upstreams.md): pure
 * functions, so the arithmetic is testable without sockets or clocks.
 *
 * - Exponential backoff with *equal jitter*: before retry n (n = 0 for the first retry) wait
 *   a uniformly random time in [exp / 2, exp], exp = min(base * 2^n, maxBackoffMs). Equal
 *   jitter keeps a guaranteed minimum spacing (unlike full jitter, which can retry at once)
 *   while still spreading a thundering herd.
 * - A Retry-After header (delta-seconds or HTTP-date) on a 429/503 replaces the backoff and is
 *   honoured up to a cap, so a hostile or huge value cannot park a request for minutes.
 */

import { backoffDelayMs } from '../../client/src/retry.js';

// The arithmetic is shared with the typed client, which has no server code in it.
export { backoffDelayMs, parseRetryAfterMs } from '../../client/src/retry.js';

/** The wait before the next attempt: the (capped) Retry-After when given, else the backoff. */
export function retryDelayMs(
  retry: number,
  retryAfterMs: number | undefined,
  policy: { baseMs: number; maxBackoffMs: number; retryAfterCapMs: number; random: () => number },
): number {
  if (retryAfterMs !== undefined) return Math.min(retryAfterMs, policy.retryAfterCapMs);
  return backoffDelayMs(retry, policy.baseMs, policy.random, policy.maxBackoffMs);
}

/** Whole seconds for a Retry-After answer: at least 1. */
export function toRetryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}
