/**
 * Block freshness: how many blocks the chain has moved since an entry was read, and whether
 * that fits a request's bound (cacheControl.maxBlocks / CACHE_MAX_BLOCKS,
 * docs/freshness.md). Kept apart from the cache so the rule reads in one place; cache/policy.ts
 * applies it to entries.
 */

/**
 * Whether a value read at `readAt` still fits `maxBlocks` at tip `tip`. An unknown height on
 * either side fits no bound: the caller must go upstream, as if the entry were stale.
 */
export function withinBlocks(
  readAt: number | null | undefined,
  tip: number | undefined,
  maxBlocks: number,
): boolean {
  if (readAt === null || readAt === undefined || tip === undefined) return false;
  return tip - readAt <= maxBlocks;
}
