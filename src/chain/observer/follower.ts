/**
 * What the observer does with the payloads the node posts, once they are answered
 * (docs/events.md): a usable /new_block moves the network's tip at once and, after its
 * transactions are decoded, is recorded in the block ledger with what it touched; the same
 * block twice changes nothing; a payload that cannot be used ends every proof as a missed
 * block would. Payloads are handled one at a time, in the order they arrived.
 */
import type { DependencyAnalyzer } from '../../clarity/analysis/index.js';
import type { Network } from '../../network.js';
import type { AppendOutcome, BlockLedger, Touched } from '../block-ledger.js';
import { firstError, newBlockCheck, newBurnBlockCheck, normalizeHash } from './schemas.js';
import { blockEffects } from './touched.js';

export interface FollowedBlock {
  readonly height: number;
  readonly indexBlockHash: string;
  readonly receivedAt: number;
}

export interface ChainFollowerHooks {
  /** A usable new block: move the tip (and announce it to the other instances). */
  readonly onTip: (block: FollowedBlock) => void;
  /** A payload could not be used: why (for the log and clarity_cache_observer_rejected_total). */
  readonly onRejected?: (route: string, reason: string) => void;
  /** A block applied to the ledger, with what it touched and how long it took to handle (ms). */
  readonly onApplied?: (outcome: AppendOutcome, touched: Touched, handlingMs: number) => void;
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
}

/** Index block hashes remembered for "the same block twice" while still being applied. */
const SEEN_LIMIT = 8192;

export class ChainFollower {
  readonly network: Network;
  readonly ledger: BlockLedger;
  readonly #o: ChainFollowerOptions;
  readonly #now: () => number;
  readonly #seen = new Set<string>();
  #queue: Promise<void> = Promise.resolve();
  #last: FollowedBlock | undefined;
  #handled = 0;
  #waiters: { count: number; resolve: () => void }[] = [];

  constructor(options: ChainFollowerOptions) {
    this.#o = options;
    this.network = options.network;
    this.ledger = options.ledger;
    this.#now = options.now ?? Date.now;
  }

  /** The last usable block received (for /ready). */
  get lastBlock(): FollowedBlock | undefined {
    return this.#last;
  }

  /** Resolves once every payload handed in so far is applied (tests, shutdown). */
  idle(): Promise<void> {
    return this.#queue;
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

  #count(): void {
    this.#handled++;
    const ready = this.#waiters.filter((w) => w.count <= this.#handled);
    if (ready.length === 0) return;
    this.#waiters = this.#waiters.filter((w) => w.count > this.#handled);
    for (const w of ready) w.resolve();
  }

  /** A POST /new_block body, as read (bytes). */
  newBlock(body: Buffer | undefined): void {
    try {
      this.#newBlock(body);
    } finally {
      this.#count();
    }
  }

  #newBlock(body: Buffer | undefined): void {
    const startedAt = performance.now();
    const parsed = parse(body);
    if (!parsed.ok) {
      this.reject('/new_block', parsed.reason);
      return;
    }
    if (!newBlockCheck.Check(parsed.value)) {
      this.reject('/new_block', firstError(newBlockCheck, parsed.value));
      return;
    }
    const payload = parsed.value;
    const indexBlockHash = normalizeHash(payload.index_block_hash);
    if (this.#seen.has(indexBlockHash)) {
      this.#o.onDuplicate?.();
      return;
    }
    this.#seen.add(indexBlockHash);
    if (this.#seen.size > SEEN_LIMIT) this.#seen.delete(this.#seen.values().next().value!);
    const receivedAt = this.#now();
    const block: FollowedBlock = { height: payload.block_height, indexBlockHash, receivedAt };
    this.#last = block;
    this.#o.onTip(block);
    this.#enqueue(async () => {
      const effects = await blockEffects(payload, this.#o.analyzer);
      const outcome = this.ledger.append(
        {
          height: payload.block_height,
          indexBlockHash,
          parentIndexBlockHash: normalizeHash(payload.parent_index_block_hash),
          touched: effects.touched,
          deployed: effects.deployed,
        },
        receivedAt,
      );
      for (const id of effects.deployed) await this.#o.onDeployed?.(id);
      this.#o.onApplied?.(outcome, effects.touched, performance.now() - startedAt);
    });
  }

  /** A POST /new_burn_block body: checked (an unusable one ends proofs), otherwise nothing to do. */
  newBurnBlock(body: Buffer | undefined): void {
    this.#count();
    const parsed = parse(body);
    if (!parsed.ok) this.reject('/new_burn_block', parsed.reason);
    else if (!newBurnBlockCheck.Check(parsed.value))
      this.reject('/new_burn_block', firstError(newBurnBlockCheck, parsed.value));
  }

  /** A payload the gateway could not use (or could not even read): every proof ends. */
  reject(route: string, reason: string): void {
    this.#o.onRejected?.(route, reason);
    this.#enqueue(async () => this.ledger.interrupt());
  }

  /** A body that could not even be read (too large, cut off): rejected, and counted as handed in. */
  unreadable(route: string, reason: string): void {
    this.reject(route, reason);
    this.#count();
  }

  #enqueue(work: () => Promise<void>): void {
    this.#queue = this.#queue.then(work).catch((err: unknown) => {
      this.ledger.interrupt();
      this.#o.onError?.(err);
    });
  }
}

function parse(body: Buffer | undefined): { ok: true; value: unknown } | { ok: false; reason: string } {
  if (body === undefined || body.length === 0) return { ok: false, reason: 'empty body' };
  try {
    return { ok: true, value: JSON.parse(body.toString('utf8')) };
  } catch {
    return { ok: false, reason: 'not JSON' };
  }
}
