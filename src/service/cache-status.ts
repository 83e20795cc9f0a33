/**
 * RFC 9211 `Cache-Status` and RFC 9111 `Age` for an answer that went through the cache.
 *   hit                      -> `clarity-cache; hit; ttl=<seconds left>` (ttl only when finite)
 *   miss                     -> `clarity-cache; fwd=miss[; stored][; ttl=N]`
 *   coalesced miss           -> `clarity-cache; fwd=miss; collapsed[; stored]`
 *   bustCache (bypass)       -> `clarity-cache; fwd=request[; stored]`
 */

import type { CacheEntry } from '../cache/entry.js';
import type { CacheOutcome } from '../cache/read-through.js';

export const CACHE_NAME = 'clarity-cache';

export interface CacheView {
  readonly outcome: CacheOutcome;
  readonly entry?: CacheEntry | undefined;
  readonly stored: boolean;
  readonly ttlMs: number | undefined;
}

export function cacheHeaders(view: CacheView, now = Date.now()): { 'cache-status': string; age: string } {
  if (view.outcome === 'hit' && view.entry !== undefined) {
    // RFC 9211 ttl: the freshness left, which ends at staleAt (equal to expiresAt without a stale window).
    const { storedAt, staleAt } = view.entry;
    const ttl = staleAt === null ? '' : `; ttl=${Math.max(0, Math.floor((staleAt - now) / 1000))}`;
    return {
      'cache-status': `${CACHE_NAME}; hit${ttl}`,
      age: String(Math.max(0, Math.floor((now - storedAt) / 1000))),
    };
  }
  const fwd = view.outcome === 'bypass' ? 'request' : 'miss';
  const collapsed = view.outcome === 'coalesced' ? '; collapsed' : '';
  const stored = view.stored ? '; stored' : '';
  const ttl = view.stored && view.ttlMs !== undefined ? `; ttl=${Math.floor(view.ttlMs / 1000)}` : '';
  return { 'cache-status': `${CACHE_NAME}; fwd=${fwd}${collapsed}${stored}${ttl}`, age: '0' };
}
