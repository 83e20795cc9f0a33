/**
 * What the gateway knows of each network's chain tip: height, index block hash when known,
 * and when it learned it (extensions.md, section 1). Knowledge only moves forward: a lower
 * height (a lagging upstream) never replaces a higher one, so every reader sees a tip that
 * never goes back.
 *
 * This is the seam for chain-aware freshness (issue 11): upstream answers feed learn() (the
 * X-Canonical-Stacks-Tip-Height header, GET /v2/info), and the cache's freshness policy reads
 * current() for block bounds. Nothing feeds it yet.
 */
import type { Network } from '../config.js';

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
}

export class ChainTips {
  readonly #tips = new Map<Network, ChainTip>();
  readonly #now: () => number;

  /** now: clock in epoch ms, injectable for tests. */
  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /**
   * Record an observed tip. Returns true when the knowledge changed: a greater height, a
   * hash for the known height, or a fresher confirmation of it. A lower height is ignored.
   */
  learn(network: Network, seen: TipObservation): boolean {
    if (!Number.isSafeInteger(seen.height) || seen.height < 0) return false;
    const known = this.#tips.get(network);
    if (known !== undefined && seen.height < known.height) return false;
    const sameBlock = known !== undefined && seen.height === known.height;
    this.#tips.set(network, {
      height: seen.height,
      // The same height confirmed by a header alone keeps the hash learned before.
      indexBlockHash: seen.indexBlockHash ?? (sameBlock ? known.indexBlockHash : undefined),
      learnedAt: this.#now(),
    });
    return true;
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
