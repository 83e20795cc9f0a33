/**
 * The work of watched reads (docs/watch.md): per block, not per subscriber. Each distinct
 * read (by its cache key, whatever the number of streams watching it) is evaluated once per
 * block that can have changed it, and every stream is then sent the reads whose answer differs
 * from the last one it was sent.
 *
 * - Which blocks: with an event observer (this instance's, or another instance's followed through
 *   Redis), every block it applies; an evaluation is skipped when the ledger proves the block
 *   touched nothing the read depends on. Without one, each new tip learned from a /v2/info,
 *   polled every CHAIN_TIP_MAX_AGE_MS while a stream is open; every read is evaluated at each.
 * - What an evaluation is: the read pinned to the block, through the cache, the upstream budget
 *   and the coalescing of identical loads across the fleet (a pinned answer never changes, so
 *   the other instances find it cached).
 * - One network's work runs one step at a time: a block, or the streams that connected
 *   meanwhile. When blocks come faster than evaluations, only the newest is evaluated.
 * - A transient failure leaves the read's last answer in place: nothing is sent, and the read
 *   is evaluated again at the next block.
 */
import type { Network } from '../../network.js';
import { BlockHistory } from './block-history.js';
import {
  type Evaluation,
  NO_ANSWER,
  type ReadOutcome,
  type StreamSink,
  UNKNOWN_BLOCK,
  type WatchBlock,
  type WatchedRead,
} from './types.js';

/** When and at which height a read's current answer was read (for the observer's proof). */
export interface ReadAt {
  readonly height: number;
  /** Epoch ms. */
  readonly readAt: number;
}

export interface WatchMetricsPort {
  /** One evaluation of a read at a block, and how it ended. */
  evaluated(network: Network, result: 'value' | 'error' | 'no-answer' | 'proven'): void;
  /** One event written to a stream. */
  sent(network: Network, event: 'values' | 'reset'): void;
  /** Seconds from a block's arrival to its events being written to every stream. */
  delivered(network: Network, seconds: number): void;
}

export interface WatchHubOptions {
  /** The read pinned to the block, through the cache. */
  evaluate(read: WatchedRead, block: WatchBlock): Promise<Evaluation>;
  /**
   * Whether an answer read at `since` is provably still the answer at `block` (the event
   * observer's ledger); absent or false = evaluate.
   */
  unchanged?(network: Network, read: WatchedRead, since: ReadAt, block: WatchBlock): boolean;
  /** The current block when none is held (one shared GET /v2/info). */
  currentBlock(network: Network): Promise<WatchBlock>;
  /**
   * Whether a network's blocks come from an event observer (this instance's, or another's
   * through Redis) with proofs of what they left unchanged: its blocks are taken from there
   * only, and it is not polled.
   */
  observed(network: Network): boolean;
  /** A read is watched for the first time: what it depends on can be worked out before the next block. */
  watched?(network: Network, read: WatchedRead): void;
  /** CHAIN_TIP_MAX_AGE_MS: the polling period without the observer, and the age a held block may have. */
  readonly maxAgeMs: number;
  readonly metrics?: WatchMetricsPort | undefined;
  readonly now?: () => number;
  /** An unexpected failure in the hub's own work (logged). */
  readonly onError?: (err: unknown) => void;
}

/** A distinct read and its answer at the newest block it is known at. */
interface ReadState {
  readonly read: WatchedRead;
  refs: number;
  /** Hash of the block `outcome` is known to be the answer at. */
  at: string | undefined;
  outcome: ReadOutcome | undefined;
  /** Where the outcome was read (the proof runs from there). */
  readAt: ReadAt | undefined;
  /** The evaluation under way, and at which block: streams connecting together share it. */
  bringing: { readonly hash: string; readonly done: Promise<void> } | undefined;
}

/** One open stream. */
interface LiveStream {
  readonly states: readonly ReadState[];
  /** What the stream was last sent of each read (ReadOutcome.same); undefined = nothing yet. */
  readonly sent: (string | undefined)[];
  readonly sink: StreamSink;
  live: boolean;
}

export interface WatchConnection {
  /** The client went away (or the stream was ended): stop sending, release its reads. */
  close(): void;
}

class NetworkWatch {
  readonly reads = new Map<string, ReadState>();
  readonly streams = new Set<LiveStream>();
  readonly history = new BlockHistory();
  latest: WatchBlock | undefined;
  pending: WatchBlock | undefined;
  connecting: { stream: LiveStream; lastEventId: string | undefined }[] = [];
  running = false;

  constructor(readonly network: Network) {}
}

export class WatchHub {
  readonly #o: WatchHubOptions;
  readonly #now: () => number;
  readonly #networks = new Map<Network, NetworkWatch>();
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(options: WatchHubOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
  }

  /** Open streams, all networks (metrics). */
  get streams(): number {
    let n = 0;
    for (const w of this.#networks.values()) n += w.streams.size;
    return n;
  }

  /** Distinct reads watched, all networks (metrics). */
  get reads(): number {
    let n = 0;
    for (const w of this.#networks.values()) n += w.reads.size;
    return n;
  }

  /**
   * A block learned: from the event observer once applied (`observed`), or a tip learned
   * otherwise. Blocks of the observer's network come from the observer only: its ledger says
   * what they touched, and a /v2/info naming the same block a moment earlier would make every
   * read be evaluated for nothing.
   */
  block(network: Network, block: WatchBlock, fromObserver: boolean): void {
    if (this.#closed) return;
    if (!fromObserver && this.#o.observed(network)) return;
    const w = this.#watch(network);
    const newest = w.pending ?? w.latest;
    if (newest !== undefined) {
      if (newest.indexBlockHash === block.indexBlockHash) return;
      // A lower tip from a /v2/info is a lagging node, not news; the observer's order is the chain's.
      if (!fromObserver && block.height < newest.height) return;
    }
    w.history.add(block);
    if (w.streams.size === 0 && w.connecting.length === 0) {
      w.latest = block;
      return;
    }
    w.pending = block;
    this.#kick(w);
  }

  /**
   * A stream of `reads` opens: its first event is every read at the current block, or, when
   * `lastEventId` names a block the client already heard of, the reads whose answer differs
   * between that block and the current one (after a `reset` when that block cannot be used).
   */
  connect(
    network: Network,
    reads: readonly WatchedRead[],
    sink: StreamSink,
    lastEventId?: string,
  ): WatchConnection {
    const w = this.#watch(network);
    const states = reads.map((read) => this.#hold(w, read));
    const stream: LiveStream = { states, sent: reads.map(() => undefined), sink, live: true };
    let closed = false;
    w.connecting.push({ stream, lastEventId });
    this.#kick(w);
    this.#startPolling();
    return {
      close: () => {
        if (closed) return;
        closed = true;
        stream.live = false;
        w.streams.delete(stream);
        for (const state of states) {
          state.refs--;
          if (state.refs === 0) w.reads.delete(state.read.key);
        }
      },
    };
  }

  close(): void {
    this.#closed = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #watch(network: Network): NetworkWatch {
    let w = this.#networks.get(network);
    if (w === undefined) {
      w = new NetworkWatch(network);
      this.#networks.set(network, w);
    }
    return w;
  }

  #hold(w: NetworkWatch, read: WatchedRead): ReadState {
    let state = w.reads.get(read.key);
    if (state === undefined) {
      state = { read, refs: 0, at: undefined, outcome: undefined, readAt: undefined, bringing: undefined };
      w.reads.set(read.key, state);
      this.#o.watched?.(w.network, read);
    }
    state.refs++;
    return state;
  }

  /** Runs the network's work, one step at a time, until none is left. */
  #kick(w: NetworkWatch): void {
    if (w.running) return;
    w.running = true;
    void (async () => {
      try {
        while (!this.#closed && (w.pending !== undefined || w.connecting.length > 0)) {
          const block = w.pending;
          if (block !== undefined) {
            w.pending = undefined;
            await this.#advance(w, block);
          } else {
            const connecting = w.connecting;
            w.connecting = [];
            await this.#connectAll(w, connecting);
          }
        }
      } catch (err) {
        this.#o.onError?.(err);
      } finally {
        w.running = false;
      }
      // Work that came in while the last step was failing.
      if (!this.#closed && (w.pending !== undefined || w.connecting.length > 0)) this.#kick(w);
    })();
  }

  /** A new block: every watched read brought to it, then each stream sent what changed. */
  async #advance(w: NetworkWatch, block: WatchBlock): Promise<void> {
    w.latest = block;
    await eachLimited([...w.reads.values()], MAX_EVALUATING, (state) => this.#bringTo(w, state, block));
    for (const stream of w.streams) {
      if (!stream.live) continue;
      const changed: { index: number; outcome: ReadOutcome }[] = [];
      stream.states.forEach((state, index) => {
        if (state.at !== block.indexBlockHash || state.outcome === undefined) return;
        if (stream.sent[index] === state.outcome.same) return;
        stream.sent[index] = state.outcome.same;
        changed.push({ index, outcome: state.outcome });
      });
      if (changed.length > 0) this.#sendValues(w, stream, block, changed);
    }
    this.#o.metrics?.delivered(w.network, Math.max(0, this.#now() - block.receivedAt) / 1000);
  }

  /** The read's answer at `block`: proven unchanged by the observer, else evaluated (pinned). */
  #bringTo(w: NetworkWatch, state: ReadState, block: WatchBlock): Promise<void> {
    if (state.at === block.indexBlockHash) return Promise.resolve();
    const hash = block.indexBlockHash;
    if (state.bringing?.hash === hash) return state.bringing.done;
    const done = this.#bring(w, state, block).finally(() => {
      if (state.bringing?.done === done) state.bringing = undefined;
    });
    state.bringing = { hash, done };
    return done;
  }

  async #bring(w: NetworkWatch, state: ReadState, block: WatchBlock): Promise<void> {
    if (
      state.outcome !== undefined &&
      state.readAt !== undefined &&
      this.#o.unchanged?.(w.network, state.read, state.readAt, block) === true
    ) {
      state.at = block.indexBlockHash;
      this.#o.metrics?.evaluated(w.network, 'proven');
      return;
    }
    const readAt = this.#now();
    const evaluation = await this.#evaluate(w, state.read, block);
    if (typeof evaluation === 'string') return;
    state.outcome = evaluation;
    state.at = block.indexBlockHash;
    state.readAt = { height: block.height, readAt };
  }

  async #evaluate(w: NetworkWatch, read: WatchedRead, block: WatchBlock): Promise<Evaluation> {
    let evaluation: Evaluation;
    try {
      evaluation = await this.#o.evaluate(read, block);
    } catch (err) {
      this.#o.onError?.(err);
      evaluation = NO_ANSWER;
    }
    this.#o.metrics?.evaluated(w.network, typeof evaluation === 'string' ? 'no-answer' : evaluation.kind);
    return evaluation;
  }

  /** The current block for a connecting stream: the one held when recent enough, else asked. */
  async #current(w: NetworkWatch): Promise<WatchBlock | undefined> {
    const held = w.latest;
    const observed = this.#o.observed(w.network);
    if (held !== undefined && (observed || this.#now() - held.receivedAt <= this.#o.maxAgeMs)) return held;
    try {
      const block = await this.#o.currentBlock(w.network);
      if (held !== undefined && held.indexBlockHash === block.indexBlockHash) return held;
      if (held !== undefined && block.height < held.height) return held;
      return block;
    } catch {
      // The node cannot say now: the stream's first event comes with the next block learned.
      return held;
    }
  }

  /** Streams that connected since the last step: all start at one current block. */
  async #connectAll(
    w: NetworkWatch,
    connecting: readonly { stream: LiveStream; lastEventId: string | undefined }[],
  ): Promise<void> {
    const block = await this.#current(w);
    if (block !== undefined && block.indexBlockHash !== w.latest?.indexBlockHash) {
      w.history.add(block);
      // A newer block than the open streams were sent: they move with it first.
      await this.#advance(w, block);
    }
    await Promise.all(
      connecting.map(({ stream, lastEventId }) => this.#connect(w, stream, block, lastEventId)),
    );
  }

  async #connect(
    w: NetworkWatch,
    stream: LiveStream,
    block: WatchBlock | undefined,
    lastEventId: string | undefined,
  ): Promise<void> {
    if (!stream.live) return;
    // Open from here on: the next block reaches it (all of its reads, when none was sent yet).
    w.streams.add(stream);
    if (block === undefined) return;
    await eachLimited(stream.states, MAX_EVALUATING, (state) => this.#bringTo(w, state, block));
    if (!stream.live) return;
    const resumed = lastEventId === undefined ? undefined : await this.#resume(w, stream, block, lastEventId);
    if (!stream.live) return;
    const values: { index: number; outcome: ReadOutcome }[] = [];
    stream.states.forEach((state, index) => {
      if (state.at !== block.indexBlockHash || state.outcome === undefined) return;
      const clientHas = resumed?.[index];
      stream.sent[index] = state.outcome.same;
      if (clientHas !== state.outcome.same) values.push({ index, outcome: state.outcome });
    });
    // A resumed stream whose reads all still answer as at the block it names is sent nothing;
    // reads that could not be evaluated yet come with the next block.
    if (values.length > 0) this.#sendValues(w, stream, block, values);
  }

  /**
   * What the client holds of each read, as of the block its Last-Event-ID names (its answers
   * there, pinned reads); undefined after a `reset` (the block cannot be used: it is sent
   * everything).
   */
  async #resume(
    w: NetworkWatch,
    stream: LiveStream,
    current: WatchBlock,
    lastEventId: string,
  ): Promise<(string | undefined)[] | undefined> {
    const named = parseEventId(lastEventId);
    const standing = named === undefined ? 'unknown' : w.history.standing(named.height, named.indexBlockHash);
    if (named === undefined || standing !== 'canonical') {
      this.#reset(w, stream, standing === 'not-canonical' ? 'not-canonical' : 'unknown');
      return undefined;
    }
    if (named.indexBlockHash === current.indexBlockHash) return stream.states.map((s) => s.outcome?.same);
    const then: WatchBlock = { ...named, receivedAt: this.#now() };
    const answers = await Promise.all(stream.states.map((s) => this.#evaluate(w, s.read, then)));
    if (answers.some((a) => a === UNKNOWN_BLOCK)) {
      this.#reset(w, stream, 'unknown');
      return undefined;
    }
    // A read that could not be evaluated there is sent again: better once more than missed.
    return answers.map((a) => (typeof a === 'string' ? undefined : a.same));
  }

  #reset(w: NetworkWatch, stream: LiveStream, reason: 'unknown' | 'not-canonical'): void {
    stream.sink.reset(reason);
    this.#o.metrics?.sent(w.network, 'reset');
  }

  #sendValues(
    w: NetworkWatch,
    stream: LiveStream,
    block: WatchBlock,
    values: { index: number; outcome: ReadOutcome }[],
  ): void {
    stream.sink.values({ block, values });
    this.#o.metrics?.sent(w.network, 'values');
  }

  /** Without the observer, each network with open streams learns its tip every CHAIN_TIP_MAX_AGE_MS. */
  #startPolling(): void {
    if (this.#timer !== undefined || this.#closed) return;
    this.#timer = setInterval(() => this.#poll(), Math.max(100, this.#o.maxAgeMs));
    this.#timer.unref();
  }

  #poll(): void {
    let open = false;
    for (const w of this.#networks.values()) {
      if (w.streams.size === 0) continue;
      open = true;
      if (this.#o.observed(w.network)) continue;
      this.#o.currentBlock(w.network).then(
        (block) => this.block(w.network, block, false),
        () => {
          // Asked again at the next period.
        },
      );
    }
    if (!open && this.#timer !== undefined) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }
}

/**
 * Evaluations in flight at once for one block. A block that changes a thousand reads would
 * otherwise start a thousand upstream requests together, and those queued behind the upstream's
 * connections would time out before they were even sent; proven reads cost nothing either way.
 */
const MAX_EVALUATING = 32;

/** `work` on every item, at most `limit` at a time. */
async function eachLimited<T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await work(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** `<height>:<64 hex digits>` as an event id names it. */
export function parseEventId(id: string): { height: number; indexBlockHash: string } | undefined {
  const m = /^(\d{1,15}):([0-9a-f]{64})$/.exec(id.trim());
  if (m === null) return undefined;
  return { height: Number(m[1]), indexBlockHash: m[2]! };
}
