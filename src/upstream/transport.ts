/**
 * One HTTP exchange with an upstream, over undici: a keep-alive connection pool per origin,
 * a timeout per exchange (headers and body included), a limit on the body size, and abort of
 * everything in flight on close. It never throws: every way an exchange can end is a
 * RawResult, and transport failures carry the most specific error code found, so the caller
 * can tell a refused connection (worth another attempt) from a bug (not).
 *
 * It knows nothing of Stacks, budgets or retries: outcomes.ts says what a RawResult means.
 */
import { type Dispatcher, Pool } from 'undici';

/** Where to send: the parts of an upstream the transport needs (pool.ts's Upstream fits). */
export interface Destination {
  /** scheme://host[:port], no credentials. */
  readonly origin: string;
  /** The base URL's path without its trailing slash ("" for a bare origin). */
  readonly pathPrefix: string;
  /** Sent as x-api-key when set. */
  readonly apiKey: string | undefined;
  /**
   * The base URL's query without '?' ("" for none): some providers take their key there, so
   * it is sent with every request, and never printed (labels carry origin and path only).
   */
  readonly query?: string;
}

/**
 * What is sent: a JSON text (the gateway's own requests), or bytes with their content type as
 * a client gave them (a forwarded node route, e.g. a broadcast transaction).
 */
export type OutgoingBody = string | { readonly data: string | Uint8Array; readonly contentType: string };

export interface HttpResponse {
  readonly type: 'response';
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

export type RawResult =
  | HttpResponse
  | { readonly type: 'timeout' }
  | { readonly type: 'too-large'; readonly status: number }
  | { readonly type: 'error'; readonly code: string; readonly retryable: boolean; readonly error: unknown };

/** The code of an exchange cut short because the transport was closed. */
export const CLIENT_CLOSED = 'CLIENT_CLOSED';
/** The code of an exchange its caller aborted (the losing side of a hedge). */
export const ABORTED = 'ABORTED';

export interface TransportOptions {
  /** Longest one exchange may take: connect, headers and body (UPSTREAM_TIMEOUT_MS). */
  readonly timeoutMs: number;
  /**
   * Use this dispatcher (e.g. an undici MockAgent) for every origin instead of owning a Pool
   * per origin. The transport does not close an injected dispatcher.
   */
  readonly dispatcher?: Dispatcher;
  /** Sockets per upstream origin (default 16). */
  readonly connectionsPerOrigin?: number;
  /** Largest upstream body accepted (default 16 MiB). */
  readonly maxResponseBytes?: number;
}

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

const TIMEOUT_REASON = Symbol('upstream attempt timeout');
const CLOSE_REASON = Symbol('upstream client closed');
const ABORT_REASON = Symbol('upstream attempt aborted by its caller');

export class Transport {
  readonly timeoutMs: number;
  readonly maxResponseBytes: number;
  readonly #injected: Dispatcher | undefined;
  readonly #connectionsPerOrigin: number;
  readonly #pools = new Map<string, Pool>();
  readonly #inFlight = new Set<AbortController>();
  /** Aborted on close(): what waits between attempts (a retry's backoff) stops waiting. */
  readonly #closing = new AbortController();
  #closed = false;
  /** close() ran (drain() alone leaves exchanges and pools alone). */
  #shut = false;

  constructor(options: TransportOptions) {
    this.timeoutMs = options.timeoutMs;
    this.maxResponseBytes = options.maxResponseBytes ?? 16 * 1024 * 1024;
    this.#injected = options.dispatcher;
    this.#connectionsPerOrigin = options.connectionsPerOrigin ?? 16;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Aborted when the transport closes. */
  get closedSignal(): AbortSignal {
    return this.#closing.signal;
  }

  async send(
    to: Destination,
    method: 'GET' | 'POST',
    path: string,
    body: OutgoingBody | undefined,
    signal?: AbortSignal,
  ): Promise<RawResult> {
    const headers: Record<string, string> = {
      accept: 'application/json',
      'user-agent': 'clarity-cache',
    };
    if (body !== undefined) {
      headers['content-type'] = typeof body === 'string' ? 'application/json' : body.contentType;
    }
    if (to.apiKey !== undefined) headers['x-api-key'] = to.apiKey;

    const timeoutMs = this.timeoutMs;
    const controller = new AbortController();
    this.#inFlight.add(controller);
    const timer = setTimeout(() => controller.abort(TIMEOUT_REASON), timeoutMs);
    timer.unref();
    const onAbort = (): void => controller.abort(ABORT_REASON);
    if (signal !== undefined) {
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    }
    try {
      const res = await this.#dispatcherFor(to.origin).request({
        origin: to.origin,
        path: withQuery(to.pathPrefix + path, to.query),
        method,
        headers,
        body: body === undefined ? null : typeof body === 'string' ? body : body.data,
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
      if (reason === CLOSE_REASON || (this.#closed && reason === undefined)) {
        return { type: 'error', code: CLIENT_CLOSED, retryable: false, error: err };
      }
      if (reason === TIMEOUT_REASON) return { type: 'timeout' };
      if (reason === ABORT_REASON) return { type: 'error', code: ABORTED, retryable: false, error: err };
      const code = errorCode(err);
      if (TIMEOUT_CODES.has(code)) return { type: 'timeout' };
      return { type: 'error', code, retryable: CONNECTION_CODES.has(code), error: err };
    } finally {
      signal?.removeEventListener('abort', onAbort);
      clearTimeout(timer);
      this.#inFlight.delete(controller);
    }
  }

  /**
   * Start shutting down: closed from now on (no new exchange, a retry's backoff ends), but
   * exchanges under way may still finish until close(). Idempotent.
   */
  drain(): void {
    this.#closed = true;
    this.#closing.abort(CLOSE_REASON);
  }

  /** Abort what is in flight and close the owned pools. Idempotent. */
  async close(): Promise<void> {
    if (this.#shut) return;
    this.#shut = true;
    this.drain();
    for (const controller of this.#inFlight) controller.abort(CLOSE_REASON);
    const pools = [...this.#pools.values()];
    this.#pools.clear();
    await Promise.all(pools.map((p) => p.destroy().catch(() => undefined)));
  }

  #dispatcherFor(origin: string): Dispatcher {
    if (this.#injected !== undefined) return this.#injected;
    let pool = this.#pools.get(origin);
    if (pool === undefined) {
      const timeoutMs = this.timeoutMs;
      pool = new Pool(origin, {
        connections: this.#connectionsPerOrigin,
        pipelining: 1,
        keepAliveTimeout: 30_000,
        keepAliveMaxTimeout: 60_000,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        connect: { timeout: timeoutMs },
      });
      this.#pools.set(origin, pool);
    }
    return pool;
  }
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

/** A request path with the upstream's own query appended (after the request's own, if any). */
function withQuery(path: string, query: string | undefined): string {
  if (query === undefined || query === '') return path;
  return `${path}${path.includes('?') ? '&' : '?'}${query}`;
}
