/**
 * The one judge of freshness (docs/freshness.md): may this stored entry be served for this
 * request, now? A pure function of the entry, the request's requirements, a read-only view of
 * the chain and the clock. Every path that answers from a store (read-through hits, the
 * cross-instance coalescer's read, stale-while-revalidate, stale-if-error, replays of a hit,
 * batch items and node routes, which all go through the read-through cache) asks it at the
 * moment it answers, and Cache-Status is derived from its verdict.
 *
 * - fresh: within its ttl and its block bound (or proven current by the event observer), and
 *   of the chain the upstreams report now; and the tip it is current at: the tip believed now
 *   when the proof holds there, else the height it was read at (tipOf). Answers tell that tip,
 *   so no caller decides currency a second time;
 * - stale: no longer fresh since `since`; it may be answered at once under
 *   stale-while-revalidate, or when the refetch fails transiently under stale-if-error, each
 *   only inside its window counted from `since` (windows are capped to CACHE_STALE_MAX_S
 *   before they get here);
 * - unusable: gone (past its retention), of another chain, or attested by fewer upstreams than
 *   the network's consensus now asks (docs/consensus.md): as good as absent.
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

/**
 * The event observer's proof of currency (docs/events.md), as the judge asks it: a port that
 * src/service/currency-proof.ts implements for one read, so that the cache knows nothing of
 * blocks, ledgers or dependency analysis.
 */
export interface ProofView {
  /** Whether `entry`, read below `tipHeight`, is provably unchanged at `tipHeight`. */
  holds(entry: CacheEntry, tipHeight: number): boolean;
  /** Told each time the proof kept an entry fresh past its block bound (metrics). */
  keptFresh?(): void;
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
  /**
   * The event observer's proof for this read: an entry read blocks ago that it proves
   * unchanged at the tip is 0 blocks behind, and current at that tip. Absent: no proof applies
   * (no observer of this network, a read pinned to a block).
   */
  readonly proof?: ProofView | undefined;
  /**
   * Attested answers (docs/consensus.md): the k of the entry's network. An entry recorded with
   * fewer votes (one upstream's word counts as one) is as good as absent. Absent: any entry.
   */
  readonly minVotes?: number | undefined;
}

export type Verdict =
  | {
      readonly use: 'fresh';
      /**
       * The tip height the entry is current at, when the proof carried it past the height it
       * was read at (the tip believed now); absent: the height it was read at. Read it with
       * tipOf().
       */
      readonly currentAt?: number | undefined;
    }
  | {
      readonly use: 'stale';
      /** Epoch ms when the entry stopped being fresh. */
      readonly since: number;
      /** May be answered now while one refresh runs (stale-while-revalidate). */
      readonly whileRevalidate: boolean;
      /** May be answered if the refetch fails transiently (stale-if-error). */
      readonly ifError: boolean;
    }
  | { readonly use: 'unusable'; readonly why: 'expired' | 'other-chain' | 'unattested' };

const FRESH: Verdict = { use: 'fresh' };
const EXPIRED: Verdict = { use: 'unusable', why: 'expired' };
const OTHER_CHAIN: Verdict = { use: 'unusable', why: 'other-chain' };
const UNATTESTED: Verdict = { use: 'unusable', why: 'unattested' };

export function judge(entry: CacheEntry, req: Requirements, tip: TipView | undefined, now: number): Verdict {
  const gone = unusable(entry, req, now);
  if (gone !== undefined) return gone;
  if (entry.staleAt !== null && entry.staleAt <= now) return stale(entry.staleAt, req, now);
  const height = tip?.height;
  const readAt = entry.tipHeight;
  // A height an entry records that may not be believed counts as unknown: nothing is proven
  // from it, and it fits no block bound.
  const believed = readAt !== null && tip?.plausible?.(readAt) !== false;
  // Asked even when the bound alone keeps the entry fresh: the proof also says which tip the
  // entry is current at, and every answer tells that one.
  const proven =
    believed && height !== undefined && height > readAt && req.proof?.holds(entry, height) === true;
  const maxBlocks = req.maxBlocks;
  if (maxBlocks === undefined) return proven ? freshAt(height!) : FRESH;
  // Read at an unknown (or unbelievable) height: it fits no block bound, and never did.
  if (!believed) return stale(Math.min(now, entry.storedAt), req, now);
  const brokeAt = readAt + maxBlocks + 1;
  if (height !== undefined) {
    if (height - readAt <= maxBlocks) return proven ? freshAt(height) : FRESH;
    if (proven) {
      req.proof!.keptFresh?.();
      return freshAt(height);
    }
    return stale(Math.min(now, tip?.firstLearnedAt(brokeAt) ?? now), req, now);
  }
  // The tip cannot be learned now: stale since the knowledge that last showed the entry fresh
  // stopped counting, or since a tip past its bound was learned; with no knowledge at all,
  // since it was stored. Never "since now": a window must not reopen while the tip is unknown.
  const last = tip?.last;
  if (last === undefined) return stale(Math.min(now, entry.storedAt), req, now);
  if (last.height - readAt <= maxBlocks) return stale(Math.min(now, last.expiredAt), req, now);
  return stale(Math.min(now, tip?.firstLearnedAt(brokeAt) ?? last.expiredAt), req, now);
}

/**
 * Whether the verdict on `entry` for `req` at `now` depends on the chain's view: only a block
 * bound or a proof asks for the tip, and an entry already gone, of another chain or stale by
 * its ttl is judged without it. Lets a caller skip learning the tip (which may take a shared
 * /v2/info) when the judge would not look at it.
 */
export function needsTip(entry: CacheEntry, req: Requirements, now: number): boolean {
  if (req.maxBlocks === undefined && req.proof === undefined) return false;
  return unusable(entry, req, now) === undefined && (entry.staleAt === null || entry.staleAt > now);
}

/**
 * The tip height an answer of `entry` under `verdict` tells (X-Canonical-Stacks-Tip-Height):
 * the tip a fresh verdict found it current at, else the height it was read at.
 */
export function tipOf(entry: CacheEntry, verdict: Verdict | undefined): number | undefined {
  if (verdict !== undefined && verdict.use === 'fresh' && verdict.currentAt !== undefined) {
    return verdict.currentAt;
  }
  return entry.tipHeight ?? undefined;
}

/** Gone (past its retention), of another chain, or attested by too few: as good as absent. */
function unusable(entry: CacheEntry, req: Requirements, now: number): Verdict | undefined {
  if (entry.expiresAt !== null && entry.expiresAt <= now) return EXPIRED;
  if (typeof entry.chain === 'string' && req.chain !== undefined && entry.chain !== req.chain) {
    return OTHER_CHAIN;
  }
  if (req.minVotes !== undefined && (entry.votes ?? 1) < req.minVotes) return UNATTESTED;
  return undefined;
}

function stale(since: number, req: Requirements, now: number): Verdict {
  return {
    use: 'stale',
    since,
    whileRevalidate: within(req.staleWhileRevalidateMs, since, now),
    ifError: within(req.staleIfErrorMs, since, now),
  };
}

/**
 * "Fresh, current at `height`": the last one made is shared (verdicts are never changed), as
 * every proven answer at one tip carries the same height, so a replayed hit of a proven entry
 * allocates no verdict.
 */
let provenFresh: Verdict & { use: 'fresh' } = { use: 'fresh', currentAt: -1 };
function freshAt(height: number): Verdict {
  if (provenFresh.currentAt !== height) provenFresh = { use: 'fresh', currentAt: height };
  return provenFresh;
}

/** Whether `now` is inside a window of windowMs that opened at `since`. */
function within(windowMs: number | undefined, since: number, now: number): boolean {
  return windowMs !== undefined && windowMs > 0 && now - since <= windowMs;
}
