/**
 * Freshness: classify an entry for one request as fresh (serve it), stale (still held; may
 * be served only under a stale-serving rule) or expired (as good as absent).
 *
 * An entry is fresh until its ttl ends (staleAt), stale while it is kept after that, and
 * expired after expiresAt. The block bound (cacheControl.maxBlocks, docs/freshness.md)
 * is a requirement of the reading request, judged against the entry's tipHeight and the
 * gateway's current tip (src/chain/); the read-through cache passes both.
 */
import { withinBlocks } from '../chain/freshness.js';
import type { CacheEntry } from './entry.js';

export type Freshness = 'fresh' | 'stale' | 'expired';

/** What the reading request requires of an entry, beyond its ttl. */
export interface FreshnessRequirement {
  /** Most blocks the chain may have advanced since the entry was read; undefined = no bound. */
  readonly maxBlocks?: number | undefined;
  /** The current tip height of the entry's network, when known. */
  readonly tipHeight?: number | undefined;
}

export function classify(
  entry: Pick<CacheEntry, 'staleAt' | 'expiresAt' | 'tipHeight'>,
  now: number,
  requirement?: FreshnessRequirement,
): Freshness {
  if (entry.expiresAt !== null && entry.expiresAt <= now) return 'expired';
  if (entry.staleAt !== null && entry.staleAt <= now) return 'stale';
  const maxBlocks = requirement?.maxBlocks;
  if (maxBlocks !== undefined && !withinBlocks(entry.tipHeight, requirement?.tipHeight, maxBlocks)) {
    return 'stale';
  }
  return 'fresh';
}
