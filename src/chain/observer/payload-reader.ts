/**
 * Reads event payloads off the main thread (docs/events.md, "Reading payloads off the main
 * thread"): a /new_block of 100 MB takes seconds to join, decode, parse, check and classify,
 * which on the main thread would stall every cache hit for as long. One long-lived worker
 * thread (payload-worker.ts) does it, started with the first large body and again after it
 * died; only a small summary comes back.
 *
 * - Small bodies (below `inlineBelowBytes`, 16 KiB: about a dozen transactions) are read at
 *   once on the main thread, in well under a millisecond or two; the worker's round trip alone
 *   takes about half a millisecond.
 * - A large body goes to the worker as it arrives (`openBody`): its chunks, each a buffer of
 *   its own, are moved there (transferred, not copied) a few at a time, so that the main
 *   thread neither holds 100 MB of them (their collection would pause it again and again) nor
 *   joins them (writing 100 MB of fresh memory at once).
 * - The worker reads payloads one at a time, in the order `read` asked for them (a small one
 *   is read at once: the caller puts the summaries back in arrival order). At most
 *   `maxQueued` payloads (and `maxQueuedBytes`) wait for it or are being read; beyond that a
 *   payload is refused as unusable, which ends every proof as a lost block would and keeps a
 *   node that posts faster than payloads are read from filling the memory.
 * - A worker that dies costs the payload it was reading (and any body it was being sent);
 *   the next one starts a new worker. It holds the process open only while it reads a
 *   payload, and `close()` ends it.
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import {
  byteLengthOf,
  type PayloadBytes,
  type PayloadRoute,
  type PayloadSummary,
  summarizePayload,
  type UnusablePayload,
  WORKER_MARKER,
  type WorkerAnswer,
  type WorkerRequest,
} from './payload-worker.js';

/** The worker's bundled file, relative to the bundle (defined by scripts/bundle.mjs). */
declare const __OBSERVER_WORKER__: string | undefined;

export interface PayloadReaderOptions {
  /** Bodies smaller than this are read on the main thread (default 16 KiB). */
  readonly inlineBelowBytes?: number;
  /** Payloads waiting for the worker or being read by it, at most (default 64). */
  readonly maxQueued?: number;
  /** Their bytes, at most (default 1 GiB; a single payload larger than this is still read). */
  readonly maxQueuedBytes?: number;
}

const DEFAULT_INLINE_BELOW_BYTES = 16 * 1024;
const DEFAULT_MAX_QUEUED = 64;
const DEFAULT_MAX_QUEUED_BYTES = 1024 * 1024 * 1024;

/** A large body already sent on to the worker as it arrived (BodyStream.end). */
class StreamedBody {
  constructor(
    /** Its bytes. */
    readonly size: number,
    /** The stream its parts went to the worker in (none when none could be sent). */
    readonly stream: number | undefined,
    /** The worker they went to (the reader's count of workers started). */
    readonly worker: number,
    /** Why the body cannot be read (the worker stopped or could not start meanwhile). */
    readonly failure: string | undefined,
  ) {}
}

/** A body as handed to the reader: its bytes, or a body sent on as it arrived. */
export type PayloadBody = PayloadBytes | StreamedBody;

/** A body being read from its request, chunk by chunk (PayloadReader.openBody). */
export interface BodyStream {
  push(chunk: Buffer): void;
  /** A turn of the event loop ends: what came of a large body goes on to the worker. */
  flush(): void;
  /** The body, complete: its bytes (small), or the body sent on. */
  end(): PayloadBody;
  /** The body will not be read (too large, cut off): the worker forgets its parts. */
  abort(): void;
}

interface Job {
  readonly id: number;
  readonly route: PayloadRoute;
  readonly body: PayloadBytes | StreamedBody;
  readonly size: number;
  readonly resolve: (summary: PayloadSummary) => void;
}

const unusable = (reason: string): UnusablePayload => ({ ok: false, reason });
const STOPPED = 'the payload worker stopped while the body was sent to it';

export class PayloadReader {
  readonly #inlineBelow: number;
  readonly #maxQueued: number;
  readonly #maxQueuedBytes: number;
  readonly #waiting: Job[] = [];
  #current: Job | undefined;
  #queuedBytes = 0;
  #worker: Worker | undefined;
  #nextId = 1;
  #nextStream = 1;
  #closed = false;
  #started = 0;

  constructor(options: PayloadReaderOptions = {}) {
    this.#inlineBelow = options.inlineBelowBytes ?? DEFAULT_INLINE_BELOW_BYTES;
    this.#maxQueued = Math.max(1, options.maxQueued ?? DEFAULT_MAX_QUEUED);
    this.#maxQueuedBytes = options.maxQueuedBytes ?? DEFAULT_MAX_QUEUED_BYTES;
  }

  /** The worker thread now (none before the first large payload, or after it died until the next). */
  get worker(): Worker | undefined {
    return this.#worker;
  }

  /** Workers started so far. */
  get workersStarted(): number {
    return this.#started;
  }

  /** Payloads waiting for the worker or being read by it. */
  get pending(): number {
    return this.#waiting.length + (this.#current === undefined ? 0 : 1);
  }

  /**
   * A body about to arrive, of `expected` bytes when its request says so: a large one is sent
   * on to the worker as it comes (at each `flush`), a small one kept for the main thread.
   */
  openBody(expected?: number): BodyStream {
    const held: Buffer[] = [];
    let size = 0;
    let stream: number | undefined;
    let worker = 0;
    let failure: string | undefined;
    const large = () => size >= this.#inlineBelow || (expected ?? 0) >= this.#inlineBelow;
    const flush = (): void => {
      if (failure !== undefined || held.length === 0 || !large()) return;
      const sent = this.#send(stream, worker, expected, held.splice(0));
      if (typeof sent === 'string') failure = sent;
      else ({ stream, worker } = sent);
    };
    return {
      push: (chunk) => {
        size += chunk.length;
        if (failure === undefined) held.push(chunk);
      },
      flush,
      end: () => {
        flush();
        if (stream === undefined && failure === undefined) return held.length === 1 ? held[0]! : held;
        return new StreamedBody(size, stream, worker, failure);
      },
      abort: () => {
        held.length = 0;
        failure ??= 'aborted';
        if (stream !== undefined) this.#drop(stream, worker);
      },
    };
  }

  /**
   * The summary of a payload. Its bytes are handed over: their memory may be moved to the
   * worker, after which the caller's buffers are empty. The worker's summaries come back in
   * the order asked; a small payload's at once.
   */
  read<R extends PayloadRoute>(route: R, body: PayloadBody | undefined): Promise<PayloadSummary<R>>;
  read(route: PayloadRoute, body: PayloadBody | undefined): Promise<PayloadSummary> {
    const streamed = body instanceof StreamedBody;
    if (streamed && body.failure !== undefined) return Promise.resolve(unusable(body.failure));
    const size = streamed ? body.size : byteLengthOf(body);
    if (body === undefined || (!streamed && size < this.#inlineBelow))
      return Promise.resolve(summarizePayload(route, body));
    const refused = this.#closed ? 'the event observer is closed' : this.#full(size);
    if (refused !== undefined) {
      if (streamed && body.stream !== undefined) this.#drop(body.stream, body.worker);
      return Promise.resolve(unusable(refused));
    }
    return new Promise<PayloadSummary>((resolve) => {
      this.#queuedBytes += size;
      this.#waiting.push({ id: this.#nextId++, route, body, size, resolve });
      this.#pump();
    });
  }

  /** Ends the worker; payloads not read yet are unusable. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const job of this.#waiting.splice(0)) this.#finish(job, unusable('the event observer is closed'));
    const worker = this.#worker;
    if (worker !== undefined) await worker.terminate();
  }

  #full(size: number): string | undefined {
    const pending = this.pending;
    if (pending < this.#maxQueued && (pending === 0 || this.#queuedBytes + size <= this.#maxQueuedBytes))
      return undefined;
    const mib = Math.round(this.#queuedBytes / 1024 / 1024);
    return `too many payloads waiting to be read (${pending}, ${mib} MiB)`;
  }

  #finish(job: Job, summary: PayloadSummary): void {
    this.#queuedBytes -= job.size;
    job.resolve(summary);
  }

  /** Sends parts of a body on: where they went, or why they could not. */
  #send(
    stream: number | undefined,
    worker: number,
    expected: number | undefined,
    parts: Buffer[],
  ): { stream: number; worker: number } | string {
    if (this.#closed) return 'the event observer is closed';
    if (stream !== undefined && (this.#worker === undefined || worker !== this.#started)) return STOPPED;
    let thread: Worker;
    try {
      thread = this.#worker ?? this.#start();
    } catch (err) {
      return `the payload worker could not start: ${messageOf(err)}`;
    }
    const id = stream ?? this.#nextStream++;
    post(thread, (moved) => ({ kind: 'parts', stream: id, expected, parts: moved }), parts);
    return { stream: id, worker: this.#started };
  }

  #drop(stream: number, worker: number): void {
    if (this.#worker !== undefined && worker === this.#started)
      this.#worker.postMessage({ kind: 'drop', stream } satisfies WorkerRequest);
  }

  #pump(): void {
    while (this.#current === undefined) {
      const job = this.#waiting.shift();
      if (job === undefined) {
        this.#worker?.unref();
        return;
      }
      const { body } = job;
      if (body instanceof StreamedBody) {
        if (this.#worker === undefined || body.worker !== this.#started) {
          this.#finish(job, unusable(STOPPED));
          continue;
        }
        this.#current = job;
        this.#worker.ref();
        this.#worker.postMessage({
          kind: 'read',
          id: job.id,
          route: job.route,
          stream: body.stream!,
        } satisfies WorkerRequest);
        return;
      }
      let worker: Worker;
      try {
        worker = this.#worker ?? this.#start();
      } catch (err) {
        this.#finish(job, unusable(`the payload worker could not start: ${messageOf(err)}`));
        continue;
      }
      this.#current = job;
      worker.ref();
      post(
        worker,
        (parts) => ({ kind: 'read', id: job.id, route: job.route, parts }),
        body instanceof Uint8Array ? [body] : body,
      );
      return;
    }
  }

  #start(): Worker {
    const worker = startWorker();
    this.#started++;
    this.#worker = worker;
    let failure: unknown;
    worker.on('message', (answer: WorkerAnswer) => {
      const job = this.#current;
      if (job === undefined || answer.id !== job.id) return;
      this.#current = undefined;
      this.#finish(job, answer.summary);
      this.#pump();
    });
    worker.on('messageerror', (err) => {
      failure = err;
    });
    worker.on('error', (err) => {
      failure = err;
    });
    worker.on('exit', (code) => {
      if (this.#worker === worker) this.#worker = undefined;
      const job = this.#current;
      this.#current = undefined;
      if (job !== undefined) {
        const why = failure === undefined ? `exit code ${code}` : messageOf(failure);
        this.#finish(job, unusable(`the payload worker stopped while reading it (${why})`));
      }
      if (!this.#closed) this.#pump();
    });
    worker.unref();
    return worker;
  }
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Posts a message carrying parts of a body: a part that owns its memory whole is moved
 * (transferred, no copy: each chunk Node hands a request's body in owns its own); any other is
 * copied, its own bytes only (a structured clone would copy all the memory it views).
 */
function post(worker: Worker, message: (parts: Uint8Array[]) => WorkerRequest, bytes: readonly Uint8Array[]) {
  const parts: Uint8Array[] = [];
  const transfer = new Set<ArrayBuffer>();
  for (const part of bytes) {
    const buffer = part.buffer;
    const whole =
      buffer instanceof ArrayBuffer &&
      part.byteOffset === 0 &&
      part.byteLength === buffer.byteLength &&
      !transfer.has(buffer);
    const sent = whole ? part : part.slice();
    parts.push(sent);
    transfer.add(sent.buffer as ArrayBuffer);
  }
  try {
    worker.postMessage(message(parts), [...transfer]);
  } catch {
    // A buffer that cannot be moved after all (Node keeps some from moving): copy them all.
    const copies = parts.map((p) => p.slice());
    worker.postMessage(
      message(copies),
      copies.map((c) => c.buffer as ArrayBuffer),
    );
  }
}

/**
 * The worker, wherever the gateway runs from: the production bundle starts the bundled worker
 * beside it; the tsc output its sibling .js; the sources (tsx, vitest) the TypeScript module
 * through tsx's loader, which the worker registers first.
 */
function startWorker(): Worker {
  // A young generation of 8 MB (V8's default grows to 32 MB while a payload is parsed, and
  // stays committed after): the parse takes as long, the idle worker holds 24 MB less.
  const options = { workerData: { marker: WORKER_MARKER }, resourceLimits: { maxYoungGenerationSizeMb: 8 } };
  if (typeof __OBSERVER_WORKER__ === 'string')
    return new Worker(new URL(__OBSERVER_WORKER__, import.meta.url), options);
  const own = import.meta.url;
  if (!own.endsWith('.ts')) return new Worker(new URL('./payload-worker.js', own), options);
  const entry = new URL('./payload-worker.ts', own).href;
  // tsx's ESM API (the require condition names its CommonJS twin, whose hooks cannot load ESM).
  const api = pathToFileURL(
    createRequire(own)
      .resolve('tsx/esm/api')
      .replace(/\.cjs$/, '.mjs'),
  ).href;
  const boot = `import(${JSON.stringify(api)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry)}); });`;
  return new Worker(boot, { ...options, eval: true });
}
