/**
 * The one storage interface every cache store implements (memory, SQLite, Redis), kept apart
 * from the caching rules (TTL defaults, bust/skip, coalescing) that live in the read-through
 * cache. Values are opaque strings; the store only keeps them and honours expiry.
 */

export interface StoredEntry {
  readonly value: string;
  /** Epoch milliseconds when the entry was written. */
  readonly storedAt: number;
  /** Epoch milliseconds after which the entry is gone; null = never expires. */
  readonly expiresAt: number | null;
}

export interface CacheStore {
  /** Short name for logs and metrics: "memory", "sqlite", "redis", "tiered". */
  readonly kind: string;
  /** The live entry, or undefined when absent or expired. */
  get(key: string): Promise<StoredEntry | undefined>;
  /** Write (or overwrite) an entry; ttlMs undefined or 0 = never expires. */
  set(key: string, value: string, ttlMs?: number): Promise<void>;
  /** Remove an entry; true when something was removed. */
  delete(key: string): Promise<boolean>;
  /** Keys of the live entries that start with prefix, in no particular order. */
  list(prefix: string): Promise<string[]>;
  /** Release files, connections and timers. Idempotent. */
  close(): Promise<void>;
}

/** expiresAt for a ttl in ms at time `now`; null when the entry never expires. */
export function expiryFor(ttlMs: number | undefined, now: number): number | null {
  return ttlMs === undefined || ttlMs <= 0 ? null : now + ttlMs;
}

export function isLive(entry: Pick<StoredEntry, 'expiresAt'>, now: number): boolean {
  return entry.expiresAt === null || entry.expiresAt > now;
}
