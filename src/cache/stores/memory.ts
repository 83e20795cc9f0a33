/**
 * In-process store for CACHE_STORE=memory (and the building block of the tiered store's hot
 * tier). Bounded by entry count and, optionally, by an approximate byte size, so a memory
 * cache cannot grow without limit: the least recently used entries go first. Expiry is
 * checked against the injected clock on every read.
 */
import { LRUCache } from 'lru-cache';
import { type CacheEntry, isLive, newEntry } from '../entry.js';
import type { CacheStore, EntryMeta } from '../store.js';
import { SortedKeys } from './sorted-keys.js';

export interface MemoryStoreOptions {
  /** Most entries held; the least recently used is evicted beyond it. Unset = byte bound only. */
  readonly maxEntries?: number | undefined;
  /**
   * Approximate memory budget in bytes (UTF-16 keys and values plus a fixed overhead per
   * entry). An entry larger than the whole budget is not kept. Unset = count bound only (one
   * of the two is required).
   */
  readonly maxBytes?: number;
  /** Clock in epoch ms; injectable so tests can advance time without sleeping. */
  readonly now?: () => number;
  /** Keep the keys in order too, for pages of a listing (the memory store; not a hot tier). */
  readonly ordered?: boolean;
}

/** Rough per-entry bookkeeping cost, so that many tiny entries still count. */
const ENTRY_OVERHEAD_BYTES = 96;

export function approximateBytes(key: string, entry: CacheEntry): number {
  return (key.length + entry.value.length) * 2 + ENTRY_OVERHEAD_BYTES;
}

/**
 * A bounded LRU of CacheEntry with per-entry expiry on `now`. Expired entries are never
 * returned; lru-cache's own ttl (on the same clock) drops them when touched.
 */
export class EntryLru {
  readonly #lru: LRUCache<string, CacheEntry>;
  readonly #now: () => number;
  readonly #sorted: SortedKeys | undefined;

  constructor(options: MemoryStoreOptions) {
    const { maxEntries, maxBytes } = options;
    if (maxEntries !== undefined && (!Number.isInteger(maxEntries) || maxEntries < 1)) {
      throw new RangeError(`maxEntries must be a positive integer, got ${maxEntries}`);
    }
    if (maxEntries === undefined && maxBytes === undefined) {
      throw new RangeError('a memory store needs maxEntries, maxBytes or both');
    }
    this.#now = options.now ?? Date.now;
    const now = this.#now;
    const sorted = options.ordered === true ? new SortedKeys() : undefined;
    this.#sorted = sorted;
    this.#lru = new LRUCache<string, CacheEntry>({
      // Every way a key leaves (evicted, expired, deleted) leaves the order too; an
      // overwrite ('set') keeps it.
      ...(sorted === undefined
        ? {}
        : {
            dispose: (_entry: CacheEntry, key: string, reason: LRUCache.DisposeReason) => {
              if (reason !== 'set') sorted.remove(key);
            },
          }),
      ...(maxEntries === undefined ? {} : { max: maxEntries }),
      ...(maxBytes === undefined
        ? {}
        : {
            maxSize: maxBytes,
            sizeCalculation: (entry: CacheEntry, key: string) => approximateBytes(key, entry),
          }),
      // Same clock as expiresAt, read on every check (no cached "now" timer).
      perf: { now },
      ttlResolution: 0,
      // One of max and maxSize is always there (checked above); lru-cache's types cannot see it.
    } as LRUCache.Options<string, CacheEntry, unknown>);
  }

  get(key: string): CacheEntry | undefined {
    const entry = this.#lru.get(key);
    if (entry === undefined) return undefined;
    if (!isLive(entry, this.#now())) {
      this.#lru.delete(key);
      return undefined;
    }
    return entry;
  }

  /** Keep an entry as is (its own storedAt/expiresAt); an already expired entry is dropped. */
  put(key: string, entry: CacheEntry): void {
    if (entry.expiresAt === null) {
      this.#lru.set(key, entry);
    } else {
      const left = entry.expiresAt - this.#now();
      if (left <= 0) {
        this.#lru.delete(key);
        return;
      }
      this.#lru.set(key, entry, { ttl: Math.ceil(left) });
    }
    // Only when kept: an entry larger than the byte budget is refused by set().
    if (this.#sorted !== undefined && this.#lru.has(key)) this.#sorted.add(key);
  }

  /** A page of live keys under prefix, in order (ordered only; see SortedKeys). */
  page(prefix: string, after: string | undefined, limit: number): string[] {
    if (this.#sorted === undefined) throw new Error('this EntryLru keeps no key order');
    const now = this.#now();
    return this.#sorted.page(prefix, after, limit, (key) => {
      const entry = this.#lru.peek(key);
      return entry !== undefined && isLive(entry, now);
    });
  }

  /** Live keys under prefix (ordered only): a walk of the prefix's range. */
  countOrdered(prefix: string): number {
    if (this.#sorted === undefined) throw new Error('this EntryLru keeps no key order');
    const now = this.#now();
    return this.#sorted.countPrefix(prefix, (key) => {
      const entry = this.#lru.peek(key);
      return entry !== undefined && isLive(entry, now);
    });
  }

  delete(key: string): boolean {
    const entry = this.#lru.peek(key);
    const live = entry !== undefined && isLive(entry, this.#now());
    this.#lru.delete(key);
    return live;
  }

  /** Live keys starting with prefix; does not change recency. */
  keys(prefix: string): string[] {
    const now = this.#now();
    const out: string[] = [];
    for (const [key, entry] of this.#lru.entries()) {
      if (key.startsWith(prefix) && isLive(entry, now)) out.push(key);
    }
    return out;
  }

  clear(): void {
    this.#lru.clear();
    this.#sorted?.clear();
  }

  /** Entries held, expired ones not yet dropped included. */
  get size(): number {
    return this.#lru.size;
  }

  /** Approximate bytes held (0 when no byte budget is set). */
  get bytes(): number {
    return this.#lru.calculatedSize ?? 0;
  }
}

export class MemoryStore implements CacheStore {
  readonly kind = 'memory';
  readonly #entries: EntryLru;
  readonly #now: () => number;

  constructor(options: MemoryStoreOptions) {
    this.#entries = new EntryLru({ ...options, ordered: true });
    this.#now = options.now ?? Date.now;
  }

  async get(key: string): Promise<CacheEntry | undefined> {
    return this.#entries.get(key);
  }

  async set(key: string, value: string, ttlMs?: number, meta?: EntryMeta): Promise<void> {
    this.#entries.put(key, newEntry(value, this.#now(), ttlMs, meta));
  }

  async delete(key: string): Promise<boolean> {
    return this.#entries.delete(key);
  }

  async list(prefix: string): Promise<string[]> {
    return this.#entries.keys(prefix);
  }

  async listPage(prefix: string, after: string | undefined, limit: number): Promise<string[]> {
    return this.#entries.page(prefix, after, limit);
  }

  async count(prefix: string): Promise<number> {
    return this.#entries.countOrdered(prefix);
  }

  async close(): Promise<void> {
    this.#entries.clear();
  }

  /** Entries held (for metrics). */
  get size(): number {
    return this.#entries.size;
  }

  peekHot(key: string): CacheEntry | undefined {
    return this.#entries.get(key);
  }

  /** The whole store is in memory. */
  hotEntries(): number {
    return this.#entries.size;
  }
}
