/**
 * In-process store for CACHE_STORE=memory (and the building block of the tiered store's hot
 * tier). Bounded by entry count and, optionally, by an approximate byte size, so a memory
 * cache cannot grow without limit: the least recently used entries go first. Expiry is
 * checked against the injected clock on every read.
 */
import { LRUCache } from 'lru-cache';
import { type CacheEntry, isLive, newEntry } from '../entry.js';
import type { CacheStore, EntryMeta } from '../store.js';

export interface MemoryStoreOptions {
  /** Most entries held; the least recently used is evicted beyond it. */
  readonly maxEntries: number;
  /**
   * Approximate memory budget in bytes (UTF-16 keys and values plus a fixed overhead per
   * entry). An entry larger than the whole budget is not kept. Unset = count bound only.
   */
  readonly maxBytes?: number;
  /** Clock in epoch ms; injectable so tests can advance time without sleeping. */
  readonly now?: () => number;
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

  constructor(options: MemoryStoreOptions) {
    if (!Number.isInteger(options.maxEntries) || options.maxEntries < 1) {
      throw new RangeError(`maxEntries must be a positive integer, got ${options.maxEntries}`);
    }
    this.#now = options.now ?? Date.now;
    const now = this.#now;
    this.#lru = new LRUCache<string, CacheEntry>({
      max: options.maxEntries,
      ...(options.maxBytes === undefined
        ? {}
        : { maxSize: options.maxBytes, sizeCalculation: (entry, key) => approximateBytes(key, entry) }),
      // Same clock as expiresAt, read on every check (no cached "now" timer).
      perf: { now },
      ttlResolution: 0,
    });
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
      return;
    }
    const left = entry.expiresAt - this.#now();
    if (left <= 0) {
      this.#lru.delete(key);
      return;
    }
    this.#lru.set(key, entry, { ttl: Math.ceil(left) });
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
    this.#entries = new EntryLru(options);
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
