/**
 * What the cache did for one answer, as values: the outcome, the entry served, whether the
 * answer was stored, and its staleness. Services return it; src/http turns it into
 * `Cache-Status` and `Age` (and an error answered from a cache carries it too, so it sits
 * below the error table).
 */
import type { CacheEntry, EntryMeta } from './entry.js';
import type { CacheOutcome, StaleServing } from './read-through.js';

export interface CacheView {
  readonly outcome: CacheOutcome;
  readonly entry?: CacheEntry | undefined;
  readonly stored: boolean;
  readonly ttlMs: number | undefined;
  readonly stale?: StaleServing | undefined;
  /** For a stale answer: when the entry stopped being fresh (epoch ms). */
  readonly staleSince?: number | undefined;
  /** For a load: what its entry records (the votes of an attested answer among it). */
  readonly meta?: EntryMeta | undefined;
}

/**
 * How many upstreams attested the answer (docs/consensus.md): the served entry's votes, or the
 * load's; undefined when it is one upstream's word.
 */
export function votesOf(view: CacheView): number | undefined {
  return view.entry?.votes ?? view.meta?.votes;
}
