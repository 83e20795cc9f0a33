/**
 * The one judge of freshness (docs/freshness.md): may this stored entry be served for this
 * request, now? A pure function of the entry, the request's requirements, a read-only view of
 * the chain and the clock. Every path that answers from a store (read-through hits, the
 * cross-instance coalescer's read, stale-while-revalidate, stale-if-error, replays of a hit,
 * batch items and node routes, which all go through the read-through cache) asks it at the
 * moment it answers, and Cache-Status is derived from its verdict.
 *
 * - fresh: within its ttl and its block bound (or proven current by the event observer), and
 *   of the chain the upstreams report now;
 * - stale: no longer fresh since `since`; it may be answered at once under
 *   stale-while-revalidate, or when the refetch fails transiently under stale-if-error, each
 *   only inside its window counted from `since` (windows are capped to CACHE_STALE_MAX_S
 *   before they get here);
 * - unusable: gone (past its retention) or of another chain: as good as absent.
 */
import type { CacheEntry } from './entry.js';

/**
 * What the judge may know of the entry's chain: a port that src/chain implements, so that the
 * cache never reaches into the chain's state and the chain never imports the cache.
 */
export interface TipView {
  /** The tip height believed now (knowledge within CHAIN_TIP_MAX_AGE_MS); undefined when it cannot be learned. */
  readonly height: number | undefined;
  /** The last tip believed, however old, and when that knowledge stopped counting. */
  readonly last?: { readonly height: number; readonly expiredAt: number } | undefined;
  /** When a tip at or above `height` was first learned (when a block bound broke). */
  firstLearnedAt(height: number): number | undefined;
  /**
   * Whether a height an entry records may be believed (CHAIN_TIP_MAX_ADVANCE): one that may
   * not counts as unknown, so it fits no block bound (absent: every height is believed).
   */
  plausible?(height: number): boolean;
}

/** What the reading request requires of an entry. */
export interface Requirements {
  /** Most blocks the chain may have moved since the entry was read; undefined = no bound. */
  readonly maxBlocks?: number | undefined;
  /** stale-while-revalidate window, ms (0 or undefined = off). */
  readonly staleWhileRevalidateMs?: number | undefined;
  /** stale-if-error window, ms (0 or undefined = off). */
  readonly staleIfErrorMs?: number | undefined;
  /** The chain identity the upstreams report now; undefined while unknown. */
  readonly chain?: string | undefined;
  /** The event observer's proof that an entry read blocks ago is unchanged at `tipHeight`. */
  readonly currentByProof?: ((entry: CacheEntry, tipHeight: number) => boolean) | undefined;
}

export type Verdict =
  | { readonly use: 'fresh' }
  | {
      readonly use: 'stale';
      /** Epoch ms when the entry stopped being fresh. */
      readonly since: number;
      /** May be answered now while one refresh runs (stale-while-revalidate). */
      readonly whileRevalidate: boolean;
      /** May be answered if the refetch fails transiently (stale-if-error). */
      readonly ifError: boolean;
    }
  | { readonly use: 'unusable'; readonly why: 'expired' | 'other-chain' };

export const FRESH: Verdict = { use: 'fresh' };

export function judge(entry: CacheEntry, req: Requirements, tip: TipView | undefined, now: number): Verdict {
  if (entry.expiresAt !== null && entry.expiresAt <= now) return { use: 'unusable', why: 'expired' };
  if (typeof entry.chain === 'string' && req.chain !== undefined && entry.chain !== req.chain) {
    return { use: 'unusable', why: 'other-chain' };
  }
  const since = staleSince(entry, req, tip, now);
  if (since === undefined) return FRESH;
  return {
    use: 'stale',
    since,
    whileRevalidate: within(req.staleWhileRevalidateMs, since, now),
    ifError: within(req.staleIfErrorMs, since, now),
  };
}

/** When the entry stopped being fresh for this request; undefined while it is fresh. */
function staleSince(
  entry: CacheEntry,
  req: Requirements,
  tip: TipView | undefined,
  now: number,
): number | undefined {
  if (entry.staleAt !== null && entry.staleAt <= now) return entry.staleAt;
  const maxBlocks = req.maxBlocks;
  if (maxBlocks === undefined) return undefined;
  // Read at an unknown (or unbelievable) height: it fits no block bound, and never did.
  if (entry.tipHeight === null || tip?.plausible?.(entry.tipHeight) === false) {
    return Math.min(now, entry.storedAt);
  }
  const readAt = entry.tipHeight;
  const brokeAt = readAt + maxBlocks + 1;
  const height = tip?.height;
  if (height !== undefined) {
    if (height - readAt <= maxBlocks) return undefined;
    if (req.currentByProof?.(entry, height) === true) return undefined;
    return Math.min(now, tip?.firstLearnedAt(brokeAt) ?? now);
  }
  // The tip cannot be learned now: stale since the knowledge that last showed the entry fresh
  // stopped counting, or since a tip past its bound was learned; with no knowledge at all,
  // since it was stored. Never "since now": a window must not reopen while the tip is unknown.
  const last = tip?.last;
  if (last === undefined) return Math.min(now, entry.storedAt);
  if (last.height - readAt <= maxBlocks) return Math.min(now, last.expiredAt);
  return Math.min(now, tip?.firstLearnedAt(brokeAt) ?? last.expiredAt);
}

/** Whether `now` is inside a window of windowMs that opened at `since`. */
function within(windowMs: number | undefined, since: number, now: number): boolean {
  return windowMs !== undefined && windowMs > 0 && now - since <= windowMs;
}
