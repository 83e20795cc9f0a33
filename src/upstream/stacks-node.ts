/**
 * The one client of the Stacks node RPC (Hiro's API by default; docs/api.md "Upstream: the
 * Stacks node RPC", "Errors and HTTP status"): `send(descriptor, call)` for every request, its
 * method, path and query from the endpoint table (endpoints.ts), and, when the gateway reads
 * an answer for itself, what that answer must look like. The loop of attempts, budgets and
 * retries is attempts.ts; one HTTP exchange is transport.ts; the generic status mapping is
 * outcomes.ts.
 *
 * | answer                                             | result (the error table maps a variant to its status) |
 * |----------------------------------------------------|----------------------------------------------|
 * | 200 {okay:true,result:"0x.."}                      | success                                      |
 * | 200 {okay:false,cause} (cause has NoSuchContract)  | UPSTREAM_API_ERROR unknown-contract (404) {cause, retryable:false} |
 * | 200 {okay:false,cause} (any other cause)           | UPSTREAM_API_ERROR node-refused (422) {cause, retryable:false} |
 * | ABI 404 "No contract interface data found"         | UPSTREAM_API_ERROR unknown-contract (404) {retryable:false, upstreamStatus:404} |
 * | 200 whose body is not JSON                         | UPSTREAM_API_ERROR 502 {reason:'malformed', retryable:true}, not retried on the same upstream (another is asked) |
 * | 200 JSON of the wrong shape (non-hex result, ...)  | UPSTREAM_API_ERROR 502 {reason:'malformed', retryable:false} |
 * | pinned call (?tip=) answered 404 (unknown block)   | asked of the other upstreams; then UPSTREAM_API_ERROR unknown-block (404) {tip, retryable:false} |
 * | no budget token within the queue timeout           | RATE_LIMIT_EXCEEDED 429 (from the budget)    |
 *
 * A 200 whose body is not JSON is *not* retried: only what the table says is retried is, and
 * a deterministic garbage answer would burn the whole budget; but it is marked retryable for
 * clients, because in practice it is an intermediary (CDN/proxy) glitch that a later request
 * survives. A 200 with well-formed JSON of the wrong shape points at an API incompatibility,
 * so it is neither retried nor marked retryable.
 */
import type { Dispatcher } from 'undici';
import { abiShapeProblem } from '../clarity/abi-shape.js';
import type { Config, Network } from '../config/index.js';
import type { SecretRedactor } from '../config/redact.js';
import { GatewayError } from '../errors.js';
import {
  type Answered,
  type AttemptEvent,
  Attempts,
  type RunOptions,
  type UpstreamLogger,
} from './attempts.js';
import type { Budget } from './budget/upstream-budget.js';
import { bodySha256, Consensus, type ConsensusOptions } from './consensus.js';
import { INFO, type NodeEndpoint, pathOf, queryOf, type Reading } from './endpoints.js';
import type {
  AnswerOf,
  ForwardedAnswer,
  NodeAnswer,
  NodeApi,
  NodeCall,
  Readings,
  RequestContext,
  UpstreamContractInterface,
  UpstreamNodeInfo,
} from './node-api.js';
import {
  describe,
  reasonOf,
  type StatusCheck,
  type SuccessCheck,
  type Target,
  type UpstreamKind,
  type Verdict,
} from './outcomes.js';
import { createDefaultPool, type Upstream, type UpstreamPool } from './pool.js';
import { type HttpResponse, Transport } from './transport.js';

export type UpstreamConfig = Pick<
  Config,
  | 'upstreamUrls'
  | 'stacksApiKey'
  | 'upstreamTimeoutMs'
  | 'upstreamRetries'
  | 'upstreamRetryBaseMs'
  | 'upstreamRetryAfterCapMs'
> &
  Partial<Pick<Config, 'upstreamHedgeMs'>>;

export interface StacksNodeClientOptions {
  /** Timeouts and retries; with `budgets`, also the upstreams (one per network). */
  config: UpstreamConfig;
  /**
   * Where attempts go. Default: one upstream per network from `config`, with `budgets`. The
   * client does not own the pool: its budgets belong to the caller and are left open.
   */
  pool?: UpstreamPool;
  /** One budget per network for the default pool (ignored when `pool` is given). */
  budgets?: Record<Network, Budget>;
  logger?: UpstreamLogger;
  /** Called after every HTTP attempt (metrics hook). Must not throw. */
  onAttempt?: (event: AttemptEvent) => void;
  /** Told of every /v2/info an upstream answered (the chain it names), and which one. Must not throw. */
  onInfo?: (network: Network, info: UpstreamNodeInfo, upstream: Upstream) => void;
  /** Whether a reported tip height may be believed (docs/freshness.md); absent = all are. */
  plausibleTip?: (network: Network, height: number) => boolean;
  /** Waits between retries; injectable for deterministic tests. */
  sleep?: (ms: number) => Promise<void>;
  /** Uniform [0, 1) for jitter; injectable for deterministic tests. */
  random?: () => number;
  /** Wall clock (epoch ms) for Retry-After HTTP-dates. */
  now?: () => number;
  /**
   * Use this dispatcher (e.g. an undici MockAgent) for every origin instead of owning a Pool
   * per origin. The client does not close an injected dispatcher.
   */
  dispatcher?: Dispatcher;
  /** Sockets per upstream origin (default 16). */
  connectionsPerOrigin?: number;
  /** Upper bound of one exponential backoff wait (default 30 s). */
  maxBackoffMs?: number;
  /** Largest upstream body accepted (default 16 MiB); more is a final 502. */
  maxResponseBytes?: number;
  /**
   * The configured secrets (src/config/secrets.ts), replaced in what a node says that reaches
   * clients as it said it: a forwarded route's body and content type, a refusal's cause. An
   * upstream may echo the request it was sent, and with it the gateway's key or its URL's
   * query. What the gateway only reads for itself (a tip, an ABI's shape) is left as it came:
   * a short secret replaced inside it could only garble it.
   */
  secrets?: SecretRedactor;
  /**
   * Attested answers (docs/consensus.md): each network's k/n, what low participation does, the
   * strikes, and hooks for metrics and the log. Absent: one upstream's word, as before.
   */
  consensus?: Omit<ConsensusOptions, 'pool' | 'attempts'>;
}

const HEX_RESULT = /^0x(?:[0-9a-fA-F]{2})+$/;

export class StacksNodeClient implements NodeApi {
  readonly pool: UpstreamPool;
  readonly #transport: Transport;
  readonly #attempts: Attempts;
  readonly #onInfo: ((network: Network, info: UpstreamNodeInfo, upstream: Upstream) => void) | undefined;
  /** Attested answers, when a network's rule asks more than one upstream (docs/consensus.md). */
  readonly consensus: Consensus | undefined;
  /** Secrets out of what passes through to clients; the text itself when it holds none. */
  readonly #clean: (text: string) => string;

  constructor(options: StacksNodeClientOptions) {
    const { config } = options;
    if (options.pool === undefined && options.budgets === undefined) {
      throw new TypeError('StacksNodeClient needs a pool or one budget per network');
    }
    this.pool = options.pool ?? createDefaultPool(config, options.budgets!);
    const secrets = options.secrets;
    this.#clean = secrets === undefined || secrets.empty ? (text) => text : (text) => secrets.redact(text);
    this.#transport = new Transport({
      timeoutMs: config.upstreamTimeoutMs,
      ...(options.dispatcher === undefined ? {} : { dispatcher: options.dispatcher }),
      ...(options.connectionsPerOrigin === undefined
        ? {}
        : { connectionsPerOrigin: options.connectionsPerOrigin }),
      ...(options.maxResponseBytes === undefined ? {} : { maxResponseBytes: options.maxResponseBytes }),
    });
    this.#attempts = new Attempts({
      pool: this.pool,
      transport: this.#transport,
      config,
      logger: options.logger,
      onAttempt: options.onAttempt,
      plausibleTip: options.plausibleTip,
      sleep: options.sleep,
      random: options.random,
      now: options.now,
      maxBackoffMs: options.maxBackoffMs,
    });
    this.#onInfo = options.onInfo;
    this.consensus =
      options.consensus === undefined
        ? undefined
        : new Consensus({ ...options.consensus, pool: this.pool, attempts: this.#attempts });
    this.pool.lagCheck = (upstream) => {
      void this.#checkTip(upstream);
    };
    // The pool judges lag by the heights this client's answers report: by the same rule.
    if (options.plausibleTip !== undefined) this.pool.plausibleTip = options.plausibleTip;
  }

  /**
   * Any request of a node route (the endpoint table), its path and query from the descriptor.
   * Without `read`, the node's answer as it gave it, whatever its status, except the transient
   * ones (5xx, 429), which are retried and failed over like every read's and, when every
   * attempt failed, raised as the gateway's own error. With `read`, the gateway's own read:
   * the answer is checked as the reading says (see the module comment) before it is used.
   */
  async send<C extends NodeCall>(
    endpoint: NodeEndpoint,
    call: C,
    ctx?: RequestContext,
  ): Promise<NodeAnswer<AnswerOf<C>>> {
    const read = call.read;
    if (read !== undefined && endpoint.reads !== read) {
      throw new TypeError(`the ${endpoint.name} route is not read as ${read}`);
    }
    const target = targetOf(endpoint, call);
    const options: RunOptions = {
      latest: call.latest,
      context: ctx,
      once: call.once,
      maxAttempts: call.maxAttempts,
      budgetWaitMs: call.budgetWaitMs,
      elsewhereOnly: call.elsewhereOnly,
    };
    const consensus = this.consensus;
    const answered =
      consensus !== undefined && call.once !== true && isVoted(endpoint) && consensus.active(call.network)
        ? await this.#voted(consensus, endpoint, target, call, read, ctx)
        : await this.#run(target, call, read, options);
    if (read === 'info') {
      const { info } = answered.value as Readings['info'];
      // The body's tip is the node's own view; it counts as a report for the upstream's lag.
      answered.upstream.stats.observeTip(info.stacks_tip_height);
      this.#onInfo?.(call.network, info, answered.upstream);
    }
    return withMeta(answered.value as AnswerOf<C>, answered);
  }

  /** The attempts of one call, with the checks of its reading (or none: pass-through). */
  #run(
    target: Target,
    call: NodeCall,
    read: Reading | undefined,
    options: RunOptions,
  ): Promise<Answered<object>> {
    const { onSuccess, onSpecialStatus } = this.#checks(target, call, read);
    return this.#attempts.run(target, call.body, onSuccess, onSpecialStatus, options);
  }

  /**
   * An attested call (docs/consensus.md): k of up to n upstreams asked at one pinned block must
   * give the same answer, read with the checks of its reading.
   */
  async #voted(
    consensus: Consensus,
    endpoint: NodeEndpoint,
    target: Target,
    call: NodeCall,
    read: Reading | undefined,
    ctx: RequestContext | undefined,
  ): Promise<Answered<object> & { votes: number }> {
    const { onSuccess, onSpecialStatus } = this.#checks(target, call, read);
    const params = call.params ?? {};
    const voted = await consensus.vote({
      target,
      body: call.body,
      onSuccess,
      onSpecialStatus,
      read: {
        route: endpoint.name,
        ...(params['address'] === undefined
          ? {}
          : { contract: `${params['address']}.${params['contract'] ?? ''}` }),
        ...(params['function'] === undefined ? {} : { function: params['function'] }),
        ...(call.body === undefined ? {} : { argsSha256: bodySha256(call.body) }),
      },
      tip: call.query?.['tip'],
      context: ctx,
      budgetWaitMs: call.budgetWaitMs,
    });
    return voted.tipHeight === undefined
      ? { value: voted.value, upstream: voted.upstream, votes: voted.votes }
      : { value: voted.value, upstream: voted.upstream, tipHeight: voted.tipHeight, votes: voted.votes };
  }

  /** How a call's answers are read: its reading's checks, or the node's answer as it came. */
  #checks(
    target: Target,
    call: NodeCall,
    read: Reading | undefined,
  ): { onSuccess: SuccessCheck<object>; onSpecialStatus: StatusCheck<object> | undefined } {
    switch (read) {
      case undefined: {
        const passThrough = (res: HttpResponse): Verdict<ForwardedAnswer> => {
          const type = res.headers['content-type'];
          return {
            type: 'ok',
            outcome: 'ok',
            value: {
              status: res.status,
              contentType: this.#clean((Array.isArray(type) ? type[0] : type) ?? 'application/octet-stream'),
              body: this.#clean(res.body),
            },
          };
        };
        return {
          onSuccess: passThrough,
          onSpecialStatus: (res) => (res.status === 429 || res.status >= 500 ? undefined : passThrough(res)),
        };
      }
      case 'result':
        return {
          onSuccess: (res) => this.#checkResult(target, call, res),
          onSpecialStatus: (res) => pinnedNotFound(target, call, res),
        };
      case 'abi':
        return {
          onSuccess: (res) => checkAbi(target, res),
          onSpecialStatus: (res) => abiNotFound(target, call, res, this.#clean),
        };
      case 'info':
        return { onSuccess: (res) => checkInfo(target, res), onSpecialStatus: undefined };
    }
  }

  /** A read-only call's 2xx: {okay:true,result:"0x.."}, or the node's refusal (see the table above). */
  #checkResult(target: Target, call: NodeCall, res: HttpResponse): Verdict<Readings['result']> {
    const json = parseJson(res.body);
    if (json === PARSE_FAILED) return garbage(target, res.status);
    if (!isRecord(json) || typeof json['okay'] !== 'boolean') {
      return malformed(target, 'the answer has no boolean "okay"');
    }
    if (json['okay'] === true) {
      const result = json['result'];
      if (typeof result !== 'string' || !HEX_RESULT.test(result)) {
        return malformed(target, 'okay:true without a 0x hex "result"');
      }
      return { type: 'ok', outcome: 'ok', value: { result } };
    }
    const cause = this.#clean(
      typeof json['cause'] === 'string' ? json['cause'] : JSON.stringify(json['cause'] ?? null),
    );
    if (cause.includes('NoSuchContract')) {
      return {
        type: 'final',
        outcome: 'okay-false',
        error: new GatewayError(
          'UPSTREAM_API_ERROR',
          `contract ${contractOf(call)} not found on ${describe(target)}: ${cause}`,
          { cause, retryable: false },
          { variant: 'unknown-contract' },
        ),
      };
    }
    return {
      type: 'final',
      outcome: 'okay-false',
      error: new GatewayError(
        'UPSTREAM_API_ERROR',
        `upstream node refused the read-only call on ${describe(target)}: ${cause}`,
        { cause, retryable: false },
        { variant: 'node-refused' },
      ),
    };
  }

  async infoRound(network: Network, most: number): Promise<UpstreamNodeInfo[]> {
    // One that sits out for lost votes is not asked (docs/consensus.md); another chain's is, to
    // learn whether it still serves it.
    const sittingOut = this.pool.sittingOut;
    const chosen = this.pool
      .upstreams(network)
      .filter((u) => sittingOut?.(u) !== true)
      .slice(0, Math.max(1, most));
    // A token within the budget's queue limit, like any request of the upstream.
    const verdicts = await Promise.all(chosen.map((upstream) => this.#infoOf(upstream, undefined)));
    // Another chain's tip is not the network's (its report, learned above, excluded it).
    return verdicts.flatMap((v, i) =>
      v?.type === 'ok' && this.pool.wrongChain?.(chosen[i]!) === undefined ? [v.value.info] : [],
    );
  }

  /**
   * GET /v2/info of this upstream alone (one attempt, after one of its budget tokens): the tip
   * it names, learned like any /v2/info. Undefined when it did not answer (or had no token).
   * An attested vote learns the tip again from an upstream that did not know the pinned block.
   */
  async infoFrom(upstream: Upstream): Promise<UpstreamNodeInfo | undefined> {
    const verdict = await this.#infoOf(upstream, undefined);
    return verdict?.type === 'ok' ? verdict.value.info : undefined;
  }

  /**
   * A lagging upstream's tip, asked of it alone (pool.ts calls this while requests skip it, at
   * most once per breaker cooldown). Only when it has a token now: never at a request's expense.
   */
  async #checkTip(upstream: Upstream): Promise<void> {
    await this.#infoOf(upstream, 0);
  }

  /**
   * One GET /v2/info of this upstream alone, one attempt, after one budget token (waited for at
   * most `maxWaitMs`; undefined = the budget's queue limit). A successful answer is learned (the
   * upstream's lag, the chain it names). Undefined when it was not asked: no token, or closing.
   */
  async #infoOf(
    upstream: Upstream,
    maxWaitMs: number | undefined,
  ): Promise<Verdict<Readings['info']> | undefined> {
    if (this.#transport.closed) return undefined;
    try {
      await upstream.budget.take(maxWaitMs);
    } catch {
      return undefined;
    }
    const target = targetOf(INFO, { network: upstream.network, read: 'info' });
    const verdict = await this.#attempts.once(upstream, target, (res) => checkInfo(target, res));
    if (verdict.type === 'ok') {
      upstream.stats.observeTip(verdict.value.info.stacks_tip_height);
      this.#onInfo?.(upstream.network, verdict.value.info, upstream);
    }
    return verdict;
  }

  /**
   * The start-up check of one upstream: one GET /v2/info with one budget token taken now (never
   * waited for: the check must not delay anything, nor take a token a request is waiting
   * for), no retry. Its answer (which names the chain and its tip), or why not, in words
   * without secrets; undefined when it was not asked (no token now, or shutting down).
   */
  async startupCheck(
    upstream: Upstream,
  ): Promise<{ info: UpstreamNodeInfo } | { failure: string } | undefined> {
    const verdict = await this.#infoOf(upstream, 0);
    if (verdict === undefined) return undefined;
    if (verdict.type === 'ok') return verdict.value;
    return { failure: (verdict.type === 'final' ? verdict.error : verdict.error(1)).message };
  }

  /**
   * Stop: later calls fail, in-flight attempts are aborted (UPSTREAM_API_ERROR 502, retryable),
   * owned connection pools are closed. The upstream pool and its budgets belong to the caller
   * and are left open. Idempotent.
   */
  async close(): Promise<void> {
    await this.#transport.close();
  }

  /**
   * Start shutting down: no new attempt or retry (waits between attempts end at once), with
   * SERVICE_UNAVAILABLE 503; attempts under way may finish until close(). Idempotent.
   */
  drain(): void {
    this.#transport.drain();
  }
}

// --- answer checks ----------------------------------------------------------------------------

/**
 * Where a call goes: the descriptor's method, its path with the call's parameters, the query
 * it takes. Metrics name the gateway's own reads by their route, and every client's as 'node'.
 */
function targetOf(endpoint: NodeEndpoint, call: NodeCall): Target {
  const query = queryOf(endpoint, call.query);
  return {
    network: call.network,
    kind: call.read === undefined ? 'node' : READ_KINDS[call.read],
    method: endpoint.method,
    path: pathOf(endpoint, call.params ?? {}) + (query === '' ? '' : `?${query}`),
  };
}

const READ_KINDS: Record<Reading, UpstreamKind> = { result: 'call-read', abi: 'interface', info: 'info' };

/** `address.contract` of a contract route's call, for messages. */
function contractOf(call: NodeCall): string {
  return `${call.params?.['address'] ?? ''}.${call.params?.['contract'] ?? ''}`;
}

/** A read pinned to a block (?tip=) that the node answers 404: another upstream may know the block. */
function pinnedNotFound(target: Target, call: NodeCall, res: HttpResponse): Verdict<never> | undefined {
  const tip = call.query?.['tip'];
  if (tip === undefined || res.status !== 404) return undefined;
  return {
    type: 'retry',
    outcome: 'not-found',
    elsewhereOnly: true,
    error: (attempts) =>
      new GatewayError(
        'UPSTREAM_API_ERROR',
        `block ${tip} is unknown to the ${target.network} upstream${attempts > 1 ? `s (asked ${attempts})` : ''}: ${describe(target)} answered 404`,
        { tip, retryable: false, upstreamStatus: 404, reason: reasonOf(404), attempts },
        { variant: 'unknown-block', upstreamText: res.body.slice(0, 500) },
      ),
  };
}

/** An ABI's 2xx: the whole shape, not just `functions`: a malformed ABI must not be cached. */
function checkAbi(target: Target, res: HttpResponse): Verdict<Readings['abi']> {
  const json = parseJson(res.body);
  if (json === PARSE_FAILED) return garbage(target, res.status);
  const problem = abiShapeProblem(json);
  if (problem !== undefined) return malformed(target, problem);
  return { type: 'ok', outcome: 'ok', value: { abi: json as UpstreamContractInterface } };
}

/**
 * The node's 404 "No contract interface data found": the contract does not exist. The node's
 * answer rides along (without secrets), for the node-compatible interface route to pass through.
 */
function abiNotFound(
  target: Target,
  call: NodeCall,
  res: HttpResponse,
  clean: (text: string) => string,
): Verdict<never> | undefined {
  if (res.status !== 404 || !/no contract interface/i.test(res.body)) return undefined;
  const type = res.headers['content-type'];
  return {
    type: 'final',
    outcome: 'not-found',
    error: new GatewayError(
      'UPSTREAM_API_ERROR',
      `contract ${contractOf(call)} not found on ${describe(target)}`,
      { retryable: false, upstreamStatus: 404 },
      {
        variant: 'unknown-contract',
        nodeAnswer: {
          status: res.status,
          contentType: clean((Array.isArray(type) ? type[0] : type) ?? 'text/plain'),
          body: clean(res.body),
        },
      },
    ),
  };
}

function checkInfo(target: Target, res: HttpResponse): Verdict<Readings['info']> {
  const json = parseJson(res.body);
  if (json === PARSE_FAILED) return garbage(target, res.status);
  if (!isRecord(json) || typeof json['stacks_tip_height'] !== 'number') {
    return malformed(target, 'no numeric "stacks_tip_height"');
  }
  const info = json as UpstreamNodeInfo;
  return { type: 'ok', outcome: 'ok', value: { info }, reportedTip: info.stacks_tip_height };
}

function withMeta<T extends object>(value: T, answer: Answered<unknown> & { votes?: number }): NodeAnswer<T> {
  const meta: { upstream: string; tipHeight?: number; votes?: number } = { upstream: answer.upstream.id };
  if (answer.tipHeight !== undefined) meta.tipHeight = answer.tipHeight;
  if (answer.votes !== undefined) meta.votes = answer.votes;
  return { ...value, ...meta };
}

/**
 * Whether a route's answers are voted on under attested answers (docs/consensus.md): those that
 * fill a cache entry (immutable, latest-state, account); never /v2/info and the other timed
 * routes, never the uncached ones, never a broadcast.
 */
function isVoted(endpoint: NodeEndpoint): boolean {
  return endpoint.cache === 'immutable' || endpoint.cache === 'latest' || endpoint.cache === 'account';
}

const PARSE_FAILED = Symbol('parse failed');

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return PARSE_FAILED;
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * A 200 whose body is not JSON: see the module comment for why it is retryable but not retried
 * on the same upstream. Another upstream is asked when there is one (docs/upstreams.md counts
 * garbage among the transient failures a failover covers): an intermediary glitch of one
 * upstream says nothing of the others.
 */
function garbage(target: Target, status: number): Verdict<never> {
  const error = new GatewayError(
    'UPSTREAM_API_ERROR',
    `upstream ${describe(target)} answered ${status} with a body that is not JSON (malformed)`,
    { retryable: true, upstreamStatus: status, reason: 'malformed' },
  );
  return { type: 'retry', outcome: 'malformed', elsewhereOnly: true, error: () => error };
}

function malformed(target: Target, what: string): Verdict<never> {
  return {
    type: 'final',
    outcome: 'malformed',
    error: new GatewayError(
      'UPSTREAM_API_ERROR',
      `upstream ${describe(target)} answered a malformed body: ${what}`,
      { retryable: false, reason: 'malformed' },
    ),
  };
}
