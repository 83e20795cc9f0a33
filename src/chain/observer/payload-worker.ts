/**
 * Reading an event payload (docs/events.md, "Reading payloads off the main thread"): its bytes
 * to JSON, checked against its schema, and for a /new_block each transaction classified from
 * its bytes and the contracts its events name; what comes out is a small summary, never the
 * parsed payload. One function, `summarizePayload`, run in two places: on the main thread for
 * small bodies, and in the observer's worker thread (payload-reader.ts) for the rest, where
 * this module is also the worker's entry (bundled on its own as dist/observer-worker.mjs).
 */
import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { parentPort, workerData } from 'node:worker_threads';
import { firstError, newBlockCheck, newBurnBlockCheck, normalizeHash } from './payload-schemas.js';
import { eventContracts } from './touched.js';
import { classifyTransaction, type TransactionEffect } from './transactions.js';

/** The routes whose payloads are read (the others are answered and dropped unread). */
export type PayloadRoute = '/new_block' | '/new_burn_block';

export interface SummarizedBlock {
  readonly height: number;
  /** 64 lowercase hex digits, no 0x (normalizeHash). */
  readonly indexBlockHash: string;
  readonly parentIndexBlockHash: string;
}

/** What a usable /new_block says, all the follower needs of it. */
export interface NewBlockSummary {
  readonly ok: true;
  readonly block: SummarizedBlock;
  /** Each transaction's effect, in block order. */
  readonly transactions: readonly TransactionEffect[];
  /** Contracts the block's events name. */
  readonly named: readonly string[];
}

/** A usable /new_burn_block: nothing in it is acted on. */
export interface BurnBlockSummary {
  readonly ok: true;
}

export interface UnusablePayload {
  readonly ok: false;
  readonly reason: string;
}

export type PayloadSummary<R extends PayloadRoute = PayloadRoute> =
  | (R extends '/new_block' ? NewBlockSummary : BurnBlockSummary)
  | UnusablePayload;

/** A body as read: one buffer, or consecutive parts of one (a body read without a length). */
export type PayloadBytes = Uint8Array | readonly Uint8Array[];

/** The worker's marker in workerData: this module listens only in a worker started for it. */
export const WORKER_MARKER = 'clarity-cache:observer-payload-worker';

/**
 * What the worker is sent: the parts of a body as they arrive (`parts`, moved or copied, the
 * worker owns them), a body given up (`drop`), and a body to read (`read`: its parts, or the
 * stream they came in).
 */
export type WorkerRequest =
  | {
      readonly kind: 'parts';
      readonly stream: number;
      /** The body's length, when its request said it. */
      readonly expected: number | undefined;
      readonly parts: readonly Uint8Array[];
    }
  | { readonly kind: 'drop'; readonly stream: number }
  | {
      readonly kind: 'read';
      readonly id: number;
      readonly route: PayloadRoute;
      readonly parts?: readonly Uint8Array[];
      readonly stream?: number;
    };

export interface WorkerAnswer {
  readonly id: number;
  readonly summary: PayloadSummary;
}

export function byteLengthOf(bytes: PayloadBytes | undefined): number {
  if (bytes === undefined) return 0;
  if (bytes instanceof Uint8Array) return bytes.byteLength;
  let n = 0;
  for (const part of bytes) n += part.byteLength;
  return n;
}

/** A body's text (its bytes decoded as UTF-8); undefined for no body or an empty one. */
function textOf(bytes: PayloadBytes | undefined): string | undefined {
  if (bytes === undefined || byteLengthOf(bytes) === 0) return undefined;
  if (bytes instanceof Uint8Array)
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  if (bytes.length === 1) return textOf(bytes[0]!);
  return Buffer.concat(bytes as Uint8Array[]).toString('utf8');
}

/**
 * A payload's summary, from its bytes. Throws nothing: a payload that cannot be used, whatever
 * the reason, is an `{ ok: false, reason }` (logged and counted by the follower).
 */
export function summarizePayload<R extends PayloadRoute>(
  route: R,
  bytes: PayloadBytes | undefined,
): PayloadSummary<R>;
export function summarizePayload(route: PayloadRoute, bytes: PayloadBytes | undefined): PayloadSummary {
  return summarizeText(route, textOf(bytes));
}

/** A payload's summary, from its text (the worker decodes first, to let go of the bytes). */
function summarizeText(route: PayloadRoute, text: string | undefined): PayloadSummary {
  if (text === undefined) return { ok: false, reason: 'empty body' };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, reason: 'not JSON' };
  }
  try {
    if (route === '/new_burn_block') {
      return newBurnBlockCheck.Check(value)
        ? { ok: true }
        : { ok: false, reason: firstError(newBurnBlockCheck, value) };
    }
    if (!newBlockCheck.Check(value)) return { ok: false, reason: firstError(newBlockCheck, value) };
    return {
      ok: true,
      block: {
        height: value.block_height,
        indexBlockHash: normalizeHash(value.index_block_hash),
        parentIndexBlockHash: normalizeHash(value.parent_index_block_hash),
      },
      transactions: value.transactions.map((tx) => classifyTransaction(tx.raw_tx, tx.status)),
      named: [...eventContracts(value.events)],
    };
  } catch (err) {
    return { ok: false, reason: `could not be read: ${err instanceof Error ? err.message : String(err)}` };
  }
}

/**
 * A body arriving in parts: copied into one buffer of its announced length as they come, so
 * that each part's memory can be given back at once (a young collection every few parts);
 * otherwise, or past that length, the parts themselves are kept.
 */
class Incoming {
  readonly #parts: Uint8Array[] = [];
  #into: Buffer | undefined;
  #filled = 0;

  constructor(expected: number | undefined) {
    if (expected !== undefined && expected > 0) this.#into = Buffer.allocUnsafeSlow(expected);
  }

  add(part: Uint8Array): void {
    const into = this.#into;
    if (into !== undefined && this.#filled + part.byteLength <= into.length) {
      into.set(part, this.#filled);
      this.#filled += part.byteLength;
      return;
    }
    if (into !== undefined) this.#parts.push(into.subarray(0, this.#filled));
    this.#into = undefined;
    this.#parts.push(part);
  }

  bytes(): PayloadBytes {
    const into = this.#into?.subarray(0, this.#filled);
    if (into === undefined) return this.#parts;
    return this.#parts.length === 0 ? into : [...this.#parts, into];
  }
}

type Collect = (options?: { type: 'minor' }) => void;

/**
 * V8's `gc`, without --expose-gc for the whole process: the flag is on only while this
 * thread fetches it (unless the process was started with it).
 */
function collector(): Collect {
  const exposed = (globalThis as { gc?: Collect }).gc;
  if (exposed !== undefined) return exposed;
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as Collect;
  setFlagsFromString('--no-expose-gc');
  return gc;
}

/**
 * This thread yields the CPU to the main thread when they compete (Linux: a thread's nice
 * value is its own): reading a payload may take longer, answering a hit may not.
 */
function lowerPriority(): void {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isSafeInteger(tid) && tid > 0)
      setPriority(tid, Math.min(19, getPriority(tid) + WORKER_NICENESS));
  } catch {
    // Not Linux, or not allowed: the same priority as the main thread.
  }
}

/** How much nicer the worker thread is than the main thread (nice values: 0 normal, 19 lowest). */
const WORKER_NICENESS = 5;

/** Bytes of parts copied between two young collections. */
const COLLECT_EVERY_BYTES = 1024 * 1024;

// The worker: one request at a time, in order, each read answered with its summary; then a
// full collection, so that the memory a large payload took is given back at once, not at the
// next payload. Inert anywhere else (the main thread imports this module for summarizePayload).
const port = parentPort;
if (port !== null && (workerData as { marker?: unknown } | null)?.marker === WORKER_MARKER) {
  const gc = collector();
  lowerPriority();
  const streams = new Map<number, Incoming>();
  let copied = 0;
  const take = (request: { readonly stream?: number; readonly parts?: readonly Uint8Array[] }) => {
    if (request.stream === undefined) return request.parts;
    const incoming = streams.get(request.stream);
    streams.delete(request.stream);
    return incoming?.bytes();
  };
  port.on('message', (request: WorkerRequest) => {
    switch (request.kind) {
      case 'parts': {
        let incoming = streams.get(request.stream);
        if (incoming === undefined) {
          incoming = new Incoming(request.expected);
          streams.set(request.stream, incoming);
        }
        for (const part of request.parts) {
          incoming.add(part);
          copied += part.byteLength;
        }
        // The parts copied are garbage now: collected young, their memory (the main thread's,
        // where Node read them) goes back to be used for the next ones.
        if (copied >= COLLECT_EVERY_BYTES) {
          copied = 0;
          gc({ type: 'minor' });
        }
        return;
      }
      case 'drop':
        streams.delete(request.stream);
        return;
      case 'read': {
        // Decoded first: its bytes are garbage by the time the parse needs the memory.
        const summary = summarizeText(request.route, textOf(take(request)));
        port.postMessage({ id: request.id, summary } satisfies WorkerAnswer);
        setImmediate(gc);
        return;
      }
    }
  });
}
