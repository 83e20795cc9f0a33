/**
 * RFC 9211 `Cache-Status` and RFC 9111 `Age` for an answer that went through the cache.
 *   hit                      -> `clarity-cache; hit; ttl=<seconds left>` (ttl only when finite)
 *   miss                     -> `clarity-cache; fwd=miss[; stored][; ttl=N]`
 *   coalesced miss           -> `clarity-cache; fwd=miss; collapsed[; stored]`
 *   bustCache (bypass)       -> `clarity-cache; fwd=request[; stored]`
 *   stale entry refetched    -> `clarity-cache; fwd=stale[; collapsed][; stored][; ttl=N]`
 *   stale-while-revalidate   -> `clarity-cache; hit; ttl=-<seconds stale>; detail=stale-while-revalidate`
 *   stale-if-error           -> `clarity-cache; fwd=stale; ttl=-<seconds stale>; detail=stale-if-error`
 *
 * A negative ttl is RFC 9211's way of saying how long ago the answer stopped being fresh. A
 * stale-if-error answer went forward (the refetch failed), so it says fwd=stale, not hit.
 */

import type { CacheEntry } from '../cache/entry.js';
import type { CacheView } from '../cache/view.js';

export type { CacheView } from '../cache/view.js';

export const CACHE_NAME = 'clarity-cache';

export function cacheHeaders(view: CacheView, now = Date.now()): { 'cache-status': string; age: string } {
  if (view.outcome === 'hit' && view.entry !== undefined) {
    const { storedAt, staleAt } = view.entry;
    const age = String(Math.max(0, Math.floor((now - storedAt) / 1000)));
    if (view.stale === 'while-revalidate' || view.stale === 'if-error') {
      const staleFor = Math.max(0, Math.floor((now - (view.staleSince ?? now)) / 1000));
      const ttl = staleFor === 0 ? '0' : `-${staleFor}`;
      const head = view.stale === 'if-error' ? 'fwd=stale' : 'hit';
      return {
        'cache-status': `${CACHE_NAME}; ${head}; ttl=${ttl}; detail=stale-${view.stale}`,
        age,
      };
    }
    // RFC 9211 ttl: the freshness left, which ends at staleAt (equal to expiresAt without a stale window).
    const ttl = staleAt === null ? '' : `; ttl=${Math.max(0, Math.floor((staleAt - now) / 1000))}`;
    return { 'cache-status': `${CACHE_NAME}; hit${ttl}`, age };
  }
  const fwd = view.outcome === 'bypass' ? 'request' : view.stale === 'refetch' ? 'stale' : 'miss';
  const collapsed = view.outcome === 'coalesced' ? '; collapsed' : '';
  const stored = view.stored ? '; stored' : '';
  const ttl = view.stored && view.ttlMs !== undefined ? `; ttl=${Math.floor(view.ttlMs / 1000)}` : '';
  return { 'cache-status': `${CACHE_NAME}; fwd=${fwd}${collapsed}${stored}${ttl}`, age: '0' };
}

/**
 * The hit headers of one entry as flat name/value pairs (and the tip it tells, when it moves
 * with the chain), for an answer replayed many times a second: the same array object while Age and ttl have not moved to another whole second, so a
 * replay builds no text (the fast lane also keeps its joined header list by that identity).
 */
export function hitHeaderPairs(
  entry: CacheEntry,
  tipHeight?: () => number | undefined,
): (now: number) => readonly string[] {
  let age = Number.NaN;
  let ttl = Number.NaN;
  let tip: number | undefined;
  let pairs: readonly string[] = [];
  return (now) => {
    const a = Math.floor((now - entry.storedAt) / 1000);
    const t = entry.staleAt === null ? 0 : Math.floor((entry.staleAt - now) / 1000);
    const h = tipHeight?.();
    if (a !== age || t !== ttl || h !== tip || pairs.length === 0) {
      const c = cacheHeaders({ outcome: 'hit', entry, stored: false, ttlMs: undefined }, now);
      pairs =
        h === undefined
          ? ['cache-status', c['cache-status'], 'age', c.age]
          : ['cache-status', c['cache-status'], 'age', c.age, TIP_HEIGHT_HEADER, String(h)];
      age = a;
      ttl = t;
      tip = h;
    }
    return pairs;
  };
}

/** The tip height an answer was read at, or is current at (docs/freshness.md). */
export const TIP_HEIGHT_HEADER = 'x-canonical-stacks-tip-height';
