/**
 * A bounded in-memory hot tier in front of a persistent (cold) store: sqlite or redis.
 *
 * - get: a live hot entry is answered without touching the cold store; a miss reads the
 *   cold store and promotes what it finds (keeping its storedAt/expiresAt).
 * - set: writes both tiers; delete: removes from both; list: the cold store (the source of
 *   truth) plus live hot entries the cold store may have missed while failing.
 *
 * A cold-store failure never fails a request that could still be answered: get degrades to
 * the hot tier (or a miss), close still releases; each such failure goes to `onError`
 * instead of being thrown. set still fills the hot tier but rejects when the cold write
 * failed, so that the caller does not claim the value was stored (and reports the failure
 * itself); the cold copy of that key, now older than the value just answered, is deleted
 * or, when even that fails, never served again by this process until the key is written
 * successfully (see #unservable). delete and list cannot be answered correctly without the
 * cold store, so their cold failures are thrown (unreported: the caller sees them).
 */

import { type CacheEntry, CorruptEntryError, newEntry } from '../entry.js';
import type { CacheStore, EntryMeta } from '../store.js';
import { EntryLru } from './memory.js';

export type TieredOp = 'get' | 'set' | 'close';

export interface TieredStoreOptions {
  /** A cold-store failure that was absorbed (not thrown). */
  readonly onError?: (err: unknown, op: TieredOp) => void;
  /** Clock in epoch ms; give the cold store the same one. */
  readonly now?: () => number;
  /**
   * Told of every key written to or removed from the cold store, so that other instances
   * sharing it can evict their hot copies (see hot-tier-sync.ts).
   */
  readonly onChange?: (key: string) => void;
}

export interface HotTierOptions {
  /** Most entries in the hot tier; unset = bounded by maxBytes alone. */
  readonly maxEntries?: number | undefined;
  /** Approximate byte budget of the hot tier; larger entries live in the cold store only. */
  readonly maxBytes?: number;
}

/** A cold read under way; a write to the same key meanwhile makes its result unfit to promote. */
interface ColdRead {
  stale: boolean;
}

/**
 * Most keys remembered as "cold copy not servable". Beyond it the oldest is forgotten: a
 * store failing for that many distinct keys is reported degraded long before.
 */
const MAX_UNSERVABLE_KEYS = 100_000;

export class TieredStore implements CacheStore {
  readonly kind = 'tiered';
  /** Readiness probes the cold store: reads here fall back to the hot tier and always look healthy. */
  readonly backing: CacheStore;
  readonly #hot: EntryLru;
  readonly #now: () => number;
  readonly #onError: (err: unknown, op: TieredOp) => void;
  readonly #onChange: (key: string) => void;
  readonly #reads = new Map<string, Set<ColdRead>>();
  /** Keys whose cold copy may be older than a value this process answered (failed write). */
  readonly #unservable = new Set<string>();
  #closed = false;

  constructor(
    hot: HotTierOptions,
    readonly cold: CacheStore,
    options: TieredStoreOptions = {},
  ) {
    this.backing = cold;
    this.#now = options.now ?? Date.now;
    this.#hot = new EntryLru({ ...hot, now: this.#now });
    this.#onError = options.onError ?? (() => {});
    this.#onChange = options.onChange ?? (() => {});
  }

  async get(key: string): Promise<CacheEntry | undefined> {
    const hot = this.#hot.get(key);
    if (hot !== undefined) return hot;
    if (this.#unservable.has(key)) return undefined;
    const read: ColdRead = { stale: false };
    let reads = this.#reads.get(key);
    if (reads === undefined) {
      reads = new Set();
      this.#reads.set(key, reads);
    }
    reads.add(read);
    let entry: CacheEntry | undefined;
    try {
      entry = await this.cold.get(key);
    } catch (err) {
      // A damaged entry is the cache's to remove and count (read-through), not a store fault.
      if (err instanceof CorruptEntryError) throw err;
      this.#onError(err, 'get');
      return undefined;
    } finally {
      reads.delete(read);
      if (reads.size === 0 && this.#reads.get(key) === reads) this.#reads.delete(key);
    }
    // A set or delete that ran while the cold read was in flight wins: promoting the older
    // value would pin it in the hot tier.
    if (entry !== undefined && !read.stale) this.#hot.put(key, entry);
    return entry;
  }

  async set(key: string, value: string, ttlMs?: number, meta?: EntryMeta): Promise<void> {
    this.#invalidateReads(key);
    this.#hot.put(key, newEntry(value, this.#now(), ttlMs, meta));
    try {
      // Without meta, the call the cold store has always had (no trailing undefined).
      await (meta === undefined ? this.cold.set(key, value, ttlMs) : this.cold.set(key, value, ttlMs, meta));
      this.#unservable.delete(key);
      this.#onChange(key);
    } catch (err) {
      await this.#dropColdCopy(key);
      throw err;
    }
  }

  /**
   * After a failed cold write: the cold store may still hold an older value of key (a
   * bustCache answered a newer one). Delete it; if the cold store cannot even do that,
   * stop reading key from it until a write succeeds.
   */
  async #dropColdCopy(key: string): Promise<void> {
    try {
      await this.cold.delete(key);
      this.#unservable.delete(key);
      this.#onChange(key);
    } catch {
      this.#unservable.delete(key);
      this.#unservable.add(key);
      if (this.#unservable.size > MAX_UNSERVABLE_KEYS) {
        const oldest = this.#unservable.values().next().value;
        if (oldest !== undefined) this.#unservable.delete(oldest);
      }
    }
  }

  async delete(key: string): Promise<boolean> {
    this.#invalidateReads(key);
    const inHot = this.#hot.delete(key);
    const inCold = await this.cold.delete(key);
    this.#unservable.delete(key);
    this.#onChange(key);
    return inHot || inCold;
  }

  /** Drop the hot copy of key (another instance changed it in the shared cold store). */
  evictHot(key: string): void {
    this.#invalidateReads(key);
    this.#hot.delete(key);
  }

  peekHot(key: string): CacheEntry | undefined {
    return this.#hot.get(key);
  }

  /** Keys of live hot entries under prefix: what can still be listed while the cold store is down. */
  listHot(prefix: string): string[] {
    return this.#hot.keys(prefix);
  }

  async list(prefix: string): Promise<string[]> {
    const keys = new Set(await this.cold.list(prefix));
    for (const key of this.#hot.keys(prefix)) keys.add(key);
    return [...keys];
  }

  /**
   * A page from the cold store's index (the source of truth). Unlike list(), hot entries
   * whose cold write failed are not merged in: merging would mean scanning the hot tier for
   * every page.
   */
  listPage(prefix: string, after: string | undefined, limit: number): Promise<string[]> {
    if (this.cold.listPage === undefined) return this.#sortedPage(prefix, after, limit);
    return this.cold.listPage(prefix, after, limit);
  }

  async count(prefix: string): Promise<number> {
    if (this.cold.count === undefined) return (await this.list(prefix)).length;
    return this.cold.count(prefix);
  }

  /** For a cold store without an index of its own: list whole and sort (bounded by it). */
  async #sortedPage(prefix: string, after: string | undefined, limit: number): Promise<string[]> {
    const keys = (await this.list(prefix)).sort();
    return keys.filter((k) => after === undefined || k > after).slice(0, limit);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#hot.clear();
    try {
      await this.cold.close();
    } catch (err) {
      this.#onError(err, 'close');
    }
  }

  /** Entries in the hot tier (for metrics). */
  get hotSize(): number {
    return this.#hot.size;
  }

  hotEntries(): number {
    return this.#hot.size;
  }

  /** Approximate bytes held by the hot tier (never above its byte budget). */
  hotBytes(): number {
    return this.#hot.bytes;
  }

  #invalidateReads(key: string): void {
    const reads = this.#reads.get(key);
    if (reads === undefined) return;
    for (const read of reads) read.stale = true;
  }
}
