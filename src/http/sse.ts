/**
 * A watched read's event stream as Server-Sent Events (docs/watch.md): the one place its
 * events become bytes. It starts with `retry: 2000`, is never silent more than 15 s (a
 * comment line), and drops a client that does not keep up: more than WATCH_MAX_UNSENT_BYTES
 * queued beyond what the socket took gets a last `error` event `SLOW_CONSUMER`, the stream
 * is ended and, if the client still reads nothing, its connection destroyed 5 s later. A slow
 * client never slows another stream or the cache: writes never wait.
 */
import type { ServerResponse } from 'node:http';
import { PassThrough } from 'node:stream';
import type { GatewayError } from '../errors.js';
import type {
  ReadOutcome,
  ResetReason,
  StreamEndCode,
  StreamSink,
  ValuesEvent,
} from '../service/watch/types.js';

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
}

/**
 * One timer for every open stream's comment line, not one each: thousands of idle streams cost
 * a set entry apiece, not a timer apiece.
 */
const beating = new Set<SseStream>();
let heartbeat: NodeJS.Timeout | undefined;

function startBeating(stream: SseStream): void {
  beating.add(stream);
  if (heartbeat !== undefined) return;
  heartbeat = setInterval(() => {
    for (const s of beating) s.beat();
    if (beating.size === 0) {
      clearInterval(heartbeat);
      heartbeat = undefined;
    }
  }, HEARTBEAT_MS);
  heartbeat.unref();
}

export class SseStream implements StreamSink {
  /** The reply's body. */
  readonly body = new PassThrough();
  readonly #res: ServerResponse;
  readonly #o: SseStreamOptions;
  #ended = false;

  constructor(res: ServerResponse, options: SseStreamOptions) {
    this.#res = res;
    this.#o = options;
    this.#write(`retry: ${RETRY_MS}\n\n`);
    startBeating(this);
    res.once('close', () => this.#closed());
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
    this.#ended = true;
    this.body.end(`event: error\ndata: ${JSON.stringify({ code })}\n\n`);
    beating.delete(this);
    // A client that reads nothing more never lets the end through: its connection goes.
    const destroy = setTimeout(() => this.#res.destroy(), DESTROY_AFTER_MS);
    destroy.unref();
    this.#res.once('close', () => clearTimeout(destroy));
    this.#o.onEnded?.(code);
    this.#o.onClose();
  }

  close(): void {
    if (this.#ended) return;
    this.#ended = true;
    beating.delete(this);
    this.body.end();
    this.#o.onClose();
  }

  /** The stream was refused before it began (unknown id, stream limit): nothing was sent. */
  abandon(): void {
    this.#ended = true;
    beating.delete(this);
    this.body.destroy();
  }

  #write(text: string): void {
    if (this.#ended) return;
    this.body.write(text);
    if (this.#unsent() > this.#o.maxUnsentBytes) this.end('SLOW_CONSUMER');
  }

  /** Bytes written but not yet taken by the socket: in the body's buffers and the response's. */
  #unsent(): number {
    return this.body.readableLength + this.body.writableLength + this.#res.writableLength;
  }

  #closed(): void {
    beating.delete(this);
    if (this.#ended) return;
    this.#ended = true;
    this.body.destroy();
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
