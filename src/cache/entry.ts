/**
 * A cache entry and how its times are derived. An entry knows its own staleness: when it
 * stops being fresh (staleAt), when the store drops it (expiresAt), and the chain tip height
 * it was read at, so that the one judge of freshness (judge.ts) can weigh it against a
 * request's requirements on every store alike.
 *
 * A ttl ends freshness at staleAt; the entry is kept until expiresAt (CACHE_STALE_MAX_S later)
 * so that a stale answer may still be served (stale-while-revalidate / stale-if-error). An
 * entry written without keepStaleMs has staleAt equal to expiresAt.
 */

export interface CacheEntry {
  readonly value: string;
  /** Epoch milliseconds when the entry was written (the writer's clock). */
  readonly storedAt: number;
  /** Epoch milliseconds after which the entry is no longer fresh; null = fresh by time forever. */
  readonly staleAt: number | null;
  /** Epoch milliseconds after which the entry is gone from the store; null = never expires. */
  readonly expiresAt: number | null;
  /** Chain tip height the value was read at; null when unknown (then it fits no block bound). */
  readonly tipHeight: number | null;
  /**
   * True when tipHeight is the height the answering node reported with the value (its
   * X-Canonical-Stacks-Tip-Height), not the gateway's own tip knowledge: only such a height can
   * start the event observer's proof of currency (docs/events.md). Absent = not reported.
   */
  readonly tipReported?: boolean | undefined;
  /**
   * The chain the value was read from (docs/freshness.md, "Chain identity"): its network id
   * and genesis hash as the upstreams reported them; absent when unknown at write time.
   */
  readonly chain?: string | null | undefined;
  /**
   * Attested answers (docs/consensus.md): how many upstreams gave these bytes at the block it
   * was read at. Absent: one upstream's word (written without consensus, or by a 1/1 instance).
   */
  readonly votes?: number | undefined;
}

/**
 * A stored entry that cannot be read back (foreign bytes, a damaged row): the cache treats
 * it as a miss, deletes it and counts it; it is never answered, never blamed on the client.
 */
export class CorruptEntryError extends Error {
  constructor(key: string, why: string) {
    super(`stored entry for "${key}" cannot be read: ${why}`);
  }
}

/** What a writer can say about a new entry besides its value and ttl. */
export interface EntryMeta {
  /** Chain tip height the value was read at. */
  readonly tipHeight?: number | null | undefined;
  /** The height is the answering node's own (CacheEntry.tipReported). */
  readonly tipReported?: boolean | undefined;
  /** The chain identity the value was read under (CacheEntry.chain). */
  readonly chain?: string | undefined;
  /** The upstreams that gave the value in an attested vote (CacheEntry.votes). */
  readonly votes?: number | undefined;
  /**
   * How long past staleAt the entry is kept for stale answers (ms). Only meaningful with a
   * ttl; 0 or undefined = dropped as soon as it is stale (today's behaviour).
   */
  readonly keepStaleMs?: number | undefined;
}

/** The entry written at time `now` for value with a ttl (undefined or <= 0 = no ttl). */
export function newEntry(value: string, now: number, ttlMs?: number, meta: EntryMeta = {}): CacheEntry {
  const staleAt = ttlMs === undefined || ttlMs <= 0 ? null : now + ttlMs;
  const keep = meta.keepStaleMs ?? 0;
  return {
    value,
    storedAt: now,
    staleAt,
    expiresAt: staleAt === null ? null : staleAt + Math.max(0, keep),
    tipHeight: meta.tipHeight ?? null,
    ...(meta.tipReported === true && meta.tipHeight != null ? { tipReported: true } : {}),
    ...(meta.chain === undefined ? {} : { chain: meta.chain }),
    ...(meta.votes === undefined ? {} : { votes: meta.votes }),
  };
}

/** Whether the store still holds the entry (fresh or stale) at `now`. */
export function isLive(entry: Pick<CacheEntry, 'expiresAt'>, now: number): boolean {
  return entry.expiresAt === null || entry.expiresAt > now;
}
