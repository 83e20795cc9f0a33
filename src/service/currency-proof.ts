/**
 * The event observer's proof that a cached latest-state answer is still current
 * (docs/events.md): the one proof policy of every service that answers from the cache, the
 * read-only service (its endpoint, call-read, batch items) and the node routes alike. A
 * service asks forRead() for the proof of one read and hands it to the judge
 * (src/cache/judge.ts ProofView), which alone decides with it: whether the entry is fresh
 * past its block bound, and which tip it is current at.
 *
 * - Which reads it applies to: latest-state reads of the observer's network; never a read
 *   pinned to a block (its answer never changes anyway).
 * - What an answer depends on: a function's reach comes from the dependency analysis, started
 *   once per function in the background (known by the next block; until then the plain block
 *   rule applies); a data var, map entry or constant depends on its own contract. Anything of
 *   a boot contract is volatile: the node writes their state with no transaction.
 * - Only an entry whose height its own node reported (CacheEntry.tipReported) can be proven:
 *   a height the gateway filled in from its own tip knowledge may be ahead of the state the
 *   node actually read.
 * - The tip an answer tells is the judge's verdict: the tip the entry is proven current at,
 *   else the height it was read at (X-Canonical-Stacks-Tip-Height on every path, a replayed
 *   hit included).
 */
import type { CacheEntry } from '../cache/entry.js';
import type { ProofView } from '../cache/judge.js';
import type { EntryDependencies, EntryRead } from '../chain/block-ledger.js';
import { isBootContract } from '../clarity/analysis/index.js';
import type { Network } from '../network.js';

/** What the event observer offers, for one network (src/chain/observer/start.ts). */
export interface CurrencyProofPort {
  readonly network: Network;
  /** The contracts a function reaches, or 'volatile' (the dependency analysis). */
  dependsOn(contractId: string, functionName: string): Promise<EntryDependencies>;
  /** Whether an entry read at `read.height` is current at `tipHeight` (the block ledger). */
  current(read: EntryRead, tipHeight: number): boolean;
  /** Moves whenever the ledger records anything: answers for the same tip hold while it stays. */
  generation(): number;
  /** Moves whenever a deploy is learned: what functions depend on may have changed (dependsOn). */
  analysisVersion(): number;
  /** The contracts learned since an analysis version; undefined when not remembered that far. */
  learnedSince(version: number): readonly string[] | undefined;
  /** Told each time a proof kept an entry current (metrics). */
  onKeptCurrent?(): void;
}

/** Functions whose dependencies are remembered (each is a few contract ids). */
const MAX_REMEMBERED = 10_000;

/**
 * How long a function found volatile is taken as such before it is asked again: volatile may
 * mean "a source could not be had" (a contract not deployed yet, an upstream down), and
 * answering volatile meanwhile is always safe (it proves nothing).
 */
const VOLATILE_RECHECK_MS = 10_000;

interface Remembered {
  /** undefined while the analysis is under way. */
  deps: EntryDependencies | undefined;
  /** The analysis version it holds at. */
  version: number;
  /** When it was asked (epoch ms). */
  readonly at: number;
}

export class CurrencyProof {
  readonly network: Network;
  readonly #port: CurrencyProofPort;
  readonly #functions = new Map<string, Remembered>();

  constructor(port: CurrencyProofPort) {
    this.#port = port;
    this.network = port.network;
  }

  /**
   * What an answer of `contractId` depends on when known now: with a function, its analysed
   * reach (the analysis starts, once, when unknown: undefined this time); without, the
   * contract itself.
   */
  dependencies(contractId: string, functionName?: string): EntryDependencies | undefined {
    if (isBootContract(contractId)) return 'volatile';
    if (functionName === undefined) return new Set([contractId]);
    const id = `${contractId}::${functionName}`;
    const version = this.#port.analysisVersion();
    const known = this.#functions.get(id);
    if (known === undefined) return this.#ask(id, contractId, functionName, version);
    if (known.version !== version) {
      // A deploy learned since may change the answer: one that found a contract missing
      // (volatile, or still under way), or one that reached the contract deployed (a reorg can
      // deploy a name again with other code). Those are asked again, proving nothing meanwhile;
      // the others still hold.
      const learned = this.#port.learnedSince(known.version);
      const deps = known.deps;
      if (
        learned === undefined ||
        deps === undefined ||
        deps === 'volatile' ||
        learned.some((c) => deps.has(c))
      )
        return this.#ask(id, contractId, functionName, version);
      known.version = version;
    }
    if (known.deps === 'volatile' && Date.now() - known.at >= VOLATILE_RECHECK_MS) {
      this.#ask(id, contractId, functionName, version);
      return 'volatile';
    }
    return known.deps;
  }

  /** Starts the analysis of one function; `undefined` (nothing proven) until it answers. */
  #ask(id: string, contractId: string, functionName: string, version: number): undefined {
    if (this.#functions.size >= MAX_REMEMBERED) this.#functions.clear();
    const asked: Remembered = {
      deps: this.#functions.get(id)?.deps === 'volatile' ? 'volatile' : undefined,
      version,
      at: Date.now(),
    };
    this.#functions.set(id, asked);
    this.#port.dependsOn(contractId, functionName).then(
      (found) => {
        if (this.#functions.get(id) === asked) asked.deps = found;
      },
      () => {
        if (this.#functions.get(id) === asked) this.#functions.delete(id);
      },
    );
    return undefined;
  }

  /**
   * The proof for the answers of one read (the judge's Requirements.proof), or undefined when
   * none applies: a read of another network than the observer's, or one pinned to a block.
   * With `functionName`, an answer depends on what that function reaches; without, on its
   * contract alone. Asked at once, so that a first answer starts the analysis of what it
   * depends on and it is known by the next block.
   *
   * The judge asks it at every answer of the read (its replays included): its answer for one
   * entry holds while the tip and the ledger stay where they were, so it is worked out again
   * only when either moved.
   */
  forRead(
    network: Network,
    pinned: boolean,
    contractId: string,
    functionName?: string,
  ): ProofView | undefined {
    if (network !== this.network || pinned) return undefined;
    this.dependencies(contractId, functionName);
    const port = this.#port;
    let lastEntry: CacheEntry | undefined;
    let lastTip = -1;
    let lastGeneration = -1;
    let held = false;
    return {
      holds: (entry, tipHeight) => {
        const generation = port.generation();
        if (entry !== lastEntry || tipHeight !== lastTip || generation !== lastGeneration) {
          lastEntry = entry;
          lastTip = tipHeight;
          lastGeneration = generation;
          held = this.#holds(entry, this.dependencies(contractId, functionName), tipHeight);
        }
        return held;
      },
      keptFresh: () => port.onKeptCurrent?.(),
    };
  }

  /**
   * Whether an answer of a function read at `since` (the height it was read at, when) is
   * provably still its answer at `tipHeight`: no block after it touched what the function
   * reaches. False while the reach is unknown (its analysis under way). A watched read is not
   * evaluated again at a block this holds for.
   */
  unchangedSince(
    contractId: string,
    functionName: string,
    since: { readonly height: number; readonly readAt: number },
    tipHeight: number,
  ): boolean {
    const deps = this.dependencies(contractId, functionName);
    if (deps === undefined) return false;
    return this.#port.current({ height: since.height, readAt: since.readAt, dependsOn: deps }, tipHeight);
  }

  #holds(entry: CacheEntry, deps: EntryDependencies | undefined, tipHeight: number): boolean {
    if (deps === undefined || entry.tipHeight === null || entry.tipReported !== true) return false;
    return this.#port.current(
      { height: entry.tipHeight, readAt: entry.storedAt, dependsOn: deps },
      tipHeight,
    );
  }
}
