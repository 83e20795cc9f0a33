/**
 * What the observer does with the payloads the node posts, once they are answered
 * (docs/events.md): a usable /new_block moves the network's tip as soon as it is read and, after
 * its transactions' reach is known, is recorded in the block ledger with what it touched; the
 * same block twice changes nothing; a payload that cannot be used ends every proof as a missed
 * block would. Payloads are read off the main thread when large (payload-reader.ts) and are
 * acted on one at a time, in the order they arrived: reading one may overlap applying the one
 * before, never the order of their effects.
 */
import type { DependencyAnalyzer } from '../../clarity/analysis/index.js';
import type { Network } from '../../network.js';
import type { AppendOutcome, BlockLedger, Touched } from '../block-ledger.js';
import { type PayloadBody, PayloadReader, type PayloadReaderOptions } from './payload-reader.js';
import type { NewBlockSummary, PayloadRoute, PayloadSummary } from './payload-worker.js';
import { effectsOf } from './touched.js';

export interface FollowedBlock {
  readonly height: number;
  readonly indexBlockHash: string;
  readonly receivedAt: number;
}

/** A block as applied: the ledger can now answer proofs up to it. */
export interface AppliedBlock extends FollowedBlock {
  readonly parentIndexBlockHash: string;
  /** What the block touched and deployed, as the ledger recorded it. */
  readonly touched: Touched;
  readonly deployed: readonly string[];
}

export interface ChainFollowerHooks {
  /** A usable new block: move the tip (and announce it to the other instances). */
  readonly onTip: (block: FollowedBlock) => void;
  /** A payload could not be used: why (for the log and clarity_cache_observer_rejected_total). */
  readonly onRejected?: (route: string, reason: string) => void;
  /** A block applied to the ledger, with what it touched and how long it took to handle (ms). */
  readonly onApplied?: (
    outcome: AppendOutcome,
    touched: Touched,
    handlingMs: number,
    block: AppliedBlock,
  ) => void;
  /** A block deployed a contract (clears its negative ABI cache). */
  readonly onDeployed?: (contractId: string) => void | Promise<void>;
  /** A block already seen. */
  readonly onDuplicate?: () => void;
  /** Unexpected failure while applying a block (the block then counts as missed). */
  readonly onError?: (err: unknown) => void;
}

export interface ChainFollowerOptions extends ChainFollowerHooks {
  readonly network: Network;
  readonly ledger: BlockLedger;
  readonly analyzer: DependencyAnalyzer;
  readonly now?: () => number;
  /** How payloads are read (default: a PayloadReader of its own with these options). */
  readonly reader?: PayloadReader | PayloadReaderOptions;
}

/** Index block hashes remembered for "the same block twice" while still being applied. */
const SEEN_LIMIT = 8192;

export class ChainFollower {
  readonly network: Network;
  readonly ledger: BlockLedger;
  /** Reads the payloads (off the main thread when large). */
  readonly reader: PayloadReader;
  readonly #o: ChainFollowerOptions;
  readonly #now: () => number;
  readonly #seen = new Set<string>();
  /** Payloads in arrival order, each acted on once read (tip, duplicate, rejection). */
  #intake: Promise<void> = Promise.resolve();
  /** Blocks applied to the ledger (and interruptions), in the same order. */
  #queue: Promise<void> = Promise.resolve();
  #last: FollowedBlock | undefined;
  #handled = 0;
  #waiters: { count: number; resolve: () => void }[] = [];

  constructor(options: ChainFollowerOptions) {
    this.#o = options;
    this.network = options.network;
    this.ledger = options.ledger;
    this.#now = options.now ?? Date.now;
    this.reader =
      options.reader instanceof PayloadReader ? options.reader : new PayloadReader(options.reader);
  }

  /** The last usable block received (for /ready). */
  get lastBlock(): FollowedBlock | undefined {
    return this.#last;
  }

  /** Resolves once every payload handed in so far is read and applied (tests, shutdown). */
  async idle(): Promise<void> {
    for (;;) {
      const intake = this.#intake;
      await intake;
      const queue = this.#queue;
      await queue;
      if (intake === this.#intake && queue === this.#queue) return;
    }
  }

  /** Payloads handed in so far (read or not). */
  get handled(): number {
    return this.#handled;
  }

  /** Resolves once `count` payloads have been handed in and everything handed in is applied. */
  async untilHandled(count: number): Promise<void> {
    if (this.#handled < count) {
      await new Promise<void>((resolve) => this.#waiters.push({ count, resolve }));
    }
    await this.idle();
  }

  /** Waits for everything handed in, then ends the reader's worker. */
  async close(): Promise<void> {
    await this.idle();
    await this.reader.close();
  }

  #count(): void {
    this.#handled++;
    const ready = this.#waiters.filter((w) => w.count <= this.#handled);
    if (ready.length === 0) return;
    this.#waiters = this.#waiters.filter((w) => w.count > this.#handled);
    for (const w of ready) w.resolve();
  }

  /** A POST /new_block body, as read (handed over: the reader may move its memory). */
  newBlock(body: PayloadBody | undefined): void {
    const startedAt = performance.now();
    try {
      this.#read('/new_block', body, (summary) => this.#newBlock(summary, startedAt));
    } finally {
      this.#count();
    }
  }

  /** A POST /new_burn_block body: checked (an unusable one ends proofs), otherwise nothing to do. */
  newBurnBlock(body: PayloadBody | undefined): void {
    this.#count();
    this.#read('/new_burn_block', body, (summary) => {
      if (!summary.ok) this.#rejected('/new_burn_block', summary.reason);
    });
  }

  /** A payload the gateway could not use (or could not even read): every proof ends. */
  reject(route: string, reason: string): void {
    this.#inOrder(() => this.#rejected(route, reason));
  }

  /** A body that could not even be read (too large, cut off): rejected, and counted as handed in. */
  unreadable(route: string, reason: string): void {
    this.reject(route, reason);
    this.#count();
  }

  /** Starts reading now; acts on the summary after every payload handed in before it. */
  #read<R extends PayloadRoute>(
    route: R,
    body: PayloadBody | undefined,
    then: (summary: PayloadSummary<R>) => void,
  ): void {
    const summary = this.reader.read(route, body);
    this.#inOrder(async () => then(await summary));
  }

  #inOrder(step: () => void | Promise<void>): void {
    this.#intake = this.#intake.then(step).catch((err: unknown) => {
      this.#enqueue(async () => this.ledger.interrupt());
      this.#o.onError?.(err);
    });
  }

  #rejected(route: string, reason: string): void {
    this.#o.onRejected?.(route, reason);
    this.#enqueue(async () => this.ledger.interrupt());
  }

  #newBlock(summary: PayloadSummary<'/new_block'>, startedAt: number): void {
    if (!summary.ok) {
      this.#rejected('/new_block', summary.reason);
      return;
    }
    const { indexBlockHash, height } = summary.block;
    if (this.#seen.has(indexBlockHash)) {
      this.#o.onDuplicate?.();
      return;
    }
    this.#seen.add(indexBlockHash);
    if (this.#seen.size > SEEN_LIMIT) this.#seen.delete(this.#seen.values().next().value!);
    const receivedAt = this.#now();
    const block: FollowedBlock = { height, indexBlockHash, receivedAt };
    this.#last = block;
    this.#o.onTip(block);
    this.#enqueue(() => this.#apply(summary, receivedAt, startedAt));
  }

  async #apply(summary: NewBlockSummary, receivedAt: number, startedAt: number): Promise<void> {
    const effects = await effectsOf(summary.transactions, summary.named, this.#o.analyzer);
    const outcome = this.ledger.append(
      {
        height: summary.block.height,
        indexBlockHash: summary.block.indexBlockHash,
        parentIndexBlockHash: summary.block.parentIndexBlockHash,
        touched: effects.touched,
        deployed: effects.deployed,
      },
      receivedAt,
    );
    for (const id of effects.deployed) await this.#o.onDeployed?.(id);
    this.#o.onApplied?.(outcome, effects.touched, performance.now() - startedAt, {
      height: summary.block.height,
      indexBlockHash: summary.block.indexBlockHash,
      parentIndexBlockHash: summary.block.parentIndexBlockHash,
      receivedAt,
      touched: effects.touched,
      deployed: effects.deployed,
    });
  }

  #enqueue(work: () => Promise<void>): void {
    this.#queue = this.#queue.then(work).catch((err: unknown) => {
      this.ledger.interrupt();
      this.#o.onError?.(err);
    });
  }
}
