/**
 * One request to the gateway with retries: fetch only (Node 18+ and browsers), JSON bodies
 * with bigints as decimal strings, the answer read as an envelope.
 *
 * Retried: 429 and the transient failures (502, 503, 504, and no answer at all), which are
 * the gateway's retryable conditions. Every route is a read, or (the subscriptions of watched
 * reads) harmless to repeat: a repeated POST makes one more subscription, a repeated DELETE
 * finds it gone.
 * A Retry-After header replaces the backoff; one longer than `maxDelayMs` is not waited for
 * (the error is thrown at once, so a caller is never parked for minutes).
 */

import { ClarityCacheError, errorFromRecord, NetworkError } from './errors.js';
import { backoffDelayMs, parseRetryAfterMs } from './retry.js';
import { linkSignals, sleepUnlessAborted } from './signals.js';
import type { AnswerMeta, ClientResponse, Envelope } from './types.js';

export interface RetryPolicy {
  /** Retries after the first attempt (default 2; 0 disables retrying). */
  readonly retries?: number;
  /** Backoff base: waits are about base, 2*base, 4*base... with jitter (default 250 ms). */
  readonly baseDelayMs?: number;
  /** Longest wait, from backoff or Retry-After, the client accepts before a retry (default 30 s). */
  readonly maxDelayMs?: number;
}

export interface RetryEvent {
  /** 1 for the first retry. */
  readonly retry: number;
  readonly delayMs: number;
  /** The HTTP status that caused it; 0 when no answer arrived. */
  readonly status: number;
  readonly code: string;
}

export interface TransportOptions {
  readonly baseUrl: string;
  readonly fetch: typeof fetch;
  readonly policy: Required<RetryPolicy>;
  readonly headers: Record<string, string>;
  readonly onRetry: ((event: RetryEvent) => void) | undefined;
  /** Longest wait for one attempt's whole answer; then it counts as a transient failure. */
  readonly timeoutMs: number;
}

const RETRY_STATUSES = new Set([429, 502, 503, 504]);

/** JSON with bigints (native stacks.js integers) as decimal strings. */
export function toJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
}

function readMeta(headers: Headers): AnswerMeta {
  const num = (name: string): number | undefined => {
    const raw = headers.get(name);
    if (raw === null || raw.trim() === '') return undefined;
    const n = Number(raw);
    return Number.isFinite(n) ? n : undefined;
  };
  return {
    cacheStatus: headers.get('cache-status') ?? undefined,
    age: num('age'),
    tipHeight: num('x-canonical-stacks-tip-height'),
    cost: num('clarity-cache-cost'),
  };
}

export function isEnvelope(body: unknown): body is Envelope<unknown> {
  if (typeof body !== 'object' || body === null) return false;
  const b = body as Record<string, unknown>;
  if (b['success'] === true) return 'data' in b;
  if (b['success'] === false) {
    const e = b['error'] as Record<string, unknown> | null | undefined;
    return typeof e === 'object' && e !== null && typeof e['code'] === 'string';
  }
  return false;
}

/** fetch's own message is a bare "fetch failed"; the reason (ECONNREFUSED, ...) is in its cause. */
export function describeFailure(err: unknown, timeoutMs: number): string {
  if (err instanceof Error && err.name === 'TimeoutError') return `no answer within ${timeoutMs} ms`;
  const message = err instanceof Error ? err.message : String(err);
  const cause =
    err instanceof Error ? (err.cause as { code?: unknown; message?: unknown } | undefined) : undefined;
  const reason =
    typeof cause?.code === 'string' ? cause.code : typeof cause?.message === 'string' ? cause.message : '';
  return reason === '' ? message : `${message} (${reason})`;
}

/** The error an unsuccessful envelope stands for. */
export function envelopeError(response: ClientResponse<unknown>): ClarityCacheError {
  const env = response.envelope;
  if (env.success) throw new TypeError('not an error envelope');
  return errorFromRecord({ ...env.error, status: response.status });
}

/**
 * Send one request (with retries) and return the whole answer; error envelopes are returned,
 * not thrown. Throws NetworkError when no envelope could be had after the retries, and the
 * signal's reason when `signal` aborts (during an attempt or a wait between two).
 */
export async function send<T>(
  options: TransportOptions,
  method: 'GET' | 'POST' | 'DELETE',
  path: string,
  body?: unknown,
  signal?: AbortSignal,
): Promise<ClientResponse<T>> {
  const url = options.baseUrl.replace(/\/+$/, '') + path;
  const init: RequestInit = {
    method,
    headers: {
      accept: 'application/json',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...options.headers,
    },
    ...(body === undefined ? {} : { body: toJson(body) }),
  };
  const { retries, baseDelayMs, maxDelayMs } = options.policy;
  for (let attempt = 0; ; attempt++) {
    let response: ClientResponse<T> | undefined;
    let failure: ClarityCacheError;
    let retryAfterMs: number | undefined;
    signal?.throwIfAborted();
    const linked = linkSignals([signal, AbortSignal.timeout(options.timeoutMs)]);
    try {
      const res = await options.fetch(url, { ...init, signal: linked.signal });
      const text = await res.text();
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      if (isEnvelope(parsed)) {
        response = {
          status: res.status,
          envelope: parsed as Envelope<T>,
          meta: readMeta(res.headers),
          headers: res.headers,
        };
      }
      if (!RETRY_STATUSES.has(res.status)) {
        if (response !== undefined) return response;
        throw new NetworkError({
          code: 'NETWORK_ERROR',
          status: res.status,
          message: `${method} ${url} answered ${res.status} without a JSON envelope`,
        });
      }
      failure =
        response === undefined
          ? new NetworkError({
              code: 'NETWORK_ERROR',
              status: res.status,
              message: `${method} ${url} answered ${res.status} without a JSON envelope`,
            })
          : envelopeError(response);
      retryAfterMs = parseRetryAfterMs(res.headers.get('retry-after') ?? undefined, Date.now());
    } catch (err) {
      if (err instanceof ClarityCacheError) throw err;
      signal?.throwIfAborted();
      // fetch rejects only when no answer arrived (refused, reset, DNS, aborted).
      failure = new NetworkError({
        code: 'NETWORK_ERROR',
        status: 0,
        message: `${method} ${url} failed: ${describeFailure(err, options.timeoutMs)}`,
        cause: err,
      });
    } finally {
      linked.release();
    }
    const delayMs = retryAfterMs ?? backoffDelayMs(attempt, baseDelayMs, Math.random, maxDelayMs);
    if (attempt >= retries || delayMs > maxDelayMs) {
      if (response !== undefined) return response;
      throw failure;
    }
    options.onRetry?.({ retry: attempt + 1, delayMs, status: failure.status, code: failure.code });
    if (!(await sleepUnlessAborted(delayMs, signal))) signal?.throwIfAborted();
  }
}
