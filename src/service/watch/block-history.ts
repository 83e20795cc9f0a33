/**
 * The blocks one network's watch has learned, for `Last-Event-ID` (docs/watch.md): whether the
 * block a client last heard of is on the chain the gateway holds now, was replaced by a reorg,
 * or is unknown (before a restart, or further back than remembered).
 *
 * A block at height h replaces whatever was held at h and above (a reorg, or a tip that
 * went back); a block whose parent is known and differs from the block held below it means
 * the chain below changed too, and nothing held can then be vouched for.
 */
import type { WatchBlock } from './types.js';

export type BlockStanding = 'canonical' | 'not-canonical' | 'unknown';

/** Blocks remembered (about a day of Stacks blocks at their fastest). */
const REMEMBERED = 16_384;

export class BlockHistory {
  /** The chain held: height → index block hash. */
  readonly #chain = new Map<number, string>();
  /** Every block learned, canonical or not: hash → height (insertion order = age). */
  readonly #seen = new Map<string, number>();
  #top = -1;

  add(block: WatchBlock): void {
    const { height, indexBlockHash: hash, parentIndexBlockHash: parent } = block;
    this.#seen.delete(hash);
    this.#seen.set(hash, height);
    if (this.#seen.size > REMEMBERED) this.#seen.delete(this.#seen.keys().next().value!);
    const below = this.#chain.get(height - 1);
    if (parent !== undefined && parent !== '' && below !== undefined && below !== parent) {
      this.#chain.clear();
    } else {
      for (let h = height; h <= this.#top; h++) this.#chain.delete(h);
    }
    this.#chain.set(height, hash);
    this.#top = height;
    if (this.#chain.size > REMEMBERED) this.#chain.delete(this.#chain.keys().next().value!);
  }

  standing(height: number, hash: string): BlockStanding {
    if (this.#chain.get(height) === hash) return 'canonical';
    // A known hash named with another height is no block the gateway saw.
    return this.#seen.get(hash) === height ? 'not-canonical' : 'unknown';
  }
}
