/**
 * The upstream client: talks to a Stacks node RPC (Hiro's API by default) over undici, with a
 * keep-alive connection pool per upstream origin, a per-attempt timeout, retries with backoff
 * and jitter, and the per-network upstream budget (decisions.md: "Upstream: the Stacks node
 * RPC", "Errors and HTTP status", "Upstream budget and retries").
 *
 * Every attempt, retries included, first takes a token from the network's Budget. Final
 * outcomes map to GatewayErrors:
 *
 * | upstream outcome                                   | error                                        |
 * |----------------------------------------------------|----------------------------------------------|
 * | 200 {okay:true,result:"0x.."}                      | success                                      |
 * | 200 {okay:false,cause} (cause has NoSuchContract)  | UPSTREAM_API_ERROR 404 {cause, retryable:false} |
 * | 200 {okay:false,cause} (any other cause)           | UPSTREAM_API_ERROR 422 {cause, retryable:false} |
 * | ABI 404 "No contract interface data found"         | UPSTREAM_API_ERROR 404 {retryable:false, upstreamStatus:404} |
 * | other 1xx/3xx/4xx                                  | UPSTREAM_API_ERROR 502 {upstreamStatus, upstreamBody, retryable:false} |
 * | 5xx, still after the retries                       | UPSTREAM_API_ERROR 502 {upstreamStatus, retryable:true, attempts} |
 * | 429, still after the retries                       | RATE_LIMIT_EXCEEDED 429 {retryAfter, ...} + Retry-After |
 * | timeout on the last attempt                        | TIMEOUT 504 {timeoutMs, retryable:true, attempts} |
 * | connection refused/reset, still after the retries  | UPSTREAM_API_ERROR 502 {cause:'ECONNREFUSED'.., retryable:true, attempts} |
 * | 200 whose body is not JSON                         | UPSTREAM_API_ERROR 502 {reason:'malformed', retryable:true}, not retried |
 * | 200 JSON of the wrong shape (non-hex result, ...)  | UPSTREAM_API_ERROR 502 {reason:'malformed', retryable:false} |
 * | no budget token within the queue timeout           | RATE_LIMIT_EXCEEDED 429 (from the Budget)     |
 *
 * Retried: timeouts, connection errors, 5xx and 429 (decisions.md). Everything else is final.
 * A 200 whose body is not JSON is *not* retried here: the spec's retry list is exhaustive and
 * a deterministic garbage answer would burn the whole budget; but it is marked retryable for
 * clients, because in practice it is an intermediary (CDN/proxy) glitch that a later request
 * survives. A 200 with well-formed JSON of the wrong shape points at an API incompatibility,
 * so it is neither retried nor marked retryable.
 *
 * Every error message names the network and the upstream method and path.
 */
import { type Dispatcher, Pool } from 'undici';
import type { Config, Network } from '../config.js';
import { GatewayError } from '../errors.js';
import { parseRetryAfterMs, retryDelayMs, toRetryAfterSeconds } from './retry.js';
import type { Budget } from './token-bucket.js';

export type UpstreamKind = 'call-read' | 'interface' | 'info';

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
  | 'too-large';

export interface AttemptEvent {
  network: Network;
  kind: UpstreamKind;
  outcome: AttemptOutcome;
  /** Time of the HTTP exchange itself (budget wait excluded), ms. */
  durationMs: number;
  /** 0 for the first attempt, 1 for the first retry, ... */
  attempt: number;
  /** HTTP status when a response arrived. */
  status?: number;
}

/** The pino methods the client uses (a pino Logger fits). */
export interface UpstreamLogger {
  debug(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

export type UpstreamConfig = Pick<
  Config,
  | 'upstreamUrls'
  | 'stacksApiKey'
  | 'upstreamTimeoutMs'
  | 'upstreamRetries'
  | 'upstreamRetryBaseMs'
  | 'upstreamRetryAfterCapMs'
>;

export interface StacksNodeClientOptions {
  config: UpstreamConfig;
  /** One budget per network; every attempt takes a token from its network's budget. */
  budgets: Record<Network, Budget>;
  logger?: UpstreamLogger;
  /** Called after every HTTP attempt (metrics hook). Must not throw. */
  onAttempt?: (event: AttemptEvent) => void;
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
}

export interface ReadOnlyCallBody {
  /** Principal used as tx-sender. */
  sender: string;
  /** Serialized Clarity values, 0x hex. */
  arguments: string[];
}

export interface ReadOnlyResult {
  /** Serialized Clarity value, 0x hex. */
  result: string;
  /** X-Canonical-Stacks-Tip-Height of the answer, when the node sent it. */
  tipHeight?: number;
}

/** The node's ABI document; only `functions` is checked here, the rest passes through. */
export interface UpstreamContractInterface {
  functions: unknown[];
  [key: string]: unknown;
}

/** The node's /v2/info answer; only stacks_tip_height is checked. */
export interface UpstreamNodeInfo {
  stacks_tip_height: number;
  stacks_tip?: string;
  stacks_tip_consensus_hash?: string;
  [key: string]: unknown;
}

const TIP_HEIGHT_HEADER = 'x-canonical-stacks-tip-height';
const UPSTREAM_BODY_LIMIT = 500;
const HEX_RESULT = /^0x(?:[0-9a-fA-F]{2})+$/;

/** Codes of transport failures that are worth another attempt. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_RES_CONTENT_LENGTH_MISMATCH',
]);
const TIMEOUT_CODES = new Set([
  'ETIMEDOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

type RawResult =
  | { type: 'response'; status: number; headers: Record<string, string | string[] | undefined>; body: string }
  | { type: 'timeout' }
  | { type: 'too-large'; status: number }
  | { type: 'error'; code: string; retryable: boolean; error: unknown };

type Verdict<T> =
  | { type: 'ok'; value: T; outcome: AttemptOutcome }
  | { type: 'final'; error: GatewayError; outcome: AttemptOutcome }
  | {
      type: 'retry';
      outcome: AttemptOutcome;
      retryAfterMs?: number;
      /** The error to answer with if this was the last attempt. */
      error: (attempts: number) => GatewayError;
    };

interface Target {
  network: Network;
  kind: UpstreamKind;
  method: 'GET' | 'POST';
  path: string;
}

const TIMEOUT_REASON = Symbol('upstream attempt timeout');
const CLOSE_REASON = Symbol('upstream client closed');
const CLIENT_CLOSED = 'CLIENT_CLOSED';

export class StacksNodeClient {
  private readonly config: UpstreamConfig;
  private readonly budgets: Record<Network, Budget>;
  private readonly logger: UpstreamLogger | undefined;
  private readonly onAttempt: ((event: AttemptEvent) => void) | undefined;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly random: () => number;
  private readonly now: () => number;
  private readonly injected: Dispatcher | undefined;
  private readonly pools = new Map<string, Pool>();
  private readonly connectionsPerOrigin: number;
  private readonly maxBackoffMs: number;
  private readonly maxResponseBytes: number;
  private readonly inFlight = new Set<AbortController>();
  private closed = false;

  constructor(options: StacksNodeClientOptions) {
    this.config = options.config;
    this.budgets = options.budgets;
    this.logger = options.logger;
    this.onAttempt = options.onAttempt;
    this.sleep = options.sleep ?? defaultSleep;
    this.random = options.random ?? Math.random;
    this.now = options.now ?? Date.now;
    this.injected = options.dispatcher;
    this.connectionsPerOrigin = options.connectionsPerOrigin ?? 16;
    this.maxBackoffMs = options.maxBackoffMs ?? 30_000;
    this.maxResponseBytes = options.maxResponseBytes ?? 16 * 1024 * 1024;
  }

  /** POST /v2/contracts/call-read/{address}/{contract}/{function}[?tip=] */
  async callReadOnly(
    network: Network,
    address: string,
    contractName: string,
    functionName: string,
    body: ReadOnlyCallBody,
    opts: { tip?: string } = {},
  ): Promise<ReadOnlyResult> {
    const query = opts.tip === undefined ? '' : `?tip=${encodeURIComponent(opts.tip)}`;
    const target: Target = {
      network,
      kind: 'call-read',
      method: 'POST',
      path: `/v2/contracts/call-read/${encodeURIComponent(address)}/${encodeURIComponent(contractName)}/${encodeURIComponent(functionName)}${query}`,
    };
    const payload = JSON.stringify({ sender: body.sender, arguments: body.arguments });
    return this.execute<ReadOnlyResult>(target, payload, (res) => {
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
        const tipHeight = readTipHeight(res.headers);
        return {
          type: 'ok',
          outcome: 'ok',
          value: tipHeight === undefined ? { result } : { result, tipHeight },
        };
      }
      const cause = typeof json['cause'] === 'string' ? json['cause'] : JSON.stringify(json['cause'] ?? null);
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
    });
  }

  /** GET /v2/contracts/interface/{address}/{contract}: the contract's ABI, parsed. */
  async getContractInterface(
    network: Network,
    address: string,
    contractName: string,
  ): Promise<UpstreamContractInterface> {
    const target: Target = {
      network,
      kind: 'interface',
      method: 'GET',
      path: `/v2/contracts/interface/${encodeURIComponent(address)}/${encodeURIComponent(contractName)}`,
    };
    return this.execute<UpstreamContractInterface>(
      target,
      undefined,
      (res) => {
        const json = parseJson(res.body);
        if (json === PARSE_FAILED) return garbage(target, res.status);
        if (!isRecord(json) || !Array.isArray(json['functions'])) {
          return malformed(target, 'the ABI has no "functions" array');
        }
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
    );
  }

  /** GET /v2/info: the node's view of the chain tip. */
  async getInfo(network: Network): Promise<UpstreamNodeInfo> {
    const target: Target = { network, kind: 'info', method: 'GET', path: '/v2/info' };
    return this.execute<UpstreamNodeInfo>(target, undefined, (res) => {
      const json = parseJson(res.body);
      if (json === PARSE_FAILED) return garbage(target, res.status);
      if (!isRecord(json) || typeof json['stacks_tip_height'] !== 'number') {
        return malformed(target, 'no numeric "stacks_tip_height"');
      }
      return { type: 'ok', outcome: 'ok', value: json as UpstreamNodeInfo };
    });
  }

  /**
   * Stop: later calls fail, in-flight attempts are aborted (UPSTREAM_API_ERROR 502, retryable),
   * owned pools are closed. The budgets belong to the caller and are left open. Idempotent.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const controller of this.inFlight) controller.abort(CLOSE_REASON);
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map((p) => p.destroy().catch(() => undefined)));
  }

  // --- the attempt loop -------------------------------------------------------------------

  private async execute<T>(
    target: Target,
    body: string | undefined,
    onSuccess: (res: Extract<RawResult, { type: 'response' }>) => Verdict<T>,
    onSpecialStatus?: (res: Extract<RawResult, { type: 'response' }>) => Verdict<T> | undefined,
  ): Promise<T> {
    const budget = this.budgets[target.network];
    const retries = this.config.upstreamRetries;
    for (let attempt = 0; ; attempt++) {
      if (this.closed) throw closedError(target);
      try {
        await budget.take();
      } catch (err) {
        throw withContext(err, target, attempt);
      }
      if (this.closed) throw closedError(target);

      const started = performance.now();
      const raw = await this.send(target, body);
      const durationMs = performance.now() - started;
      const verdict = this.interpret(target, raw, onSuccess, onSpecialStatus);
      const status = raw.type === 'response' || raw.type === 'too-large' ? raw.status : undefined;
      this.emit({
        network: target.network,
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
      this.logger?.debug({ ...logFields, durationMs: Math.round(durationMs) }, 'upstream attempt');

      if (verdict.type === 'ok') return verdict.value;
      if (verdict.type === 'final') throw verdict.error;
      if (attempt >= retries) throw verdict.error(attempt + 1);

      const delayMs = retryDelayMs(attempt, verdict.retryAfterMs, {
        baseMs: this.config.upstreamRetryBaseMs,
        maxBackoffMs: this.maxBackoffMs,
        retryAfterCapMs: this.config.upstreamRetryAfterCapMs,
        random: this.random,
      });
      this.logger?.warn({ ...logFields, delayMs }, 'upstream attempt failed, retrying');
      await this.sleep(delayMs);
    }
  }

  private interpret<T>(
    target: Target,
    raw: RawResult,
    onSuccess: (res: Extract<RawResult, { type: 'response' }>) => Verdict<T>,
    onSpecialStatus?: (res: Extract<RawResult, { type: 'response' }>) => Verdict<T> | undefined,
  ): Verdict<T> {
    const timeoutMs = this.config.upstreamTimeoutMs;
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
              { status: 504 },
            ),
        };
      case 'too-large':
        return {
          type: 'final',
          outcome: 'too-large',
          error: new GatewayError(
            'UPSTREAM_API_ERROR',
            `upstream ${describe(target)} answered more than ${this.maxResponseBytes} bytes`,
            { retryable: false, upstreamStatus: raw.status, reason: 'too-large' },
            { status: 502 },
          ),
        };
      case 'error': {
        if (raw.code === CLIENT_CLOSED)
          return { type: 'final', outcome: 'connection-error', error: closedError(target) };
        const make = (attempts: number) =>
          new GatewayError(
            'UPSTREAM_API_ERROR',
            `upstream ${describe(target)} failed: ${raw.code}${attempts > 1 ? ` (after ${attempts} attempts)` : ''}`,
            { cause: raw.code, retryable: raw.retryable, attempts },
            { status: 502, cause: raw.error },
          );
        return raw.retryable
          ? { type: 'retry', outcome: 'connection-error', error: make }
          : { type: 'final', outcome: 'connection-error', error: make(1) };
      }
      case 'response':
        break;
    }

    const { status } = raw;
    if (status >= 200 && status < 300) return onSuccess(raw);
    const special = onSpecialStatus?.(raw);
    if (special !== undefined) return special;

    if (status === 429) {
      const retryAfterMs = parseRetryAfterMs(raw.headers['retry-after'], this.now());
      return {
        type: 'retry',
        outcome: 'rate-limited',
        ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
        error: (attempts) => {
          const retryAfter = toRetryAfterSeconds(
            retryAfterMs ?? this.config.upstreamRetryBaseMs * 2 ** Math.max(0, attempts - 1),
          );
          return new GatewayError(
            'RATE_LIMIT_EXCEEDED',
            `upstream ${describe(target)} is rate limiting (429 after ${attempts} attempts)`,
            { retryAfter, retryable: true, attempts, upstreamStatus: 429 },
            { status: 429, headers: { 'Retry-After': String(retryAfter) } },
          );
        },
      };
    }
    if (status >= 500) {
      const retryAfterMs =
        status === 503 ? parseRetryAfterMs(raw.headers['retry-after'], this.now()) : undefined;
      return {
        type: 'retry',
        outcome: 'server-error',
        ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
        error: (attempts) =>
          new GatewayError(
            'UPSTREAM_API_ERROR',
            `upstream ${describe(target)} answered ${status} (after ${attempts} attempts)`,
            { retryable: true, attempts, upstreamStatus: status, upstreamBody: truncate(raw.body) },
            { status: 502 },
          ),
      };
    }
    return {
      type: 'final',
      outcome: 'client-error',
      error: new GatewayError(
        'UPSTREAM_API_ERROR',
        `upstream ${describe(target)} answered ${status}`,
        { retryable: false, upstreamStatus: status, upstreamBody: truncate(raw.body) },
        { status: 502 },
      ),
    };
  }

  // --- one HTTP exchange --------------------------------------------------------------------

  private async send(target: Target, body: string | undefined): Promise<RawResult> {
    const base = new URL(this.config.upstreamUrls[target.network]);
    const prefix = base.pathname.replace(/\/+$/, '');
    const headers: Record<string, string> = {
      accept: 'application/json',
      'user-agent': 'clarity-cache',
    };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (this.config.stacksApiKey !== undefined) headers['x-api-key'] = this.config.stacksApiKey;

    const timeoutMs = this.config.upstreamTimeoutMs;
    const controller = new AbortController();
    this.inFlight.add(controller);
    const timer = setTimeout(() => controller.abort(TIMEOUT_REASON), timeoutMs);
    timer.unref();
    try {
      const res = await this.dispatcherFor(base.origin).request({
        origin: base.origin,
        path: prefix + target.path,
        method: target.method,
        headers,
        body: body ?? null,
        signal: controller.signal,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of res.body) {
        const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
        size += buf.length;
        if (size > this.maxResponseBytes) {
          res.body.destroy();
          return { type: 'too-large', status: res.statusCode };
        }
        chunks.push(buf);
      }
      return {
        type: 'response',
        status: res.statusCode,
        headers: res.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
    } catch (err) {
      const reason: unknown = controller.signal.aborted ? controller.signal.reason : undefined;
      if (reason === CLOSE_REASON || (this.closed && reason === undefined)) {
        return { type: 'error', code: CLIENT_CLOSED, retryable: false, error: err };
      }
      if (reason === TIMEOUT_REASON) return { type: 'timeout' };
      const code = errorCode(err);
      if (TIMEOUT_CODES.has(code)) return { type: 'timeout' };
      return { type: 'error', code, retryable: CONNECTION_CODES.has(code), error: err };
    } finally {
      clearTimeout(timer);
      this.inFlight.delete(controller);
    }
  }

  private dispatcherFor(origin: string): Dispatcher {
    if (this.injected !== undefined) return this.injected;
    let pool = this.pools.get(origin);
    if (pool === undefined) {
      const timeoutMs = this.config.upstreamTimeoutMs;
      pool = new Pool(origin, {
        connections: this.connectionsPerOrigin,
        pipelining: 1,
        keepAliveTimeout: 30_000,
        keepAliveMaxTimeout: 60_000,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        connect: { timeout: timeoutMs },
      });
      this.pools.set(origin, pool);
    }
    return pool;
  }

  private emit(event: AttemptEvent): void {
    if (this.onAttempt === undefined) return;
    try {
      this.onAttempt(event);
    } catch (err) {
      this.logger?.warn({ err }, 'onAttempt hook threw');
    }
  }
}

// --- helpers ----------------------------------------------------------------------------------

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

function describe(target: Target): string {
  return `${target.network} ${target.method} ${target.path}`;
}

function truncate(body: string): string {
  return body.length <= UPSTREAM_BODY_LIMIT ? body : `${body.slice(0, UPSTREAM_BODY_LIMIT)}…`;
}

function readTipHeight(headers: Record<string, string | string[] | undefined>): number | undefined {
  const raw = headers[TIP_HEIGHT_HEADER];
  const text = Array.isArray(raw) ? raw[0] : raw;
  if (text === undefined || !/^\d+$/.test(text.trim())) return undefined;
  const n = Number(text.trim());
  return Number.isSafeInteger(n) ? n : undefined;
}

/** A 200 whose body is not JSON: see the module comment for why it is retryable but not retried. */
function garbage(target: Target, status: number): Verdict<never> {
  return {
    type: 'final',
    outcome: 'malformed',
    error: new GatewayError(
      'UPSTREAM_API_ERROR',
      `upstream ${describe(target)} answered ${status} with a body that is not JSON (malformed)`,
      { retryable: true, upstreamStatus: status, reason: 'malformed' },
      { status: 502 },
    ),
  };
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

function closedError(target: Target): GatewayError {
  return new GatewayError(
    'UPSTREAM_API_ERROR',
    `upstream client is closed (shutting down); ${describe(target)} not sent`,
    { retryable: true, reason: 'closed' },
    { status: 502 },
  );
}

/** Budget errors get the network and path into their message; details and status are kept. */
function withContext(err: unknown, target: Target, attempt: number): unknown {
  if (!(err instanceof GatewayError)) return err;
  const details = attempt > 0 ? { ...err.details, attempts: attempt } : err.details;
  return new GatewayError(err.code, `${err.message} (${describe(target)})`, details, {
    status: err.status,
    ...(err.headers === undefined ? {} : { headers: err.headers }),
    cause: err,
  });
}

/** The most specific code of an error or of its causes: ECONNREFUSED beats UND_ERR_SOCKET. */
function errorCode(err: unknown): string {
  const codes: string[] = [];
  let cur: unknown = err;
  for (let depth = 0; depth < 5 && cur !== null && typeof cur === 'object'; depth++) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === 'string') codes.push(code);
    // AggregateError (happy eyeballs: one error per address tried)
    const errors = (cur as { errors?: unknown }).errors;
    if (Array.isArray(errors)) {
      for (const e of errors) {
        const c = (e as { code?: unknown } | null)?.code;
        if (typeof c === 'string') codes.push(c);
      }
    }
    cur = (cur as { cause?: unknown }).cause;
  }
  const system = codes.find((c) => c.startsWith('E'));
  return system ?? codes[0] ?? (err instanceof Error ? err.name : 'UNKNOWN');
}

function defaultSleep(ms: number): Promise<void> {
  return new Promise((resolve) => {
    setTimeout(resolve, ms);
  });
}
