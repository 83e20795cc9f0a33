/**
 * What the gateway knows of each network's chain tip: height, index block hash when known,
 * and when it learned it (docs/freshness.md). Knowledge only moves forward: a lower
 * height (a lagging upstream) never replaces a higher one, so every reader sees a tip that
 * never goes back.
 *
 * Upstream answers feed learn() (the X-Canonical-Stacks-Tip-Height header, GET /v2/info, or
 * another instance's knowledge through Redis), through ChainTracker (tracker.ts); the cache's
 * freshness policy reads the height for block bounds, and firstLearnedAt() for the start of a
 * stale window (docs/freshness.md: "the moment the gateway first learned of a tip that
 * broke the bound").
 */
import type { Network } from '../network.js';

export interface ChainTip {
  readonly height: number;
  /** 64 lowercase hex digits, when learned from /v2/info; absent from a header alone. */
  readonly indexBlockHash?: string | undefined;
  /** Epoch ms when this knowledge was learned (or last confirmed). */
  readonly learnedAt: number;
}

export interface TipObservation {
  readonly height: number;
  readonly indexBlockHash?: string | undefined;
  /** When it was learned, if earlier than now (another instance's knowledge); default now. */
  readonly learnedAt?: number | undefined;
}

/** Moments of the first sightings of greater heights kept per network (a few hours of blocks). */
const HISTORY_LIMIT = 4096;

interface Sighting {
  readonly height: number;
  readonly at: number;
}

/** Whether a height could be a Stacks tip at all: an integer in [0, 2^31). */
export function possibleHeight(height: number): boolean {
  return Number.isInteger(height) && height >= 0 && height < 2 ** 31;
}

export class ChainTips {
  readonly #tips = new Map<Network, ChainTip>();
  /** Per network, ascending heights with the moment each was first learned. */
  readonly #history = new Map<Network, Sighting[]>();
  readonly #now: () => number;

  readonly #maxAdvance: number;

  /**
   * now: clock in epoch ms, injectable for tests. maxAdvance: CHAIN_TIP_MAX_ADVANCE, the most
   * blocks (plus one per second elapsed) a report may be above the tip believed so far.
   */
  constructor(now: () => number = Date.now, maxAdvance = 30) {
    this.#now = now;
    this.#maxAdvance = maxAdvance;
  }

  /**
   * Whether a reported height may be believed (docs/freshness.md): an integer in [0, 2^31), at
   * most CHAIN_TIP_MAX_ADVANCE blocks, plus one per second elapsed, above the tip believed so
   * far. An implausible height never moves the tip, whoever reports it (an upstream's header or
   * /v2/info, another instance through Redis).
   */
  plausible(network: Network, height: number): boolean {
    if (!possibleHeight(height)) return false;
    const known = this.#tips.get(network);
    if (known === undefined) return true;
    const elapsedS = Math.max(0, Math.floor((this.#now() - known.learnedAt) / 1000));
    return height <= known.height + this.#maxAdvance + elapsedS;
  }

  /**
   * Record an observed tip. Returns true when the knowledge changed: a greater height, a
   * hash for the known height, or a fresher confirmation of it. A lower height is ignored.
   */
  learn(network: Network, seen: TipObservation): boolean {
    if (!this.plausible(network, seen.height)) return false;
    const known = this.#tips.get(network);
    if (known !== undefined && seen.height < known.height) return false;
    const sameBlock = known !== undefined && seen.height === known.height;
    const now = this.#now();
    const learnedAt = Math.min(now, seen.learnedAt ?? now);
    // Knowledge already newer than this report (same height) is not made older by it.
    if (sameBlock && seen.indexBlockHash === undefined && learnedAt <= known.learnedAt) return false;
    this.#tips.set(network, {
      height: seen.height,
      // The same height confirmed by a header alone keeps the hash learned before.
      indexBlockHash: seen.indexBlockHash ?? (sameBlock ? known.indexBlockHash : undefined),
      learnedAt: sameBlock ? Math.max(learnedAt, known.learnedAt) : learnedAt,
    });
    if (!sameBlock) this.#remember(network, seen.height, learnedAt);
    return true;
  }

  #remember(network: Network, height: number, at: number): void {
    let history = this.#history.get(network);
    if (history === undefined) {
      history = [];
      this.#history.set(network, history);
    }
    history.push({ height, at });
    if (history.length > HISTORY_LIMIT) history.splice(0, history.length - HISTORY_LIMIT);
  }

  /**
   * When this gateway first learned of a tip at or above `height` on network: the moment a
   * block bound that needs the tip below `height` broke. Undefined while no such tip is known.
   * Past the kept history, the oldest kept moment (a later one: a window never starts early).
   */
  firstLearnedAt(network: Network, height: number): number | undefined {
    const history = this.#history.get(network);
    if (history === undefined) return undefined;
    // Heights ascend: binary search for the first sighting at or above height.
    let lo = 0;
    let hi = history.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (history[mid]!.height >= height) hi = mid;
      else lo = mid + 1;
    }
    return history[lo]?.at;
  }

  /**
   * Forget what is known of network (its chain changed: a reset or another chain): the next
   * tip learned starts afresh, and heights may go down.
   */
  forget(network: Network): void {
    this.#tips.delete(network);
    this.#history.delete(network);
  }

  /** The known tip, however old; undefined before anything was learned. */
  current(network: Network): ChainTip | undefined {
    return this.#tips.get(network);
  }

  /** The known tip if learned within maxAgeMs (CHAIN_TIP_MAX_AGE_MS), else undefined. */
  fresh(network: Network, maxAgeMs: number): ChainTip | undefined {
    const tip = this.#tips.get(network);
    return tip !== undefined && this.#now() - tip.learnedAt <= maxAgeMs ? tip : undefined;
  }
}
