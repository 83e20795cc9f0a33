/**
 * The one storage interface every cache store implements (memory, SQLite, Redis, tiered),
 * kept apart from the caching rules (freshness, bust/skip, coalescing) of the read-through
 * cache. Values are opaque strings; a store keeps them with their entry times and honours
 * expiry.
 *
 * Some abilities only some stores have (a hot tier, a connection state). They are declared
 * here as optional members, so callers ask the store instead of testing its class.
 */
import type { CacheEntry, EntryMeta } from './entry.js';

export type { CacheEntry, EntryMeta } from './entry.js';

export interface CacheStore {
  /** Short name for logs and metrics: "memory", "sqlite", "redis", "tiered". */
  readonly kind: string;
  /** The live entry (fresh or stale), or undefined when absent or expired. */
  get(key: string): Promise<CacheEntry | undefined>;
  /** Write (or overwrite) an entry; ttlMs undefined or 0 = never stale, never expires. */
  set(key: string, value: string, ttlMs?: number, meta?: EntryMeta): Promise<void>;
  /** Remove an entry; true when something was removed. */
  delete(key: string): Promise<boolean>;
  /** Keys of the live entries that start with prefix, in no particular order. */
  list(prefix: string): Promise<string[]>;
  /**
   * One page of the live keys under prefix, in ascending code-point order, strictly after
   * `after` (undefined: from the first), at most `limit`: read from an index the store keeps
   * up to date as it writes, so that a page costs the same with ten keys or a million.
   * Optional: a store without it is listed whole and sorted by the caller.
   */
  listPage?(prefix: string, after: string | undefined, limit: number): Promise<string[]>;
  /** How many live keys are under prefix, from the same index (with listPage). */
  count?(prefix: string): Promise<number>;
  /** Release files, connections and timers. Idempotent. */
  close(): Promise<void>;

  // Optional capabilities.

  /** The persistent store behind an in-memory tier: what readiness must probe. */
  readonly backing?: CacheStore;
  /** A networked store: whether it is connected now (a probe need not wait for a timeout). */
  isReady?(): boolean;
  /** Entries held in process memory (a memory store, or a tiered store's hot tier). */
  hotEntries?(): number;
  /** Approximate bytes held in process memory by a bounded hot tier. */
  hotBytes?(): number;
  /** Why writes are failing now (disk full, locked, file deleted), or undefined when they work. */
  writeProblem?(): string | undefined;
  /** Live keys under prefix held in process memory: what can still be listed while the backing store is down. */
  listHot?(prefix: string): string[];
  /** Drop the in-memory copy of key (another instance changed it in the shared backing store). */
  evictHot?(key: string): void;
  /**
   * The live entry held in process memory for key, synchronously (the very object get would
   * return), or undefined; never reads a backing store.
   */
  peekHot?(key: string): CacheEntry | undefined;
}
