/**
 * The caching rules, kept apart from storage: read-through with per-request TTL, bust and
 * skip, and coalescing of identical concurrent misses into one load. The store is any
 * CacheStore; a store failure degrades to a miss (on read) or to not storing (on write) and
 * is reported, never thrown: a request that can still be answered is answered.
 */
import type { CrossInstanceCoalescer } from './coalescer.js';
import type { CacheStore, StoredEntry } from './store.js';

export type CacheOutcome = 'hit' | 'miss' | 'coalesced' | 'bypass';

export interface CachePolicy {
  /** Time to live in ms; undefined or 0 = until explicitly removed. */
  readonly ttlMs?: number | undefined;
  /** Do not read the cache: fetch fresh (the result is still stored unless skip). */
  readonly bust?: boolean;
  /** Do not store the result of this request. */
  readonly skip?: boolean;
}

export interface CacheResult {
  readonly value: string;
  readonly outcome: CacheOutcome;
  /** The entry served, for a hit (age and ttl left); undefined for a fresh load. */
  readonly entry?: StoredEntry;
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

  constructor(
    readonly store: CacheStore,
    hooks: {
      onStoreError?: StoreErrorHook;
      onOutcome?: OutcomeHook;
      coalescer?: CrossInstanceCoalescer | undefined;
    } = {},
  ) {
    this.onStoreError = hooks.onStoreError ?? (() => {});
    this.onOutcome = hooks.onOutcome ?? (() => {});
    this.coalescer = hooks.coalescer;
  }

  /** Report a store failure seen outside the read-through path (admin removal): logged and counted. */
  reportStoreError(err: unknown, op: 'get' | 'set' | 'delete' | 'list'): void {
    this.onStoreError(err, op);
  }

  /** Read an entry, a store failure counting as a miss. */
  async peek(key: string): Promise<StoredEntry | undefined> {
    try {
      return await this.store.get(key);
    } catch (err) {
      this.onStoreError(err, 'get');
      return undefined;
    }
  }

  /** Write an entry; false (reported, not thrown) when the store could not write it. */
  async put(key: string, value: string, ttlMs?: number): Promise<boolean> {
    try {
      await this.store.set(key, value, ttlMs);
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
      if (entry !== undefined) {
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

  /** Identical loads under way (for metrics and tests). */
  get inflight(): number {
    return this.#inflight.size;
  }
}
