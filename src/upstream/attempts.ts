/**
 * The attempt loop: one endpoint call becomes one or more attempts. Each attempt asks the
 * pool for an upstream (which takes a token from that upstream's budget, waiting fairly when
 * no upstream has one), sends one exchange, interprets it, reports it (pool stats and circuit
 * breaker, an AttemptEvent for metrics and /ready, a debug log line) and either finishes or
 * goes again, up to UPSTREAM_RETRIES retries counted across all upstreams. Every attempt takes
 * a token, retries and hedges included (docs/api.md, docs/upstreams.md).
 *
 * - Failover: an upstream that failed transiently is avoided on the next pick while another
 *   can serve, and then the retry goes there at once: the backoff (or the failed node's
 *   Retry-After) only applies when the retry has to go back to the same node, which is all a
 *   single-upstream deployment can do, exactly as before. A request sent `once` (a broadcast)
 *   fails over only from a refused connection, and never goes back to the same node.
 * - An unknown pinned tip (a verdict with `elsewhereOnly`) is asked of the other upstreams
 *   and is final as soon as none is left. So is an answer discarded for a tip height that
 *   cannot be believed, which does not count against UPSTREAM_RETRIES.
 * - Hedging (UPSTREAM_HEDGE_MS): when an attempt has not answered after that long and another
 *   upstream has a token now, a second attempt goes there; the first decisive answer wins and
 *   the other exchange is aborted. A transient failure of one side waits for the other. A hedge
 *   is not a retry: it takes a token but does not count against UPSTREAM_RETRIES.
 */
import type { Config, Network } from '../config/index.js';
import { GatewayError } from '../errors.js';
import type { RequestContext } from './node-api.js';
import {
  type AttemptOutcome,
  closedError,
  describe,
  interpret,
  type OutcomeSettings,
  type StatusCheck,
  type SuccessCheck,
  type Target,
  type UpstreamKind,
  type Verdict,
  withContext,
} from './outcomes.js';
import type { Upstream, UpstreamPool } from './pool.js';
import { retryDelayMs } from './retry.js';
import type { OutgoingBody, Transport } from './transport.js';

export interface AttemptEvent {
  network: Network;
  /** The id of the upstream the attempt went to. */
  upstream: string;
  kind: UpstreamKind;
  outcome: AttemptOutcome;
  /** Time of the HTTP exchange itself (budget wait excluded), ms. */
  durationMs: number;
  /** 0 for the first attempt, 1 for the first retry, ... (a hedge has its round's number) */
  attempt: number;
  /** HTTP status when a response arrived. */
  status?: number;
  /** The second attempt of a hedged round. */
  hedge?: boolean;
}

/** The pino methods the loop uses (a pino Logger fits). */
export interface UpstreamLogger {
  debug(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

export type RetryConfig = Pick<
  Config,
  'upstreamRetries' | 'upstreamRetryBaseMs' | 'upstreamRetryAfterCapMs'
> & {
  readonly upstreamHedgeMs?: number | undefined;
};

export interface AttemptsOptions {
  readonly pool: UpstreamPool;
  readonly transport: Transport;
  readonly config: RetryConfig;
  readonly logger?: UpstreamLogger | undefined;
  /** Called after every HTTP attempt (metrics hook). Must not throw. */
  readonly onAttempt?: ((event: AttemptEvent) => void) | undefined;
  /** Whether a reported tip height may be believed (ChainTips.plausible); absent = all are. */
  readonly plausibleTip?: ((network: Network, height: number) => boolean) | undefined;
  /** Waits between retries; injectable for deterministic tests. */
  readonly sleep?: ((ms: number) => Promise<void>) | undefined;
  /** Uniform [0, 1) for jitter; injectable for deterministic tests. */
  readonly random?: (() => number) | undefined;
  /** Wall clock (epoch ms) for Retry-After HTTP-dates. */
  readonly now?: (() => number) | undefined;
  /** Upper bound of one exponential backoff wait (default 30 s). */
  readonly maxBackoffMs?: number | undefined;
}

export interface RunOptions {
  /** A read at the current chain tip (default); false for pinned reads, which lagging upstreams may serve. */
  readonly latest?: boolean;
  readonly context?: RequestContext | undefined;
  /**
   * Most attempts for this call (at most 1 + UPSTREAM_RETRIES): 1 = give up after the first
   * transient failure, for a caller with a better answer at hand than a retry (stale-if-error).
   */
  readonly maxAttempts?: number | undefined;
  /** Longest wait for a budget token (see CallOptions.budgetWaitMs). */
  readonly budgetWaitMs?: number | undefined;
  /**
   * Send to one upstream once: no retry, no hedge (a broadcast transaction, which must never
   * reach the network twice once its body went out). The one failover is from an upstream that
   * refused the connection, which nothing was sent to, to the next one (within UPSTREAM_RETRIES).
   */
  readonly once?: boolean | undefined;
  /** Retry only on another upstream (never the same one again). */
  readonly elsewhereOnly?: boolean | undefined;
}

/** A successful call: the endpoint's value, the upstream that gave it and the tip it reported. */
export interface Answered<T> {
  readonly value: T;
  readonly upstream: Upstream;
  readonly tipHeight?: number;
}

/** One exchange of a vote: its verdict, reported tip and the response it came from. */
export interface Exchanged<T> {
  readonly verdict: Verdict<T>;
  readonly tipHeight: number | undefined;
  readonly response: { readonly status: number; readonly body: string } | undefined;
}

interface Sent<T> {
  readonly verdict: Verdict<T>;
  readonly upstream: Upstream;
  readonly tipHeight: number | undefined;
}

interface Round<T> extends Sent<T> {
  /** Upstreams that failed transiently during these attempts. */
  readonly failed: readonly Upstream[];
}

export class Attempts {
  readonly #pool: UpstreamPool;
  readonly #transport: Transport;
  readonly #config: RetryConfig;
  readonly #logger: UpstreamLogger | undefined;
  readonly #onAttempt: ((event: AttemptEvent) => void) | undefined;
  readonly #plausibleTip: ((network: Network, height: number) => boolean) | undefined;
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
    this.#plausibleTip = options.plausibleTip;
    this.#sleep = options.sleep ?? defaultSleep;
    this.#random = options.random ?? Math.random;
    this.#now = options.now ?? Date.now;
    this.#maxBackoffMs = options.maxBackoffMs ?? 30_000;
  }

  async run<T>(
    target: Target,
    body: OutgoingBody | undefined,
    onSuccess: SuccessCheck<T>,
    onSpecialStatus?: StatusCheck<T>,
    options: RunOptions = {},
  ): Promise<Answered<T>> {
    const transport = this.#transport;
    // maxAttempts can only lower UPSTREAM_RETRIES (never below one attempt).
    const retries =
      options.maxAttempts === undefined
        ? this.#config.upstreamRetries
        : Math.min(this.#config.upstreamRetries, Math.max(1, Math.floor(options.maxAttempts)) - 1);
    const latest = options.latest !== false;
    const clientId = options.context?.clientId;
    const failed = new Set<Upstream>();
    // Failed attempts that count against `retries`: all but the answers discarded for their tip.
    let counted = 0;
    for (let attempt = 0; ; attempt++) {
      if (transport.closed) throw closedError(target);
      let upstream: Upstream;
      try {
        // The asking key's upstream quota first: a refused request never reaches the upstream
        // nor spends its budget.
        await options.context?.admitUpstream?.();
        upstream = (await this.#pool.acquire(target.network, {
          avoid: failed,
          latest,
          clientId,
          maxWaitMs: options.budgetWaitMs,
          signal: options.context?.signal,
        }))!;
      } catch (err) {
        throw withContext(err, target, attempt);
      }
      if (transport.closed) throw closedError(target);

      const round = await this.#round(
        upstream,
        target,
        body,
        onSuccess,
        onSpecialStatus,
        attempt,
        failed,
        options,
      );
      const { verdict } = round;
      if (verdict.type === 'ok') {
        return round.tipHeight === undefined
          ? { value: verdict.value, upstream: round.upstream }
          : { value: verdict.value, upstream: round.upstream, tipHeight: round.tipHeight };
      }
      if (verdict.type === 'final') throw verdict.error;
      for (const u of round.failed) failed.add(u);
      const elsewhere = this.#pool.hasAlternative(target.network, { avoid: failed, latest });
      // Sent once means never resent: only a request that did not leave may go elsewhere.
      if (options.once && !(verdict.notSent === true && elsewhere)) throw verdict.error(attempt + 1);
      if (options.elsewhereOnly === true && !elsewhere) throw verdict.error(attempt + 1);
      if (verdict.elsewhereOnly === true && !elsewhere) throw verdict.error(attempt + 1);
      // An answer discarded for a tip height that cannot be believed is not a failure worth a
      // retry but a report not believed: the other upstreams are asked whatever retries are
      // left (each once: it is never asked again), or one lying upstream would fail requests an
      // honest one could answer (UPSTREAM_RETRIES=0, or a stale answer's single attempt).
      if (verdict.outcome !== 'implausible') counted += 1;
      if (counted > retries) throw verdict.error(attempt + 1);

      const logFields = {
        network: target.network,
        method: target.method,
        path: target.path,
        attempt,
        outcome: verdict.outcome,
        upstream: round.upstream.id,
        upstreamHost: hostOf(round.upstream),
        ...(options.context?.requestId === undefined ? {} : { reqId: options.context.requestId }),
      };
      if (elsewhere) {
        this.#logger?.warn(logFields, 'upstream attempt failed, failing over to another upstream');
        continue;
      }
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

  /**
   * One exchange with the given upstream, whose token the caller already took (a lag check):
   * no retries, no hedge. Reported like any attempt.
   */
  async once<T>(upstream: Upstream, target: Target, onSuccess: SuccessCheck<T>): Promise<Verdict<T>> {
    return (await this.#send(upstream, target, undefined, onSuccess, undefined, 0, undefined, {})).verdict;
  }

  /**
   * One exchange with an upstream whose token the caller took (a participant of an attested
   * vote, docs/consensus.md): no retry, no hedge, reported like any attempt. Its verdict, the
   * tip it reported, and the response it was read from (status and body as they came), when
   * one came.
   */
  async exchange<T>(
    upstream: Upstream,
    target: Target,
    body: OutgoingBody | undefined,
    onSuccess: SuccessCheck<T>,
    onSpecialStatus: StatusCheck<T> | undefined,
    options: RunOptions,
  ): Promise<Exchanged<T>> {
    let response: { status: number; body: string } | undefined;
    const seen = (res: { status: number; body: string }): void => {
      response = { status: res.status, body: res.body };
    };
    const sent = await this.#send(
      upstream,
      target,
      body,
      (res) => {
        seen(res);
        return onSuccess(res);
      },
      (res) => {
        seen(res);
        return onSpecialStatus?.(res);
      },
      0,
      undefined,
      options,
    );
    return { verdict: sent.verdict, tipHeight: sent.tipHeight, response };
  }

  /** The first attempt of a round, and its hedge when UPSTREAM_HEDGE_MS says so. */
  async #round<T>(
    upstream: Upstream,
    target: Target,
    body: OutgoingBody | undefined,
    onSuccess: SuccessCheck<T>,
    onSpecialStatus: StatusCheck<T> | undefined,
    attempt: number,
    failed: ReadonlySet<Upstream>,
    options: RunOptions,
  ): Promise<Round<T>> {
    const hedgeMs = options.once ? undefined : this.#config.upstreamHedgeMs;
    // Only a hedge ever aborts the first attempt: without one, no controller is made for it.
    const mainAbort = hedgeMs === undefined ? undefined : new AbortController();
    const main = this.#send(
      upstream,
      target,
      body,
      onSuccess,
      onSpecialStatus,
      attempt,
      mainAbort?.signal,
      options,
    );
    const asRound = (s: Sent<T>): Round<T> => ({
      ...s,
      failed: s.verdict.type === 'retry' ? [s.upstream] : [],
    });
    if (hedgeMs === undefined) return asRound(await main);

    let timer: NodeJS.Timeout | undefined;
    const first = await Promise.race([
      main,
      new Promise<undefined>((resolve) => {
        timer = setTimeout(() => resolve(undefined), hedgeMs);
      }),
    ]);
    clearTimeout(timer);
    if (first !== undefined) return asRound(first);

    let second: Upstream | undefined;
    try {
      await options.context?.admitUpstream?.();
      second = await this.#pool.acquire(target.network, {
        avoid: new Set([...failed, upstream]),
        latest: options.latest !== false,
        clientId: options.context?.clientId,
        noWait: true,
      });
    } catch {
      second = undefined;
    }
    if (second === undefined || this.#transport.closed) return asRound(await main);
    const hedgeAbort = new AbortController();
    const hedge = this.#send(
      second,
      target,
      body,
      onSuccess,
      onSpecialStatus,
      attempt,
      hedgeAbort.signal,
      options,
      true,
    );

    return new Promise<Round<T>>((resolve) => {
      let pending = 2;
      let done = false;
      const failedHere: Upstream[] = [];
      const settle = (s: Sent<T>, loser: AbortController): void => {
        if (done) return;
        if (s.verdict.type !== 'retry') {
          done = true;
          loser.abort();
          resolve({ ...s, failed: failedHere });
          return;
        }
        failedHere.push(s.upstream);
        pending -= 1;
        if (pending === 0) {
          done = true;
          resolve({ ...s, failed: failedHere });
        }
      };
      void main.then((s) => settle(s, hedgeAbort));
      void hedge.then((s) => settle(s, mainAbort!));
    });
  }

  async #send<T>(
    upstream: Upstream,
    target: Target,
    body: OutgoingBody | undefined,
    onSuccess: SuccessCheck<T>,
    onSpecialStatus: StatusCheck<T> | undefined,
    attempt: number,
    signal: AbortSignal | undefined,
    options: RunOptions,
    hedge = false,
  ): Promise<Sent<T>> {
    const transport = this.#transport;
    const settings: OutcomeSettings = {
      timeoutMs: transport.timeoutMs,
      maxResponseBytes: transport.maxResponseBytes,
      retryBaseMs: this.#config.upstreamRetryBaseMs,
      now: this.#now,
    };
    const started = performance.now();
    const raw = await transport.send(upstream, target.method, target.path, body, signal);
    const durationMs = performance.now() - started;
    let verdict = interpret(target, raw, settings, onSuccess, onSpecialStatus);
    const status = raw.type === 'response' || raw.type === 'too-large' ? raw.status : undefined;
    let tipHeight = raw.type === 'response' ? readTipHeight(raw.headers) : undefined;
    const reported = raw.type === 'response' ? rawTipHeight(raw.headers) : undefined;
    const reportedInBody = verdict.type === 'ok' ? verdict.reportedTip : undefined;
    // A tip height that cannot be believed (docs/freshness.md), in the header or in the body,
    // discards the answer: its body may be the old state of a node that claims to be ahead.
    // Another upstream is asked instead.
    if (!this.#believable(target.network, reported) || !this.#believable(target.network, reportedInBody)) {
      upstream.stats.markImplausible();
      tipHeight = undefined;
      verdict = {
        type: 'retry',
        outcome: 'implausible',
        elsewhereOnly: true,
        error: (attempts) =>
          new GatewayError(
            'UPSTREAM_API_ERROR',
            `upstream ${describe(target)} reported a chain tip height that cannot be believed (after ${attempts} attempts)`,
            { retryable: true, attempts, reason: 'implausible chain tip height' },
          ),
      };
    }
    if (verdict.outcome !== 'aborted') {
      // A failure of the upstream itself (the breaker's count): what is worth another attempt,
      // except a pinned tip it does not know, which is the node answering.
      const failed = verdict.type === 'retry' && verdict.outcome !== 'not-found';
      this.#pool.report(upstream, verdict.outcome, durationMs, tipHeight, failed);
    }
    this.#emit({
      network: target.network,
      upstream: upstream.id,
      kind: target.kind,
      outcome: verdict.outcome,
      durationMs,
      attempt,
      ...(status === undefined ? {} : { status }),
      ...(hedge ? { hedge: true } : {}),
    });
    const usage = options.context?.usage;
    if (usage !== undefined) {
      usage.attempts += 1;
      usage.ms += durationMs;
      usage.upstream = upstream.id;
      usage.host = hostOf(upstream);
    }
    this.#logger?.debug(
      {
        network: target.network,
        upstream: upstream.id,
        upstreamHost: hostOf(upstream),
        method: target.method,
        path: target.path,
        attempt,
        outcome: verdict.outcome,
        status,
        durationMs: Math.round(durationMs),
        ...(hedge ? { hedge: true } : {}),
        ...(options.context?.requestId === undefined ? {} : { reqId: options.context.requestId }),
      },
      'upstream attempt',
    );
    return { verdict, upstream, tipHeight };
  }

  /** Whether a reported tip height (if any) may be believed. */
  #believable(network: Network, height: number | undefined): boolean {
    return height === undefined || this.#plausibleTip?.(network, height) !== false;
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

/** The upstream's host[:port], for log lines (its origin never holds credentials). */
function hostOf(upstream: Upstream): string {
  return upstream.origin.replace(/^[a-z][a-z0-9+.-]*:\/\//i, '');
}

/** X-Canonical-Stacks-Tip-Height as a number when it is one at all (for the plausibility check). */
function rawTipHeight(headers: Record<string, string | string[] | undefined>): number | undefined {
  const raw = headers['x-canonical-stacks-tip-height'];
  const text = (Array.isArray(raw) ? raw[0] : raw)?.trim();
  if (text === undefined || text === '') return undefined;
  const n = Number(text);
  return Number.isNaN(n) ? undefined : n;
}

/** X-Canonical-Stacks-Tip-Height as a safe integer, or undefined when absent or garbled. */
function readTipHeight(headers: Record<string, string | string[] | undefined>): number | undefined {
  const raw = headers['x-canonical-stacks-tip-height'];
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
