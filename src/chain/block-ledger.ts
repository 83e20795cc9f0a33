/**
 * The record of the blocks the event observer received (docs/events.md): a run of consecutive
 * blocks, each the child of the one before, with what each touched; and the proof asked of it,
 * "is an entry read at height h, depending on contracts D, still current at tip t?".
 *
 * Pure and synchronous: no I/O, no clock of its own (the caller says when). Bounded: the last
 * `maxBlocks` blocks are kept; an entry read before the oldest kept block has no proof.
 *
 * A run ends (and proofs for entries read before it end with it) when a block does not extend
 * it (a height gap, a parent that is not the known tip: a missed block or a reorg), when a
 * payload could not be used (it may have been a block), and at start-up (a restart). The
 * next block starts a new run; only entries read at or after that moment, at or above its
 * height (above it when the run began at a fork or after a gap), can be proven current.
 */

/** What a block touched: some contracts (by id), or everything (a transfer, an undecodable tx...). */
export type Touched =
  | { readonly all: true }
  | { readonly all: false; readonly contracts: ReadonlySet<string> };

export const TOUCHES_ALL: Touched = { all: true };

export interface ObservedBlock {
  readonly height: number;
  /** 64 lowercase hex digits, no 0x. */
  readonly indexBlockHash: string;
  readonly parentIndexBlockHash: string;
  readonly touched: Touched;
  /** Contracts deployed in this block. */
  readonly deployed: readonly string[];
}

export type AppendOutcome =
  /** The first block since start-up. */
  | 'started'
  /** The block extends the run. */
  | 'extended'
  /** This block was already recorded: nothing changes. */
  | 'duplicate'
  /** It did not extend the run (gap or reorg): the run ended and a new one starts with it. */
  | 'restarted';

/** What an entry depends on: the contracts it reaches, or volatile (only the plain rule applies). */
export type EntryDependencies = ReadonlySet<string> | 'volatile';

export interface EntryRead {
  /** Chain tip height the entry was read at. */
  readonly height: number;
  /** Epoch ms the entry was read (stored). */
  readonly readAt: number;
  readonly dependsOn: EntryDependencies;
}

export interface BlockLedgerOptions {
  /** Blocks kept (default 4096). */
  readonly maxBlocks?: number;
}

interface Run {
  readonly startedAt: number;
  readonly blocks: ObservedBlock[];
  /** The run is only the block /v2/info described (hold): its successor extends it. */
  held?: boolean;
  /**
   * The run began at a fork or after a gap: an entry read at its first block's height may
   * have been read on the other fork (a node that had not switched yet reports the same
   * height), so only entries read above it are proven.
   */
  afterBreak?: boolean;
}

/** A tip learned elsewhere than from the observer: what it touched is unknown. */
export interface HeldTip {
  readonly height: number;
  readonly indexBlockHash: string;
}

/** Index block hashes remembered for duplicate detection, beyond the run. */
const SEEN_LIMIT = 8192;

export class BlockLedger {
  readonly #maxBlocks: number;
  #run: Run | undefined;
  readonly #seen = new Set<string>();
  #breaks = 0;
  #generation = 0;

  constructor(options: BlockLedgerOptions = {}) {
    this.#maxBlocks = Math.max(1, options.maxBlocks ?? 4096);
  }

  /** The newest block of the current run. */
  get tip(): ObservedBlock | undefined {
    const blocks = this.#run?.blocks;
    return blocks?.[blocks.length - 1];
  }

  /** How many times a run ended (gaps, reorgs, unusable payloads). */
  get breaks(): number {
    return this.#breaks;
  }

  /**
   * Moves whenever anything recorded changes (a block, a break, a held tip): a proof's answer
   * for the same entry and tip holds while it stays the same.
   */
  get generation(): number {
    return this.#generation;
  }

  /**
   * The tip the gateway learned from a node's /v2/info (its index block hash derived from
   * stacks_tip and its consensus hash), at `now`: when no run is under way, it starts one, so
   * that the first observed block that is its child continues the proofs of entries read at
   * it (at start-up, before any block arrives). Nothing is known of what it touched, which
   * matters not: only blocks after an entry's height are asked. Returns whether it was held.
   */
  hold(tip: HeldTip, now: number): boolean {
    if (this.#run !== undefined) return false;
    this.#generation++;
    const block: ObservedBlock = { ...tip, parentIndexBlockHash: '', touched: TOUCHES_ALL, deployed: [] };
    this.#run = { startedAt: now, blocks: [block], held: true };
    return true;
  }

  /** Records a block received at `now` (epoch ms). */
  append(block: ObservedBlock, now: number): AppendOutcome {
    if (this.#seen.has(block.indexBlockHash)) return 'duplicate';
    this.#remember(block.indexBlockHash);
    this.#generation++;
    const tip = this.tip;
    const held = this.#run?.held === true;
    if (held) this.#run!.held = false;
    // The held tip itself, now observed: the same run goes on with what the block touched.
    if (
      held &&
      tip !== undefined &&
      block.indexBlockHash === tip.indexBlockHash &&
      block.height === tip.height
    ) {
      this.#run!.blocks[0] = block;
      return 'extended';
    }
    if (
      tip !== undefined &&
      block.height === tip.height + 1 &&
      block.parentIndexBlockHash === tip.indexBlockHash
    ) {
      const blocks = this.#run!.blocks;
      blocks.push(block);
      if (blocks.length > this.#maxBlocks) blocks.splice(0, blocks.length - this.#maxBlocks);
      return 'extended';
    }
    // A held tip that the first observed block does not follow is no break: nothing observed ended.
    const first = (this.#run === undefined || (held && this.#run.blocks.length === 1)) && this.#breaks === 0;
    if (this.#run !== undefined && !first) this.#breaks++;
    this.#run = first
      ? { startedAt: now, blocks: [block] }
      : { startedAt: now, blocks: [block], afterBreak: true };
    return first ? 'started' : 'restarted';
  }

  /** Something that may have been a block was lost (an unusable payload): every proof ends. */
  interrupt(): void {
    this.#generation++;
    if (this.#run !== undefined) this.#breaks++;
    this.#run = undefined;
  }

  /**
   * True when an entry read at `read.height` (at `read.readAt`) is provably current at tip
   * `tipHeight`: it is not volatile, it was read during the current run at or above the run's
   * first block, the run holds every block up to `tipHeight`, and none of the blocks after
   * its height touched what it depends on.
   */
  current(read: EntryRead, tipHeight: number): boolean {
    if (read.dependsOn === 'volatile') return false;
    const run = this.#run;
    if (run === undefined || read.readAt < run.startedAt) return false;
    const blocks = run.blocks;
    const first = blocks[0]!;
    const last = blocks[blocks.length - 1]!;
    if (tipHeight > last.height || read.height < first.height) return false;
    if (run.afterBreak === true && read.height === first.height) return false;
    if (read.height >= tipHeight) return true;
    for (let height = read.height + 1; height <= tipHeight; height++) {
      const block = blocks[height - first.height]!;
      if (touches(block.touched, read.dependsOn)) return false;
    }
    return true;
  }

  #remember(hash: string): void {
    this.#seen.add(hash);
    if (this.#seen.size > SEEN_LIMIT) {
      const oldest = this.#seen.values().next().value;
      if (oldest !== undefined) this.#seen.delete(oldest);
    }
  }
}

function touches(touched: Touched, dependsOn: ReadonlySet<string>): boolean {
  if (touched.all) return true;
  for (const id of dependsOn) if (touched.contracts.has(id)) return true;
  return false;
}
