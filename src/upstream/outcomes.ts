/**
 * What one HTTP exchange with an upstream means, before any endpoint looks at the body
 * (docs/api.md): a verdict that is
 * either a success for the endpoint to check, a final GatewayError, or a failure worth
 * another attempt (with the error to answer if no attempt is left).
 *
 * | upstream outcome                                   | error                                        |
 * |----------------------------------------------------|----------------------------------------------|
 * | 2xx                                                | the endpoint's check (stacks-node.ts)        |
 * | other 1xx/3xx/4xx (unless the endpoint maps it)    | UPSTREAM_API_ERROR 502 {upstreamStatus, reason, retryable:false} |
 * | 5xx, still after the retries                       | UPSTREAM_API_ERROR 502 {upstreamStatus, retryable:true, attempts} |
 * | 429, still after the retries                       | RATE_LIMIT_EXCEEDED 429 {retryAfter, ...}, retry time as data |
 * | timeout on the last attempt                        | TIMEOUT 504 {timeoutMs, retryable:true, attempts} |
 * | connection refused/reset, still after the retries  | UPSTREAM_API_ERROR 502 {cause:'ECONNREFUSED'.., retryable:true, attempts} |
 * | body over the size limit                           | UPSTREAM_API_ERROR 502 {reason:'too-large', retryable:false} |
 *
 * Retried: timeouts, connection errors, 5xx and 429 (docs/api.md). Everything else is final.
 * Every error message names the network and the upstream method and path.
 */

import { GatewayError } from '../errors.js';
import type { Network } from '../network.js';
import { parseRetryAfterMs, toRetryAfterSeconds } from './retry.js';
import { ABORTED, CLIENT_CLOSED, type HttpResponse, type RawResult } from './transport.js';

/** What an attempt was for (metrics): the gateway's own reads, or a forwarded node route. */
export type UpstreamKind = 'call-read' | 'interface' | 'info' | 'node';

/** What one HTTP attempt ended as; the `outcome` of an AttemptEvent. */
export type AttemptOutcome =
  | 'ok'
  | 'okay-false'
  | 'not-found'
  | 'client-error'
  | 'server-error'
  | 'rate-limited'
  | 'timeout'
  | 'connection-error'
  | 'malformed'
  | 'too-large'
  /** An answer whose tip height cannot be believed (docs/freshness.md): discarded, failed over. */
  | 'implausible'
  /** The losing side of a hedge, cut short on purpose: says nothing about the upstream. */
  | 'aborted';

/** One endpoint call: what is asked, of which network, by which method and path. */
export interface Target {
  readonly network: Network;
  readonly kind: UpstreamKind;
  readonly method: 'GET' | 'POST';
  /** Path and query, relative to the upstream's base URL. */
  readonly path: string;
}

export type Verdict<T> =
  | {
      type: 'ok';
      value: T;
      outcome: AttemptOutcome;
      /**
       * The tip height the body itself reports (a /v2/info's stacks_tip_height): judged like the
       * X-Canonical-Stacks-Tip-Height header, so a body that cannot be believed is discarded too.
       */
      reportedTip?: number;
    }
  | { type: 'final'; error: GatewayError; outcome: AttemptOutcome }
  | {
      type: 'retry';
      outcome: AttemptOutcome;
      retryAfterMs?: number;
      /**
       * Worth asking another upstream, not the same one again (an unknown pinned tip): when no
       * other upstream is left, the error is final at once, with no backoff.
       */
      elsewhereOnly?: boolean;
      /**
       * Nothing of the request reached the upstream (its connection was refused): even a request
       * that must never be sent twice (a broadcast) may go to another upstream.
       */
      notSent?: boolean;
      /** The error to answer with if this was the last attempt. */
      error: (attempts: number) => GatewayError;
    };

/** An endpoint's reading of a 2xx answer. */
export type SuccessCheck<T> = (res: HttpResponse) => Verdict<T>;
/** An endpoint's own mapping of a non-2xx status (e.g. the ABI's 404), or undefined for the default. */
export type StatusCheck<T> = (res: HttpResponse) => Verdict<T> | undefined;

export interface OutcomeSettings {
  readonly timeoutMs: number;
  readonly maxResponseBytes: number;
  /** The backoff base, for the Retry-After of a final 429 that had none. */
  readonly retryBaseMs: number;
  /** Wall clock (epoch ms) for Retry-After HTTP-dates. */
  readonly now: () => number;
}

const UPSTREAM_BODY_LIMIT = 500;

export function interpret<T>(
  target: Target,
  raw: RawResult,
  settings: OutcomeSettings,
  onSuccess: SuccessCheck<T>,
  onSpecialStatus?: StatusCheck<T>,
): Verdict<T> {
  const { timeoutMs } = settings;
  switch (raw.type) {
    case 'timeout':
      return {
        type: 'retry',
        outcome: 'timeout',
        error: (attempts) =>
          new GatewayError(
            'TIMEOUT',
            `upstream ${describe(target)} timed out after ${timeoutMs} ms (${attempts} attempt${attempts === 1 ? '' : 's'})`,
            { timeoutMs, retryable: true, attempts },
          ),
      };
    case 'too-large':
      return {
        type: 'final',
        outcome: 'too-large',
        error: new GatewayError(
          'UPSTREAM_API_ERROR',
          `upstream ${describe(target)} answered more than ${settings.maxResponseBytes} bytes`,
          { retryable: false, upstreamStatus: raw.status, reason: 'too-large' },
        ),
      };
    case 'error': {
      if (raw.code === CLIENT_CLOSED)
        return { type: 'final', outcome: 'connection-error', error: closedError(target) };
      if (raw.code === ABORTED) {
        return {
          type: 'final',
          outcome: 'aborted',
          error: new GatewayError(
            'UPSTREAM_API_ERROR',
            `upstream ${describe(target)} attempt aborted (another upstream answered first)`,
            { retryable: true, reason: 'aborted' },
          ),
        };
      }
      const make = (attempts: number) =>
        new GatewayError(
          'UPSTREAM_API_ERROR',
          `upstream ${describe(target)} failed: ${raw.code}${attempts > 1 ? ` (after ${attempts} attempts)` : ''}`,
          { cause: raw.code, retryable: raw.retryable, attempts },
          { cause: raw.error },
        );
      if (!raw.retryable) return { type: 'final', outcome: 'connection-error', error: make(1) };
      // A refused connection is the one failure known to come before any byte was sent; a reset
      // or a timeout may come after the node read the whole request.
      return raw.code === 'ECONNREFUSED'
        ? { type: 'retry', outcome: 'connection-error', notSent: true, error: make }
        : { type: 'retry', outcome: 'connection-error', error: make };
    }
    case 'response':
      break;
  }

  const { status } = raw;
  if (status >= 200 && status < 300) return onSuccess(raw);
  const special = onSpecialStatus?.(raw);
  if (special !== undefined) return special;

  if (status === 429) {
    const retryAfterMs = parseRetryAfterMs(raw.headers['retry-after'], settings.now());
    return {
      type: 'retry',
      outcome: 'rate-limited',
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      error: (attempts) => {
        const retryAfter = toRetryAfterSeconds(
          retryAfterMs ?? settings.retryBaseMs * 2 ** Math.max(0, attempts - 1),
        );
        return new GatewayError(
          'RATE_LIMIT_EXCEEDED',
          `upstream ${describe(target)} is rate limiting (429 after ${attempts} attempts)`,
          { retryAfter, retryable: true, attempts, upstreamStatus: 429 },
          { retryAfter },
        );
      },
    };
  }
  if (status >= 500) {
    const retryAfterMs =
      status === 503 ? parseRetryAfterMs(raw.headers['retry-after'], settings.now()) : undefined;
    return {
      type: 'retry',
      outcome: 'server-error',
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      error: (attempts) =>
        new GatewayError(
          'UPSTREAM_API_ERROR',
          `upstream ${describe(target)} answered ${status} (after ${attempts} attempts)`,
          { retryable: true, attempts, upstreamStatus: status, reason: reasonOf(status) },
          { upstreamText: truncate(raw.body) },
        ),
    };
  }
  return {
    type: 'final',
    outcome: 'client-error',
    error: new GatewayError(
      'UPSTREAM_API_ERROR',
      `upstream ${describe(target)} answered ${status}`,
      { retryable: false, upstreamStatus: status, reason: reasonOf(status) },
      { upstreamText: truncate(raw.body) },
    ),
  };
}

/**
 * What the gateway says of an upstream's error status. The upstream's own body never reaches
 * a client (it may echo credentials or internals); it is kept, redacted, for debug logs.
 */
export function reasonOf(status: number): string {
  if (status === 400) return 'the upstream refused the request as malformed';
  if (status === 401 || status === 403) return "the upstream refused the gateway's credentials";
  if (status === 404) return 'the upstream does not know this resource';
  if (status === 413 || status === 414) return 'the upstream refused the request as too large';
  if (status >= 500) return 'the upstream failed';
  return `the upstream answered an unexpected status ${status}`;
}

/** "testnet POST /v2/contracts/call-read/...": how every message names the call. */
export function describe(target: Target): string {
  return `${target.network} ${target.method} ${target.path}`;
}

/**
 * The client is closed (the gateway is shutting down): SERVICE_UNAVAILABLE 503, retryable,
 * another instance may answer. Also the answer of an attempt aborted by the close.
 */
export function closedError(target: Target): GatewayError {
  return new GatewayError(
    'SERVICE_UNAVAILABLE',
    `the gateway is shutting down; upstream ${describe(target)} not completed`,
    { retryable: true, reason: 'closed' },
  );
}

/** Budget errors get the network and path into their message; details, variant and retry time are kept. */
export function withContext(err: unknown, target: Target, attempt: number): unknown {
  if (!(err instanceof GatewayError)) return err;
  const details = attempt > 0 ? { ...err.details, attempts: attempt } : err.details;
  return err.rephrased(`${err.message} (${describe(target)})`, details, { cause: err });
}

function truncate(body: string): string {
  return body.length <= UPSTREAM_BODY_LIMIT ? body : `${body.slice(0, UPSTREAM_BODY_LIMIT)}…`;
}
