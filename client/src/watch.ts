/**
 * Watched reads: POST /subscriptions, then the subscription's Server-Sent Events stream read
 * with fetch (sse.ts), for as long as the caller wants it.
 *
 * The stream is kept open as EventSource would keep it, with what EventSource cannot do:
 * - a dropped connection (an error, the end of the body, or nothing at all received for
 *   `idleTimeoutMs`, although the gateway sends a comment at least every 15 s) is reopened
 *   after the server's `retry` time (2 s until it says), naming the last block seen in
 *   Last-Event-ID so that only the reads changed since come; failed attempts in a row wait
 *   longer each time (jittered, up to the retry policy's maxDelayMs);
 * - `event: error` ends the watch for NOT_FOUND (the subscription was deleted) and reconnects
 *   for the others (SLOW_CONSUMER: the gateway dropped a reader that fell behind);
 * - a 404 when reopening means the gateway forgot the subscription (restarted without
 *   Redis): it is made again with a new POST and the stream resumes from the same block;
 * - an answer that no retry can change (401, 400, a 404 right after subscribing, a 200 that is
 *   not an event stream) ends the watch through onError.
 *
 * When the caller ends it (close() or the signal), the subscription is deleted, best effort.
 */
import { ClarityCacheError, errorFromRecord, NetworkError, NotFoundError } from './errors.js';
import { backoffDelayMs, parseRetryAfterMs } from './retry.js';
import { linkSignals, sleepUnlessAborted } from './signals.js';
import { createSseParser, type SseEvent } from './sse.js';
import { describeFailure, envelopeError, isEnvelope, send, type TransportOptions } from './transport.js';
import type {
  ClientResponse,
  Subscription,
  WatchedError,
  WatchedValue,
  WatchRead,
  WatchReset,
  WatchValuesEvent,
} from './types.js';

export interface WatchOptions {
  /**
   * Each `values` event, in order. A returned promise is awaited before the next event is
   * read, so a slow consumer slows the stream (the gateway may then drop it: the watch
   * reconnects and resumes).
   */
  readonly onValues: (event: WatchValuesEvent) => void | Promise<void>;
  /** The error that ended the watch; called at most once, and then `done` resolves. */
  readonly onError: (error: ClarityCacheError) => void;
  /** The gateway did not know the block named to resume from: every read's value follows. */
  readonly onReset?: (reset: WatchReset) => void | Promise<void>;
  /** Before each wait to reconnect (for logging): why, and how long. */
  readonly onReconnect?: (event: WatchReconnectEvent) => void;
  /** Aborting it ends the watch, as close() does. */
  readonly signal?: AbortSignal;
  /** Resume after this block (a `values` event's id): only the reads changed since come first. */
  readonly lastEventId?: string;
  /** Reconnect when nothing at all arrives for this long, in ms (default 45 000). */
  readonly idleTimeoutMs?: number;
}

export interface WatchReconnectEvent {
  /** 1 for the first reconnection after the stream last delivered values. */
  readonly attempt: number;
  readonly delayMs: number;
  /** What the reconnection names in Last-Event-ID, if anything. */
  readonly lastEventId: string | undefined;
  /** Why: the failed connection, the refusal, or the gateway's `error` event (e.g. SLOW_CONSUMER). */
  readonly cause: ClarityCacheError;
}

export interface WatchHandle {
  /** The subscription's id; a new one after the watch had to subscribe again. */
  readonly id: string;
  /** The id of the last `values` event delivered: pass it as `lastEventId` to resume later. */
  readonly lastEventId: string | undefined;
  /**
   * Resolves when the watch has ended: closed, aborted, or after onError. Rejects only with an
   * error thrown by one of the callbacks (which also ends the watch).
   */
  readonly done: Promise<void>;
  /** End the watch and delete its subscription; resolves once it has ended. */
  close(): Promise<void>;
}

const DEFAULT_RETRY_MS = 2_000;
const DEFAULT_IDLE_TIMEOUT_MS = 45_000;
/** The unsubscription when a watch ends is a courtesy: it never holds the ending up for long. */
const UNSUBSCRIBE_TIMEOUT_MS = 3_000;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

export function subscribeRequest(
  transport: TransportOptions,
  reads: readonly WatchRead[],
  signal?: AbortSignal,
): Promise<ClientResponse<Subscription>> {
  return send(
    transport,
    'POST',
    '/subscriptions',
    { reads: reads.map((r) => ({ ...r, functionArgs: r.functionArgs ?? [] })) },
    signal,
  );
}

export function unsubscribeRequest(
  transport: TransportOptions,
  id: string,
  signal?: AbortSignal,
): Promise<ClientResponse<unknown>> {
  return send(transport, 'DELETE', `/subscriptions/${encodeURIComponent(id)}`, undefined, signal);
}

/** The subscription, or the error of its answer; an answer without an id is not the gateway's. */
export async function subscribe(
  transport: TransportOptions,
  reads: readonly WatchRead[],
  signal?: AbortSignal,
): Promise<Subscription> {
  const response = await subscribeRequest(transport, reads, signal);
  if (!response.envelope.success) throw envelopeError(response);
  const data: unknown = response.envelope.data;
  if (!isObject(data) || typeof data['id'] !== 'string' || data['id'] === '') {
    throw new NetworkError({
      code: 'NETWORK_ERROR',
      status: response.status,
      message: `POST /subscriptions answered ${response.status} without a subscription id: is ${JSON.stringify(transport.baseUrl)} the gateway's base URL?`,
    });
  }
  return data as unknown as Subscription;
}

/** What one connection (or one subscription attempt) came to. */
type Outcome =
  | { readonly kind: 'stopped' }
  | { readonly kind: 'retry'; readonly cause: ClarityCacheError; readonly retryAfterMs?: number }
  /** A 404 for the events: the subscription is unknown to the gateway. */
  | { readonly kind: 'gone'; readonly error: ClarityCacheError }
  | { readonly kind: 'fatal'; readonly error: ClarityCacheError };

/** Marks an abort of a connection by one of the watch's own timers. */
class ConnectionTimeout {
  constructor(readonly message: string) {}
}

/** 408, 429, 5xx and no answer at all: worth another try later. */
const isTransient = (status: number): boolean =>
  status === 0 || status === 408 || status === 429 || status >= 500;

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function valuesEvent(event: SseEvent): WatchValuesEvent | undefined {
  const data = parseJson(event.data);
  if (!isObject(data) || !Array.isArray(data['values'])) return undefined;
  const { tipHeight, indexBlockHash, values } = data;
  if (typeof tipHeight !== 'number' || typeof indexBlockHash !== 'string') return undefined;
  if (!values.every((v) => isObject(v) && typeof v['index'] === 'number' && ('value' in v || 'error' in v))) {
    return undefined;
  }
  return { id: event.id, tipHeight, indexBlockHash, values: values as Array<WatchedValue | WatchedError> };
}

export async function watch(
  transport: TransportOptions,
  reads: readonly WatchRead[],
  options: WatchOptions,
): Promise<WatchHandle> {
  if (typeof options?.onValues !== 'function' || typeof options.onError !== 'function') {
    throw new TypeError('watch: options.onValues and options.onError are required');
  }
  const idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  const stop = linkSignals([options.signal]);
  let subscription: Subscription;
  try {
    subscription = await subscribe(transport, reads, stop.signal);
  } catch (err) {
    stop.release();
    throw err;
  }

  let lastEventId = options.lastEventId === '' ? undefined : options.lastEventId;
  let retryMs = DEFAULT_RETRY_MS;
  /** Attempts that failed since values last came: the backoff's exponent. */
  let failures = 0;
  /** The current subscription's stream was opened at least once: a 404 now means forgotten. */
  let streamed = false;
  const base = transport.baseUrl.replace(/\/+$/, '');

  const delayFor = (retryAfterMs: number | undefined): number => {
    const cap = Math.max(retryMs, transport.policy.maxDelayMs);
    const backoff =
      failures === 0 ? retryMs : Math.max(retryMs, backoffDelayMs(failures, retryMs, Math.random, cap));
    return retryAfterMs === undefined ? backoff : Math.max(backoff, Math.min(retryAfterMs, cap));
  };

  /** One events stream, from the request to its end; each event handled before the next read. */
  const connect = async (): Promise<Outcome> => {
    const url = `${base}/subscriptions/${encodeURIComponent(subscription.id)}/events`;
    const conn = linkSignals([stop.signal]);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const arm = (ms: number, message: string) => {
      clearTimeout(timer);
      timer = setTimeout(() => conn.abort(new ConnectionTimeout(message)), ms);
    };
    const failed = (err: unknown): Outcome => {
      if (stop.signal.aborted) return { kind: 'stopped' };
      const reason: unknown = conn.signal.reason;
      const message =
        reason instanceof ConnectionTimeout
          ? reason.message
          : `GET ${url} failed: ${describeFailure(err, transport.timeoutMs)}`;
      return {
        kind: 'retry',
        cause: new NetworkError({ code: 'NETWORK_ERROR', status: 0, message, cause: err }),
      };
    };
    try {
      arm(transport.timeoutMs, `GET ${url}: no answer within ${transport.timeoutMs} ms`);
      let res: Response;
      try {
        res = await transport.fetch(url, {
          method: 'GET',
          headers: {
            ...transport.headers,
            accept: 'text/event-stream',
            ...(lastEventId === undefined ? {} : { 'last-event-id': lastEventId }),
          },
          signal: conn.signal,
        });
      } catch (err) {
        return failed(err);
      }
      // A refusal's body is still read under the answer's time limit.
      if (res.status !== 200) return await refused(res, url);
      clearTimeout(timer);
      const type = res.headers.get('content-type') ?? '';
      if (!/^text\/event-stream\b/i.test(type) || res.body === null) {
        return {
          kind: 'fatal',
          error: new NetworkError({
            code: 'NETWORK_ERROR',
            status: res.status,
            message: `GET ${url} answered ${res.status} with ${type === '' ? 'no content type' : type}, not an event stream`,
          }),
        };
      }
      streamed = true;
      const pending: SseEvent[] = [];
      const parser = createSseParser({
        onEvent: (event) => pending.push(event),
        onRetry: (ms) => {
          retryMs = ms;
        },
      });
      const reader = res.body.getReader();
      for (;;) {
        arm(idleTimeoutMs, `GET ${url}: nothing received for ${idleTimeoutMs} ms`);
        let chunk: Awaited<ReturnType<typeof reader.read>>;
        try {
          chunk = await reader.read();
        } catch (err) {
          return failed(err);
        }
        clearTimeout(timer);
        if (chunk.done) {
          return {
            kind: 'retry',
            cause: new NetworkError({
              code: 'NETWORK_ERROR',
              status: 0,
              message: `GET ${url}: the stream ended`,
            }),
          };
        }
        parser.bytes(chunk.value);
        for (let event = pending.shift(); event !== undefined; event = pending.shift()) {
          const outcome = await handle(event, url);
          if (outcome !== undefined) return outcome;
          if (stop.signal.aborted) return { kind: 'stopped' };
        }
      }
    } finally {
      clearTimeout(timer);
      // Ends the body if it is still open (an error event, a callback that threw).
      conn.abort();
    }
  };

  /** A refusal of the events request: 404 forgotten, transient, or final. */
  const refused = async (res: Response, url: string): Promise<Outcome> => {
    const retryAfterMs = parseRetryAfterMs(res.headers.get('retry-after') ?? undefined, Date.now());
    const body = parseJson(await res.text().catch(() => ''));
    const error = isEnvelope(body)
      ? body.success
        ? new NetworkError({
            code: 'NETWORK_ERROR',
            status: res.status,
            message: `GET ${url} answered ${res.status}`,
          })
        : errorFromRecord({ ...body.error, status: res.status })
      : new NetworkError({
          code: 'NETWORK_ERROR',
          status: res.status,
          message: `GET ${url} answered ${res.status} without a JSON envelope`,
        });
    if (res.status === 404 && error.code === 'NOT_FOUND') return { kind: 'gone', error };
    if (isTransient(res.status)) {
      return { kind: 'retry', cause: error, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) };
    }
    return { kind: 'fatal', error };
  };

  /** One event: undefined to go on reading, else how the connection ends. */
  const handle = async (event: SseEvent, url: string): Promise<Outcome | undefined> => {
    switch (event.type) {
      case 'values': {
        const values = valuesEvent(event);
        if (values === undefined) {
          return {
            kind: 'fatal',
            error: new NetworkError({
              code: 'NETWORK_ERROR',
              status: 200,
              message: `GET ${url} sent a values event that is not {tipHeight, indexBlockHash, values}: ${event.data.slice(0, 200)}`,
            }),
          };
        }
        await options.onValues(values);
        if (event.id !== '') lastEventId = event.id;
        failures = 0;
        return undefined;
      }
      case 'reset': {
        const data = parseJson(event.data);
        const reason = isObject(data) && typeof data['reason'] === 'string' ? data['reason'] : 'unknown';
        await options.onReset?.({ reason });
        return undefined;
      }
      case 'error': {
        const data = parseJson(event.data);
        const record = isObject(data) ? data : {};
        const code = typeof record['code'] === 'string' ? record['code'] : 'STREAM_ERROR';
        const message = typeof record['message'] === 'string' ? record['message'] : undefined;
        if (code === 'NOT_FOUND') {
          return {
            kind: 'fatal',
            error: new NotFoundError({
              code,
              status: 404,
              message: message ?? `subscription ${subscription.id} was deleted`,
            }),
          };
        }
        return {
          kind: 'retry',
          cause: errorFromRecord({
            code,
            status: 200,
            message: message ?? `the gateway ended the stream: ${code}`,
            details: record,
          }),
        };
      }
      default:
        // Another event type (a newer gateway): nothing to do with it here.
        return undefined;
    }
  };

  const resubscribe = async (): Promise<Outcome | undefined> => {
    try {
      subscription = await subscribe(transport, reads, stop.signal);
      streamed = false;
      return undefined;
    } catch (err) {
      if (stop.signal.aborted) return { kind: 'stopped' };
      if (!(err instanceof ClarityCacheError)) throw err;
      return isTransient(err.status) ? { kind: 'retry', cause: err } : { kind: 'fatal', error: err };
    }
  };

  /** Runs until the watch ends; true when the caller ended it (the subscription is then deleted). */
  const run = async (): Promise<boolean> => {
    let needSubscribe = false;
    for (;;) {
      if (stop.signal.aborted) return true;
      let outcome: Outcome;
      if (needSubscribe) {
        const failed = await resubscribe();
        if (failed === undefined) {
          needSubscribe = false;
          continue;
        }
        outcome = failed;
      } else {
        outcome = await connect();
      }
      switch (outcome.kind) {
        case 'stopped':
          return true;
        case 'fatal':
          options.onError(outcome.error);
          return false;
        case 'gone':
          // Right after subscribing, a 404 is no forgotten subscription: something else answers.
          if (!streamed) {
            options.onError(outcome.error);
            return false;
          }
          // The gateway answered, so it is up: subscribe again at once.
          needSubscribe = true;
          continue;
        case 'retry': {
          const delayMs = delayFor(outcome.retryAfterMs);
          failures++;
          options.onReconnect?.({ attempt: failures, delayMs, lastEventId, cause: outcome.cause });
          if (!(await sleepUnlessAborted(delayMs, stop.signal))) return true;
          break;
        }
      }
    }
  };

  const unsubscribe = async (): Promise<void> => {
    const quick: TransportOptions = {
      ...transport,
      policy: { ...transport.policy, retries: 0 },
      timeoutMs: Math.min(transport.timeoutMs, UNSUBSCRIBE_TIMEOUT_MS),
    };
    await unsubscribeRequest(quick, subscription.id).catch(() => undefined);
  };

  const done = (async () => {
    let callerEnded = true;
    try {
      callerEnded = await run();
    } finally {
      stop.release();
      // Also after a callback threw: the subscription would otherwise outlive its only reader.
      if (callerEnded) await unsubscribe();
    }
  })();

  return {
    get id() {
      return subscription.id;
    },
    get lastEventId() {
      return lastEventId;
    },
    done,
    close: () => {
      stop.abort();
      return done.then(
        () => undefined,
        () => undefined,
      );
    },
  };
}
