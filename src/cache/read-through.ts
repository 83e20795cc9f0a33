/**
 * The caching rules, kept apart from storage: read-through with per-request TTL, bust and
 * skip, freshness (policy.ts), and coalescing of identical concurrent misses into one load.
 * The store is any CacheStore; a store failure degrades to a miss (on read) or to not storing
 * (on write) and is reported, never thrown: a request that can still be answered is answered.
 *
 * It is also the one door to the cache for everybody else (listing, invalidation, stats), so
 * that no caller reaches around it to the store.
 */
import type { CrossInstanceCoalescer } from './coalescer.js';
import type { CacheEntry, EntryMeta } from './entry.js';
import { classify, type FreshnessRequirement } from './policy.js';
import type { CacheStore } from './store.js';

export type CacheOutcome = 'hit' | 'miss' | 'coalesced' | 'bypass';

export interface CachePolicy {
  /** Time to live in ms; undefined or 0 = until explicitly removed. */
  readonly ttlMs?: number | undefined;
  /** Do not read the cache: fetch fresh (the result is still stored unless skip). */
  readonly bust?: boolean;
  /** Do not store the result of this request. */
  readonly skip?: boolean;
  /** What the request requires of a cached entry beyond its ttl (block bound). */
  readonly freshness?: FreshnessRequirement | undefined;
}

export interface CacheResult {
  readonly value: string;
  readonly outcome: CacheOutcome;
  /** The entry served, for a hit (age and ttl left); undefined for a fresh load. */
  readonly entry?: CacheEntry;
  /**
   * Whether this request's value is now in the store (a fresh load that was written, here or
   * by the leader it joined); false for a hit, a skip, or a write that failed.
   */
  readonly stored?: boolean;
}

/** A leader's value; remote when another instance loaded it (cross-instance coalescing). */
interface Loaded {
  readonly value: string;
  readonly remote: boolean;
  /** Whether the value was written to the store. */
  readonly stored: boolean;
}

interface InFlight {
  readonly promise: Promise<Loaded>;
  /** Whether the leader will store the value; joiners that want it stored do it otherwise. */
  readonly leaderStores: boolean;
}

export type StoreErrorHook = (err: unknown, op: 'get' | 'set' | 'delete' | 'list') => void;
/** Told the outcome of every lookup that produced a value (metrics). */
export type OutcomeHook = (outcome: CacheOutcome, key: string) => void;

export class ReadThroughCache {
  readonly #inflight = new Map<string, InFlight>();

  private readonly onStoreError: StoreErrorHook;
  private readonly onOutcome: OutcomeHook;
  /** Coalescing across instances sharing the store (CACHE_STORE=redis); absent: in-process only. */
  private readonly coalescer: CrossInstanceCoalescer | undefined;
  /** Clock for freshness, in epoch ms; give it the store's. */
  private readonly now: () => number;

  constructor(
    private readonly store: CacheStore,
    hooks: {
      onStoreError?: StoreErrorHook;
      onOutcome?: OutcomeHook;
      coalescer?: CrossInstanceCoalescer | undefined;
      now?: () => number;
    } = {},
  ) {
    this.now = hooks.now ?? Date.now;
    this.onStoreError = hooks.onStoreError ?? (() => {});
    this.onOutcome = hooks.onOutcome ?? (() => {});
    this.coalescer = hooks.coalescer;
  }

  /** Report a store failure seen outside the read-through path (admin removal): logged and counted. */
  reportStoreError(err: unknown, op: 'get' | 'set' | 'delete' | 'list'): void {
    this.onStoreError(err, op);
  }

  /** Read an entry (fresh or stale), a store failure counting as a miss. */
  async peek(key: string): Promise<CacheEntry | undefined> {
    try {
      return await this.store.get(key);
    } catch (err) {
      this.onStoreError(err, 'get');
      return undefined;
    }
  }

  /** Write an entry; false (reported, not thrown) when the store could not write it. */
  async put(key: string, value: string, ttlMs?: number, meta?: EntryMeta): Promise<boolean> {
    try {
      await (meta === undefined
        ? this.store.set(key, value, ttlMs)
        : this.store.set(key, value, ttlMs, meta));
      return true;
    } catch (err) {
      this.onStoreError(err, 'set');
      return false;
    }
  }

  /**
   * The cached value for key, or the loader's (shared with every identical concurrent
   * miss). Loader failures are not cached and reach every waiter.
   */
  async get(key: string, load: () => Promise<string>, policy: CachePolicy = {}): Promise<CacheResult> {
    if (policy.bust !== true) {
      const entry = await this.peek(key);
      // A stale entry is a miss for now; issue 11 serves it under stale-while-revalidate/-if-error.
      if (entry !== undefined && this.#isFresh(entry, policy)) {
        this.onOutcome('hit', key);
        return { value: entry.value, outcome: 'hit', entry };
      }
    }
    const wantsStore = policy.skip !== true;
    const joined = this.#inflight.get(key);
    if (joined !== undefined) {
      const { value, stored: leaderStored } = await joined.promise;
      let stored = wantsStore && leaderStored;
      if (wantsStore && !joined.leaderStores) stored = await this.put(key, value, policy.ttlMs);
      this.onOutcome('coalesced', key);
      return { value, outcome: 'coalesced', stored };
    }
    const promise = this.#lead(key, load, wantsStore, policy);
    this.#inflight.set(key, { promise, leaderStores: wantsStore });
    try {
      const { value, remote, stored } = await promise;
      const outcome = remote ? 'coalesced' : policy.bust === true ? 'bypass' : 'miss';
      this.onOutcome(outcome, key);
      return { value, outcome, stored };
    } finally {
      this.#inflight.delete(key);
    }
  }

  async #lead(
    key: string,
    load: () => Promise<string>,
    store: boolean,
    policy: CachePolicy,
  ): Promise<Loaded> {
    if (this.coalescer === undefined) {
      const value = await load();
      const stored = store && (await this.put(key, value, policy.ttlMs));
      return { value, remote: false, stored };
    }
    let storedHere = false;
    const shared = await this.coalescer.run(key, {
      load: async () => {
        const value = await load();
        if (store) storedHere = await this.put(key, value, policy.ttlMs);
        return value;
      },
      read: () => this.peek(key),
      stores: store,
      fresh: policy.bust === true,
    });
    // Another instance's value that it did not store (its request had skipCache): store it here.
    let stored = store && (shared.loadedHere ? storedHere : shared.stored);
    if (!shared.loadedHere && store && !shared.stored)
      stored = await this.put(key, shared.value, policy.ttlMs);
    return { value: shared.value, remote: !shared.loadedHere, stored };
  }

  /**
   * A store returns only live entries, judged by its own clock. An entry whose freshness ends
   * with its life (staleAt === expiresAt: every entry today) and a request without a block
   * bound need no other judgement, and the hit path reads no clock.
   */
  #isFresh(entry: CacheEntry, policy: CachePolicy): boolean {
    if (entry.staleAt === entry.expiresAt && policy.freshness?.maxBlocks === undefined) return true;
    return classify(entry, this.now(), policy.freshness) === 'fresh';
  }

  /**
   * Whether get(key) with this policy would still serve this very entry object, judged
   * synchronously from the store's memory tier (false when unsure). Anything that changes the
   * key (a write, a bust, a failed write, an invalidation, another instance's change evicting
   * the hot copy) replaces or drops the object, so answers derived from it stop at once.
   */
  stillServes(key: string, entry: CacheEntry, policy: CachePolicy = {}): boolean {
    return this.store.peekHot?.(key) === entry && this.#isFresh(entry, policy);
  }

  /** Count a hit answered from an earlier rendering of an entry (see stillServes). */
  countHit(key: string): void {
    this.onOutcome('hit', key);
  }

  /** Keys of the live entries under prefix. A store failure is thrown: a partial list would mislead. */
  list(prefix: string): Promise<string[]> {
    return this.store.list(prefix);
  }

  /**
   * Keys under prefix that the process still holds in memory, for an answer while the
   * persistent store is down; undefined when the store has no such tier.
   */
  listHeld(prefix: string): string[] | undefined {
    return this.store.listHot?.(prefix);
  }

  /** Remove one entry; true when something was removed. A store failure is thrown. */
  invalidate(key: string): Promise<boolean> {
    return this.store.delete(key);
  }

  /** Remove every entry under prefix; returns how many were removed. */
  async invalidatePrefix(prefix: string): Promise<number> {
    let removed = 0;
    for (const key of await this.store.list(prefix)) if (await this.store.delete(key)) removed++;
    return removed;
  }

  /** The store's short name ("memory", "tiered", ...). */
  get kind(): string {
    return this.store.kind;
  }

  /** Entries held in process memory (hot tier, or the whole memory store). */
  get hotEntries(): number {
    return this.store.hotEntries?.() ?? 0;
  }

  /** Approximate bytes of the hot tier, when the store has a bounded one. */
  get hotBytes(): number | undefined {
    return this.store.hotBytes?.();
  }

  /** Identical loads under way (for metrics and tests). */
  get inflight(): number {
    return this.#inflight.size;
  }
}
