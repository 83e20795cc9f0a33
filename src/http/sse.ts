/**
 * A watched read's event stream as Server-Sent Events (docs/watch.md): the one place its
 * events become bytes. It starts with `retry: 2000`, is never silent more than 15 s (a
 * comment line), and drops a client that does not keep up: more than WATCH_MAX_UNSENT_BYTES
 * queued beyond what the socket took gets a last `error` event `SLOW_CONSUMER`, the stream
 * is ended and, if the client still reads nothing, its connection destroyed 5 s later. A slow
 * client never slows another stream or the cache: writes never wait.
 *
 * It writes to the response itself (the route hands the reply over: Fastify's stream plumbing
 * would more than double what an idle stream costs), so it also writes the status and headers,
 * CORS's included, when the route starts it.
 */
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { GatewayError } from '../errors.js';
import type {
  ReadOutcome,
  ResetReason,
  StreamEndCode,
  StreamSink,
  ValuesEvent,
} from '../service/watch/types.js';
import { COST_HEADER } from './metering.js';

/** What a reconnecting EventSource waits, in ms. */
const RETRY_MS = 2000;
/** Longest silence: proxies and browsers drop connections that say nothing for long. */
export const HEARTBEAT_MS = 15_000;
/** How long an ended stream's client has to read its last event before the connection goes. */
const DESTROY_AFTER_MS = 5_000;

/** The headers of every event stream (no-transform and no buffering by proxies: nginx reads X-Accel-Buffering). */
export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  'x-accel-buffering': 'no',
} as const;

export interface SseStreamOptions {
  readonly maxUnsentBytes: number;
  /** The stream is over (client gone, ended, dropped): release what it holds. */
  readonly onClose: () => void;
  /** The gateway ended it (a slow consumer, a deletion): metrics. */
  readonly onEnded?: (code: StreamEndCode) => void;
  /** Each event written (not the comment lines), with its bytes: usage metering (docs/usage.md). */
  readonly onEvent?: (bytes: number) => void;
}

/**
 * The comment lines of every open stream come from one timer, spread over its period: each
 * second a fifteenth of the streams say something, so that ten thousand idle streams cost
 * neither a timer each nor one burst of writes that would hold the event loop.
 */
const SLICES = 15;
const slices: Set<SseStream>[] = Array.from({ length: SLICES }, () => new Set());
let nextSlice = 0;
let beatingCount = 0;
let heartbeat: NodeJS.Timeout | undefined;
let tick = 0;

function startBeating(stream: SseStream): Set<SseStream> {
  const slice = slices[nextSlice]!;
  nextSlice = (nextSlice + 1) % SLICES;
  slice.add(stream);
  beatingCount++;
  if (heartbeat === undefined) {
    heartbeat = setInterval(() => {
      tick = (tick + 1) % SLICES;
      for (const s of slices[tick]!) s.beat();
      if (beatingCount === 0) {
        clearInterval(heartbeat);
        heartbeat = undefined;
      }
    }, HEARTBEAT_MS / SLICES);
    heartbeat.unref();
  }
  return slice;
}

function stopBeating(stream: SseStream, slice: Set<SseStream> | undefined): void {
  if (slice?.delete(stream) === true) beatingCount--;
}

export class SseStream implements StreamSink {
  readonly #res: ServerResponse;
  readonly #o: SseStreamOptions;
  /** What was written before the route started the stream (its head goes first); undefined once started. */
  #pending: string[] | undefined = [];
  #slice: Set<SseStream> | undefined;
  /** No more events: ended by the gateway, closed, or refused. */
  #ended = false;
  /** The client went away, or the stream was refused: nothing is ever written. */
  #gone = false;

  constructor(res: ServerResponse, options: SseStreamOptions) {
    this.#res = res;
    this.#o = options;
    res.once('close', () => this.#closed());
  }

  /**
   * The answer's head (200, the event-stream headers and `extra`), then what was written
   * meanwhile; a stream already ended (deleted while it was opened) ends after it.
   */
  start(extra: OutgoingHttpHeaders): void {
    if (this.#gone || this.#pending === undefined) return;
    // Opening a stream costs nothing; each event it sends costs a unit (docs/usage.md).
    this.#res.writeHead(200, { ...SSE_HEADERS, [COST_HEADER]: '0', ...extra });
    this.#res.write(`retry: ${RETRY_MS}\n\n${this.#pending.join('')}`);
    for (const text of this.#pending) this.#sent(text);
    this.#pending = undefined;
    if (this.#ended) this.#res.end();
    else this.#slice = startBeating(this);
  }

  /** The comment line that keeps proxies and browsers from taking the stream for dead. */
  beat(): void {
    this.#write(': keep-alive\n\n');
  }

  values(event: ValuesEvent): void {
    const { block } = event;
    const values = event.values.map(({ index, outcome }) => valueJson(index, outcome)).join(',');
    this.#write(
      `event: values\nid: ${block.height}:${block.indexBlockHash}\ndata: {"tipHeight":${block.height},"indexBlockHash":"${block.indexBlockHash}","values":[${values}]}\n\n`,
    );
  }

  reset(reason: ResetReason): void {
    this.#write(`event: reset\ndata: ${JSON.stringify({ reason })}\n\n`);
  }

  end(code: StreamEndCode): void {
    if (this.#ended) return;
    this.#write(`event: error\ndata: ${JSON.stringify({ code })}\n\n`, false);
    this.#finish();
    // A client that reads nothing more never lets the end through: its connection goes.
    const destroy = setTimeout(() => this.#res.destroy(), DESTROY_AFTER_MS);
    destroy.unref();
    this.#res.once('close', () => clearTimeout(destroy));
    this.#o.onEnded?.(code);
    this.#o.onClose();
  }

  close(): void {
    if (this.#ended) return;
    this.#finish();
    this.#o.onClose();
  }

  /** The stream was refused before it began (unknown id, stream limit): nothing is written. */
  abandon(): void {
    this.#ended = true;
    this.#gone = true;
  }

  #finish(): void {
    this.#ended = true;
    stopBeating(this, this.#slice);
    if (this.#pending === undefined && !this.#gone) this.#res.end();
  }

  #write(text: string, checked = true): void {
    if (this.#ended || this.#gone) return;
    if (this.#pending !== undefined) {
      this.#pending.push(text);
      return;
    }
    this.#res.write(text);
    this.#sent(text);
    // Bytes written but not yet taken by the socket.
    if (checked && this.#res.writableLength > this.#o.maxUnsentBytes) this.end('SLOW_CONSUMER');
  }

  /** Tell the meter of an event that reached the response (comment lines are not events). */
  #sent(text: string): void {
    if (this.#o.onEvent !== undefined && text.startsWith('event:')) this.#o.onEvent(Buffer.byteLength(text));
  }

  #closed(): void {
    stopBeating(this, this.#slice);
    this.#gone = true;
    if (this.#ended) return;
    this.#ended = true;
    this.#o.onClose();
  }
}

/**
 * Each outcome's JSON, made once for every stream it is sent to (a read watched by a thousand
 * streams changes once, not a thousand times).
 */
const outcomeJson = new WeakMap<ReadOutcome, string>();

function valueJson(index: number, outcome: ReadOutcome): string {
  let json = outcomeJson.get(outcome);
  if (json === undefined) {
    json =
      outcome.kind === 'value'
        ? `"value":${JSON.stringify(outcome.value)},"raw":"${outcome.raw}"`
        : `"error":${JSON.stringify(errorRecord(outcome.error))}`;
    outcomeJson.set(outcome, json);
  }
  return `{"index":${index},${json}}`;
}

/** An error as the envelope's record, without an id: the same failure is the same record. */
function errorRecord(err: GatewayError): object {
  return {
    code: err.code,
    message: err.message,
    ...(err.details !== undefined ? { details: err.details } : {}),
  };
}
