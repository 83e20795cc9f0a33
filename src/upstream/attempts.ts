/**
 * The attempt loop: one endpoint call becomes one or more attempts. Each attempt asks the
 * pool for an upstream, takes a token from that upstream's budget, sends one exchange,
 * interprets it, records it (stats, an AttemptEvent for metrics and /ready, a debug log
 * line) and either finishes or waits (backoff or Retry-After, retry.ts) and goes again, up
 * to UPSTREAM_RETRIES retries. Every attempt takes a token, retries included (decisions.md).
 *
 * An upstream that failed transiently is avoided on the next pick when another can serve
 * (with one upstream per network, the retry goes back to it, as it always did).
 */
import type { Config, Network } from '../config.js';
import {
  type AttemptOutcome,
  closedError,
  interpret,
  type StatusCheck,
  type SuccessCheck,
  type Target,
  type UpstreamKind,
  withContext,
} from './outcomes.js';
import type { Upstream, UpstreamPool } from './pool.js';
import { retryDelayMs } from './retry.js';
import type { Transport } from './transport.js';

export interface AttemptEvent {
  network: Network;
  /** The id of the upstream the attempt went to. */
  upstream: string;
  kind: UpstreamKind;
  outcome: AttemptOutcome;
  /** Time of the HTTP exchange itself (budget wait excluded), ms. */
  durationMs: number;
  /** 0 for the first attempt, 1 for the first retry, ... */
  attempt: number;
  /** HTTP status when a response arrived. */
  status?: number;
}

/** The pino methods the loop uses (a pino Logger fits). */
export interface UpstreamLogger {
  debug(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

export type RetryConfig = Pick<Config, 'upstreamRetries' | 'upstreamRetryBaseMs' | 'upstreamRetryAfterCapMs'>;

export interface AttemptsOptions {
  readonly pool: UpstreamPool;
  readonly transport: Transport;
  readonly config: RetryConfig;
  readonly logger?: UpstreamLogger | undefined;
  /** Called after every HTTP attempt (metrics hook). Must not throw. */
  readonly onAttempt?: ((event: AttemptEvent) => void) | undefined;
  /** Waits between retries; injectable for deterministic tests. */
  readonly sleep?: ((ms: number) => Promise<void>) | undefined;
  /** Uniform [0, 1) for jitter; injectable for deterministic tests. */
  readonly random?: (() => number) | undefined;
  /** Wall clock (epoch ms) for Retry-After HTTP-dates. */
  readonly now?: (() => number) | undefined;
  /** Upper bound of one exponential backoff wait (default 30 s). */
  readonly maxBackoffMs?: number | undefined;
}

/** A successful call: the endpoint's value, the upstream that gave it and the tip it reported. */
export interface Answered<T> {
  readonly value: T;
  readonly upstream: Upstream;
  readonly tipHeight?: number;
}

const TIP_HEIGHT_HEADER = 'x-canonical-stacks-tip-height';

export class Attempts {
  readonly #pool: UpstreamPool;
  readonly #transport: Transport;
  readonly #config: RetryConfig;
  readonly #logger: UpstreamLogger | undefined;
  readonly #onAttempt: ((event: AttemptEvent) => void) | undefined;
  readonly #sleep: (ms: number) => Promise<void>;
  readonly #random: () => number;
  readonly #now: () => number;
  readonly #maxBackoffMs: number;

  constructor(options: AttemptsOptions) {
    this.#pool = options.pool;
    this.#transport = options.transport;
    this.#config = options.config;
    this.#logger = options.logger;
    this.#onAttempt = options.onAttempt;
    this.#sleep = options.sleep ?? defaultSleep;
    this.#random = options.random ?? Math.random;
    this.#now = options.now ?? Date.now;
    this.#maxBackoffMs = options.maxBackoffMs ?? 30_000;
  }

  async run<T>(
    target: Target,
    body: string | undefined,
    onSuccess: SuccessCheck<T>,
    onSpecialStatus?: StatusCheck<T>,
  ): Promise<Answered<T>> {
    const transport = this.#transport;
    const retries = this.#config.upstreamRetries;
    const settings = {
      timeoutMs: transport.timeoutMs,
      maxResponseBytes: transport.maxResponseBytes,
      retryBaseMs: this.#config.upstreamRetryBaseMs,
      now: this.#now,
    };
    const failed = new Set<Upstream>();
    for (let attempt = 0; ; attempt++) {
      if (transport.closed) throw closedError(target);
      const upstream = this.#pool.pick(target.network, { avoid: failed });
      try {
        await upstream.budget.take();
      } catch (err) {
        throw withContext(err, target, attempt);
      }
      if (transport.closed) throw closedError(target);

      const started = performance.now();
      const raw = await transport.send(upstream, target.method, target.path, body);
      const durationMs = performance.now() - started;
      const verdict = interpret(target, raw, settings, onSuccess, onSpecialStatus);
      const status = raw.type === 'response' || raw.type === 'too-large' ? raw.status : undefined;
      const tipHeight = raw.type === 'response' ? readTipHeight(raw.headers) : undefined;
      upstream.stats.record(verdict.outcome, durationMs, tipHeight);
      this.#emit({
        network: target.network,
        upstream: upstream.id,
        kind: target.kind,
        outcome: verdict.outcome,
        durationMs,
        attempt,
        ...(status === undefined ? {} : { status }),
      });
      const logFields = {
        network: target.network,
        method: target.method,
        path: target.path,
        attempt,
        outcome: verdict.outcome,
        status,
      };
      this.#logger?.debug({ ...logFields, durationMs: Math.round(durationMs) }, 'upstream attempt');

      if (verdict.type === 'ok') {
        return tipHeight === undefined
          ? { value: verdict.value, upstream }
          : { value: verdict.value, upstream, tipHeight };
      }
      if (verdict.type === 'final') throw verdict.error;
      if (attempt >= retries) throw verdict.error(attempt + 1);
      failed.add(upstream);

      const delayMs = retryDelayMs(attempt, verdict.retryAfterMs, {
        baseMs: this.#config.upstreamRetryBaseMs,
        maxBackoffMs: this.#maxBackoffMs,
        retryAfterCapMs: this.#config.upstreamRetryAfterCapMs,
        random: this.#random,
      });
      this.#logger?.warn({ ...logFields, delayMs }, 'upstream attempt failed, retrying');
      // A shutdown cuts the wait short; the check at the top of the loop then answers 503
      // instead of starting the retry.
      await untilClosed(this.#sleep(delayMs), transport.closedSignal);
    }
  }

  #emit(event: AttemptEvent): void {
    if (this.#onAttempt === undefined) return;
    try {
      this.#onAttempt(event);
    } catch (err) {
      this.#logger?.warn({ err }, 'onAttempt hook threw');
    }
  }
}

/** X-Canonical-Stacks-Tip-Height as a safe integer, or undefined when absent or garbled. */
function readTipHeight(headers: Record<string, string | string[] | undefined>): number | undefined {
  const raw = headers[TIP_HEIGHT_HEADER];
  const text = Array.isArray(raw) ? raw[0] : raw;
  if (text === undefined || !/^\d+$/.test(text.trim())) return undefined;
  const n = Number(text.trim());
  return Number.isSafeInteger(n) ? n : undefined;
}

/** Resolves when wait does, or as soon as signal aborts. */
function untilClosed(wait: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = (): void => resolve();
    signal.addEventListener('abort', onAbort, { once: true });
    wait.then(
      () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}

function defaultSleep(ms: number): Promise<void> {
  return new Promise((resolve) => {
    setTimeout(resolve, ms);
  });
}
