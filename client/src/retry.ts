/**
 * Waiting between retries, as pure functions: the client's own and, imported from here, the
 * gateway's retries of its upstreams (src/upstream/retry.ts).
 *
 * - Exponential backoff with *equal jitter*: before retry n (n = 0 for the first retry) wait
 *   a uniformly random time in [exp / 2, exp], exp = min(base * 2^n, maxBackoffMs). Equal
 *   jitter keeps a guaranteed minimum spacing (unlike full jitter, which can retry at once)
 *   while still spreading a thundering herd.
 * - A Retry-After header is delta-seconds or an HTTP-date.
 */

/** Backoff before retry number `retry` (0-based: 0 = the wait after the first failed attempt). */
export function backoffDelayMs(
  retry: number,
  baseMs: number,
  random: () => number,
  maxBackoffMs: number,
): number {
  const exp = Math.min(baseMs * 2 ** retry, maxBackoffMs);
  const r = Math.min(Math.max(random(), 0), 1);
  return Math.round(exp / 2 + (r * exp) / 2);
}

/**
 * A Retry-After header value in ms: delta-seconds ("120", "1.5") or an HTTP-date. Undefined
 * when absent or unparseable; never negative.
 */
export function parseRetryAfterMs(value: string | string[] | undefined, nowMs: number): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined) return undefined;
  const text = raw.trim();
  if (text === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  // An HTTP-date starts with the day name ("Wed, 21 Oct 2015 07:28:00 GMT"); Date.parse alone
  // would also accept things like "-3".
  if (!/^[A-Za-z]{3},? /.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}
