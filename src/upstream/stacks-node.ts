/**
 * The Stacks node RPC endpoints the gateway uses (Hiro's API by default; docs/api.md
 * "Upstream: the Stacks node RPC", "Errors and HTTP status"): their paths, and what their
 * answers must look like. The loop of attempts, budgets and retries is attempts.ts; one HTTP
 * exchange is transport.ts; the generic status mapping is outcomes.ts.
 *
 * | answer                                             | result                                       |
 * |----------------------------------------------------|----------------------------------------------|
 * | 200 {okay:true,result:"0x.."}                      | success                                      |
 * | 200 {okay:false,cause} (cause has NoSuchContract)  | UPSTREAM_API_ERROR 404 {cause, retryable:false} |
 * | 200 {okay:false,cause} (any other cause)           | UPSTREAM_API_ERROR 422 {cause, retryable:false} |
 * | ABI 404 "No contract interface data found"         | UPSTREAM_API_ERROR 404 {retryable:false, upstreamStatus:404} |
 * | 200 whose body is not JSON                         | UPSTREAM_API_ERROR 502 {reason:'malformed', retryable:true}, not retried on the same upstream (another is asked) |
 * | 200 JSON of the wrong shape (non-hex result, ...)  | UPSTREAM_API_ERROR 502 {reason:'malformed', retryable:false} |
 * | pinned call (?tip=) answered 404 (unknown block)   | asked of the other upstreams; then UPSTREAM_API_ERROR 404 {tip, retryable:false} |
 * | no budget token within the queue timeout           | RATE_LIMIT_EXCEEDED 429 (from the budget)    |
 *
 * A 200 whose body is not JSON is *not* retried: the spec's retry list is exhaustive and a
 * deterministic garbage answer would burn the whole budget; but it is marked retryable for
 * clients, because in practice it is an intermediary (CDN/proxy) glitch that a later request
 * survives. A 200 with well-formed JSON of the wrong shape points at an API incompatibility,
 * so it is neither retried nor marked retryable.
 */
import type { Dispatcher } from 'undici';
import { abiShapeProblem } from '../clarity/abi-shape.js';
import type { Config, Network } from '../config/index.js';
import { GatewayError } from '../errors.js';
import type { SecretRedactor } from '../config/redact.js';
import { type Answered, type AttemptEvent, Attempts, type UpstreamLogger } from './attempts.js';
import type { Budget } from './budget/budget.js';
import type {
  CallOptions,
  ContractInterfaceAnswer,
  ForwardedAnswer,
  ForwardRequest,
  NodeAnswer,
  NodeApi,
  NodeInfoAnswer,
  ReadOnlyAnswer,
  ReadOnlyCallOptions,
  ReadOnlyRequestBody,
  RequestContext,
  UpstreamContractInterface,
  UpstreamNodeInfo,
} from './node-api.js';
import { describe, reasonOf, type Target, type Verdict } from './outcomes.js';
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
  /** Told of every /v2/info an upstream answered (the chain identity it names). Must not throw. */
  onInfo?: (network: Network, info: UpstreamNodeInfo) => void;
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
}

const HEX_RESULT = /^0x(?:[0-9a-fA-F]{2})+$/;

export class StacksNodeClient implements NodeApi {
  readonly pool: UpstreamPool;
  readonly #transport: Transport;
  readonly #attempts: Attempts;
  readonly #onInfo: ((network: Network, info: UpstreamNodeInfo) => void) | undefined;
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
    this.pool.lagCheck = (upstream) => {
      void this.#checkTip(upstream);
    };
  }

  async callReadOnly(
    network: Network,
    address: string,
    contractName: string,
    functionName: string,
    body: ReadOnlyRequestBody,
    opts: ReadOnlyCallOptions = {},
    ctx?: RequestContext,
  ): Promise<ReadOnlyAnswer> {
    const query = opts.tip === undefined ? '' : `?tip=${encodeURIComponent(opts.tip)}`;
    const target: Target = {
      network,
      kind: 'call-read',
      method: 'POST',
      path: `/v2/contracts/call-read/${encodeURIComponent(address)}/${encodeURIComponent(contractName)}/${encodeURIComponent(functionName)}${query}`,
    };
    const payload = JSON.stringify({ sender: body.sender, arguments: body.arguments });
    const answer = await this.#attempts.run<string>(
      target,
      payload,
      (res) => {
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
          return { type: 'ok', outcome: 'ok', value: result };
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
              `contract ${address}.${contractName} not found on ${describe(target)}: ${cause}`,
              { cause, retryable: false },
              { status: 404 },
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
            { status: 422 },
          ),
        };
      },
      (res) => {
        // A node that does not know the pinned block answers 404: another upstream may know it.
        if (opts.tip === undefined || res.status !== 404) return undefined;
        const tip = opts.tip;
        return {
          type: 'retry',
          outcome: 'not-found',
          elsewhereOnly: true,
          error: (attempts) =>
            new GatewayError(
              'UPSTREAM_API_ERROR',
              `block ${tip} is unknown to the ${network} upstream${attempts > 1 ? `s (asked ${attempts})` : ''}: ${describe(target)} answered 404`,
              { tip, retryable: false, upstreamStatus: 404, reason: reasonOf(404), attempts },
              { status: 404, upstreamText: res.body.slice(0, 500) },
            ),
        };
      },
      {
        latest: opts.tip === undefined,
        context: ctx,
        maxAttempts: opts.maxAttempts,
        budgetWaitMs: opts.budgetWaitMs,
      },
    );
    return withMeta({ result: answer.value }, answer);
  }

  async getContractInterface(
    network: Network,
    address: string,
    contractName: string,
    ctx?: RequestContext,
  ): Promise<ContractInterfaceAnswer> {
    const target: Target = {
      network,
      kind: 'interface',
      method: 'GET',
      path: `/v2/contracts/interface/${encodeURIComponent(address)}/${encodeURIComponent(contractName)}`,
    };
    const answer = await this.#attempts.run<UpstreamContractInterface>(
      target,
      undefined,
      (res) => {
        const json = parseJson(res.body);
        if (json === PARSE_FAILED) return garbage(target, res.status);
        // The whole shape, not just `functions`: a malformed ABI must not be cached.
        const problem = abiShapeProblem(json);
        if (problem !== undefined) return malformed(target, problem);
        return { type: 'ok', outcome: 'ok', value: json as UpstreamContractInterface };
      },
      (res) => {
        if (res.status === 404 && /no contract interface/i.test(res.body)) {
          return {
            type: 'final',
            outcome: 'not-found',
            error: new GatewayError(
              'UPSTREAM_API_ERROR',
              `contract ${address}.${contractName} not found on ${describe(target)}`,
              { retryable: false, upstreamStatus: 404 },
              { status: 404 },
            ),
          };
        }
        return undefined;
      },
      { context: ctx },
    );
    return withMeta({ abi: answer.value }, answer);
  }

  /**
   * Any node route (the endpoint table): the node's answer as it gave it, whatever its status,
   * except the transient ones (5xx, 429), which are retried and failed over like every read's
   * and, when every attempt failed, raised as the gateway's own error.
   */
  async send(
    network: Network,
    req: ForwardRequest,
    ctx?: RequestContext,
  ): Promise<NodeAnswer<ForwardedAnswer>> {
    const target: Target = { network, kind: 'node', method: req.method, path: req.path };
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
    const answer = await this.#attempts.run<ForwardedAnswer>(
      target,
      req.body,
      passThrough,
      (res) => (res.status === 429 || res.status >= 500 ? undefined : passThrough(res)),
      {
        latest: req.latest,
        context: ctx,
        once: req.once,
        maxAttempts: req.maxAttempts,
        budgetWaitMs: req.budgetWaitMs,
      },
    );
    return withMeta(answer.value, answer);
  }

  async getInfo(network: Network, opts: CallOptions = {}, ctx?: RequestContext): Promise<NodeInfoAnswer> {
    const target: Target = { network, kind: 'info', method: 'GET', path: '/v2/info' };
    const answer = await this.#attempts.run<UpstreamNodeInfo>(
      target,
      undefined,
      (res) => checkInfo(target, res.body, res.status),
      undefined,
      { context: ctx, maxAttempts: opts.maxAttempts, elsewhereOnly: opts.elsewhereOnly },
    );
    // The body's tip is the node's own view; it counts as a report for the upstream's lag.
    answer.upstream.stats.observeTip(answer.value.stacks_tip_height);
    this.#onInfo?.(network, answer.value);
    return withMeta({ info: answer.value }, answer);
  }

  async infoRound(network: Network, most: number): Promise<UpstreamNodeInfo[]> {
    const chosen = this.pool.upstreams(network).slice(0, Math.max(1, most));
    // A token within the budget's queue limit, like any request of the upstream.
    const verdicts = await Promise.all(chosen.map((upstream) => this.#infoOf(upstream, undefined)));
    return verdicts.flatMap((v) => (v?.type === 'ok' ? [v.value] : []));
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
  ): Promise<Verdict<UpstreamNodeInfo> | undefined> {
    if (this.#transport.closed) return undefined;
    try {
      await upstream.budget.take(maxWaitMs);
    } catch {
      return undefined;
    }
    const target: Target = { network: upstream.network, kind: 'info', method: 'GET', path: '/v2/info' };
    const verdict = await this.#attempts.once(upstream, target, (res) =>
      checkInfo(target, res.body, res.status),
    );
    if (verdict.type === 'ok') {
      upstream.stats.observeTip(verdict.value.stacks_tip_height);
      this.#onInfo?.(upstream.network, verdict.value);
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
    if (verdict.type === 'ok') return { info: verdict.value };
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

function checkInfo(target: Target, body: string, status: number): Verdict<UpstreamNodeInfo> {
  const json = parseJson(body);
  if (json === PARSE_FAILED) return garbage(target, status);
  if (!isRecord(json) || typeof json['stacks_tip_height'] !== 'number') {
    return malformed(target, 'no numeric "stacks_tip_height"');
  }
  return { type: 'ok', outcome: 'ok', value: json as UpstreamNodeInfo };
}

function withMeta<T extends object>(value: T, answer: Answered<unknown>): NodeAnswer<T> {
  return answer.tipHeight === undefined
    ? { ...value, upstream: answer.upstream.id }
    : { ...value, upstream: answer.upstream.id, tipHeight: answer.tipHeight };
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
    { status: 502 },
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
      { status: 502 },
    ),
  };
}
