/**
 * The caching rules, kept apart from storage: read-through with per-request TTL, bust and
 * skip, freshness (the one judge, judge.ts, asked for every entry it answers or may answer),
 * and coalescing of identical concurrent misses into one load. The store is any CacheStore; a
 * store failure degrades to a miss (on read) or to not storing (on write) and is reported,
 * never thrown: a request that can still be answered is answered.
 *
 * It is also the one door to the cache for everybody else (listing, invalidation, stats), so
 * that no caller reaches around it to the store.
 *
 * Serving stale (docs/freshness.md, RFC 5861): an entry that is no longer fresh for a
 * request (its ttl ended, or the chain moved past the request's block bound) but is still held
 * may be answered under the request's windows, which count from the moment it stopped being
 * fresh: stale-while-revalidate answers it at once and starts one background refresh (shared
 * with every other load of the key, across instances too); stale-if-error answers it when the
 * refetch fails transiently, and tells the loader so (LoadContext.staleAtHand) so that it does
 * not spend retries. Otherwise a stale entry is refetched like a miss (CacheResult.stale
 * 'refetch': Cache-Status fwd=stale).
 */
import type { CrossInstanceCoalescer } from './cross-instance-coalescer.js';
import { type CacheEntry, CorruptEntryError, type EntryMeta } from './entry.js';
import { judge, needsTip, type ProofView, type Requirements, type TipView, type Verdict } from './judge.js';
import type { CacheStore } from './store.js';

/** What a request requires of a cached entry beyond its ttl: a block bound. */
export interface FreshnessRequirement {
  /** Most blocks the chain may have advanced since the entry was read; undefined = no bound. */
  readonly maxBlocks?: number | undefined;
}

export type CacheOutcome = 'hit' | 'miss' | 'coalesced' | 'bypass';

/** How a stale entry figured in an answer: refetched, or answered under one of the windows. */
export type StaleServing = 'refetch' | 'while-revalidate' | 'if-error';

/** What a load is told about its circumstances. */
export interface LoadContext {
  /**
   * A stale entry will be answered if this load fails transiently (stale-if-error): give up
   * after the first failed attempt instead of retrying.
   */
  readonly staleAtHand: boolean;
}

/** A loaded value with what its entry should record (the tip height it was read at). */
export interface LoadedValue {
  readonly value: string;
  readonly meta?: EntryMeta | undefined;
}

export type Loader = (ctx: LoadContext) => Promise<string | LoadedValue>;

export interface CachePolicy {
  /** Time to live in ms; undefined or 0 = until explicitly removed. */
  readonly ttlMs?: number | undefined;
  /** Do not read the cache: fetch fresh (the result is still stored unless skip). */
  readonly bust?: boolean;
  /** Do not store the result of this request. */
  readonly skip?: boolean;
  /** What the request requires of a cached entry beyond its ttl (block bound). */
  readonly freshness?: FreshnessRequirement | undefined;
  /**
   * The chain as the judge sees it (src/chain implements it): the tip believed now, the last
   * one believed however old, when heights were first learned. Asked only when the judge
   * needs the tip (a block bound, a proof); without it no tip is known, which no entry's
   * height fits.
   */
  readonly tipView?: (() => TipView | Promise<TipView>) | undefined;
  /**
   * Proof of currency from the event observer for this read (docs/events.md): an entry read
   * blocks ago that it proves unchanged at the tip (every block since arrived, none touched
   * what it depends on) counts as 0 blocks behind for every block bound, and is current at
   * that tip (the verdict says so). The tip is then learned as for a block bound.
   */
  readonly proof?: ProofView | undefined;
  /** stale-while-revalidate window, ms (0 or undefined = off). */
  readonly staleWhileRevalidateMs?: number | undefined;
  /** stale-if-error window, ms (0 or undefined = off); needs isTransient. */
  readonly staleIfErrorMs?: number | undefined;
  /** Whether a load failure is transient (timeout, 5xx, 429, ...): only those fall back to stale. */
  readonly isTransient?: ((err: unknown) => boolean) | undefined;
  /** How long an entry with a ttl is kept past its freshness for stale answers (ms). */
  readonly keepStaleMs?: number | undefined;
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
  /** A stale entry was refetched, or answered (then `entry` is it and outcome is 'hit'). */
  readonly stale?: StaleServing | undefined;
  /** For a stale answer: epoch ms when the entry stopped being fresh. */
  readonly staleSince?: number | undefined;
  /**
   * For an answer from a stored entry: the judge's verdict it was answered under, which also
   * says the tip the entry is current at (tipOf in judge.ts).
   */
  readonly verdict?: Verdict | undefined;
  /** For a load: what its entry records (the tip height it was read at), when the loader said. */
  readonly meta?: EntryMeta | undefined;
}

/** A leader's value; remote when another instance loaded it (cross-instance coalescing). */
interface Loaded {
  readonly value: string;
  readonly remote: boolean;
  /** Whether the value was written to the store. */
  readonly stored: boolean;
  /** What the loader said of the value (absent for another instance's value). */
  readonly meta?: EntryMeta | undefined;
}

interface InFlight {
  readonly promise: Promise<Loaded>;
  /** Whether the leader will store the value; joiners that want it stored do it otherwise. */
  readonly leaderStores: boolean;
  /**
   * A bust started a newer load of the key while this one was under way: this one's value
   * is older than what the bust will answer, so it must not be stored over it.
   */
  superseded: boolean;
}

export type StoreErrorHook = (err: unknown, op: 'get' | 'set' | 'delete' | 'list') => void;
/** Told the outcome of every lookup that produced a value (metrics). */
export type OutcomeHook = (outcome: CacheOutcome, key: string) => void;
/** Told of every stale entry answered or refetched, and of how each background refresh ended. */
export interface StaleHooks {
  onStale?(kind: StaleServing, key: string): void;
  onRevalidate?(result: 'ok' | 'failed', key: string, err?: unknown): void;
}

/**
 * The chain identity entries are read and written under, from a key (its network); undefined
 * while unknown. Told of entries of another chain, which are never served.
 */
export interface ChainIdentityHooks {
  current(key: string): string | undefined;
  onOtherChain?(key: string, entry: CacheEntry): void;
}

/**
 * Attested answers (docs/consensus.md): how many upstreams must have agreed on an entry of this
 * key (the k of its network); undefined: any entry serves.
 */
export interface AttestationRule {
  required(key: string): number | undefined;
}

/** The tip as a policy without a tipView sees it: unknown. */
const NO_TIP: TipView = { height: undefined, firstLearnedAt: () => undefined };

export class ReadThroughCache {
  readonly #inflight = new Map<string, InFlight>();

  private readonly onStoreError: StoreErrorHook;
  private readonly onOutcome: OutcomeHook;
  private readonly staleHooks: StaleHooks;
  /** Coalescing across instances sharing the store (CACHE_STORE=redis); absent: in-process only. */
  private readonly coalescer: CrossInstanceCoalescer | undefined;
  /** Clock for freshness, in epoch ms; give it the store's. */
  private readonly now: () => number;
  private readonly chain: ChainIdentityHooks | undefined;
  private readonly attestation: AttestationRule | undefined;
  private readonly onCorrupt: (key: string) => void;

  constructor(
    private readonly store: CacheStore,
    hooks: {
      onStoreError?: StoreErrorHook;
      onOutcome?: OutcomeHook;
      coalescer?: CrossInstanceCoalescer | undefined;
      now?: () => number;
      stale?: StaleHooks;
      /** Chain identity of entries (docs/freshness.md); absent: entries of any chain serve. */
      chain?: ChainIdentityHooks;
      /** Votes an entry must record (attested answers); absent: any entry serves. */
      attestation?: AttestationRule | undefined;
      /** Told of every damaged entry found, which is removed and treated as a miss. */
      onCorrupt?: (key: string) => void;
    } = {},
  ) {
    this.chain = hooks.chain;
    this.attestation = hooks.attestation;
    this.onCorrupt = hooks.onCorrupt ?? (() => {});
    this.staleHooks = hooks.stale ?? {};
    this.now = hooks.now ?? Date.now;
    this.onStoreError = hooks.onStoreError ?? (() => {});
    this.onOutcome = hooks.onOutcome ?? (() => {});
    this.coalescer = hooks.coalescer;
  }

  /** Report a store failure seen outside the read-through path (admin removal): logged and counted. */
  reportStoreError(err: unknown, op: 'get' | 'set' | 'delete' | 'list'): void {
    this.onStoreError(err, op);
  }

  /**
   * Read an entry (fresh or stale), a store failure counting as a miss. A damaged entry is a
   * miss too: removed (best effort) and counted, never answered.
   */
  async peek(key: string): Promise<CacheEntry | undefined> {
    try {
      return await this.store.get(key);
    } catch (err) {
      if (err instanceof CorruptEntryError) {
        this.onCorrupt(key);
        await this.store.delete(key).catch(() => false);
        return undefined;
      }
      this.onStoreError(err, 'get');
      return undefined;
    }
  }

  /**
   * The entry for key only if the judge finds it fresh for `policy` now (no load, no upstream):
   * what a caller that answers from the store without loading (a remembered 404, an ABI for an
   * error message) reads.
   */
  async fresh(key: string, policy: CachePolicy = {}): Promise<CacheEntry | undefined> {
    const entry = await this.peek(key);
    if (entry === undefined) return undefined;
    let judged = this.#judge(key, entry, policy);
    if (judged instanceof Promise) judged = await judged;
    return judged.use === 'fresh' ? entry : undefined;
  }

  /** Write an entry; false (reported, not thrown) when the store could not write it. */
  async put(key: string, value: string, ttlMs?: number, meta?: EntryMeta | undefined): Promise<boolean> {
    // Every entry records the chain it was read from, when known.
    const chain = this.chain?.current(key);
    if (chain !== undefined) meta = { ...meta, chain };
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
   * miss). Loader failures are not cached and reach every waiter, unless a stale entry may
   * be answered instead (stale-if-error).
   */
  async get(key: string, load: Loader, policy: CachePolicy = {}): Promise<CacheResult> {
    let stale: CacheEntry | undefined;
    // Whether the judge allows the stale entry if the refetch fails (its stale-if-error window).
    let ifError = false;
    if (policy.bust !== true) {
      const entry = await this.peek(key);
      if (entry !== undefined) {
        let judged = this.#judge(key, entry, policy);
        if (judged instanceof Promise) judged = await judged;
        if (judged.use === 'fresh') {
          this.onOutcome('hit', key);
          return { value: entry.value, outcome: 'hit', entry, verdict: judged };
        }
        if (judged.use === 'stale') {
          stale = entry;
          ifError = judged.ifError;
          if (judged.whileRevalidate) {
            this.#revalidate(key, load, policy);
            this.onOutcome('hit', key);
            this.staleHooks.onStale?.('while-revalidate', key);
            return {
              value: entry.value,
              outcome: 'hit',
              entry,
              stale: 'while-revalidate',
              staleSince: judged.since,
              verdict: judged,
            };
          }
        }
      }
    }
    try {
      const result = await this.#load(key, load, policy, { staleAtHand: ifError });
      if (stale === undefined) return result;
      this.staleHooks.onStale?.('refetch', key);
      return { ...result, stale: 'refetch' };
    } catch (err) {
      if (!ifError || stale === undefined || !policy.isTransient!(err)) throw err;
      // Judged again at the moment it is answered: the refetch took time, and the window may
      // have closed (or the chain changed) meanwhile.
      let again = this.#judge(key, stale, policy);
      if (again instanceof Promise) again = await again;
      if (again.use === 'fresh') {
        this.onOutcome('hit', key);
        return { value: stale.value, outcome: 'hit', entry: stale, verdict: again };
      }
      if (again.use !== 'stale' || !again.ifError) throw err;
      this.onOutcome('hit', key);
      this.staleHooks.onStale?.('if-error', key);
      return {
        value: stale.value,
        outcome: 'hit',
        entry: stale,
        stale: 'if-error',
        staleSince: again.since,
        verdict: again,
      };
    }
  }

  /** A miss (or a stale entry to replace): join the load under way, or lead one. */
  async #load(key: string, load: Loader, policy: CachePolicy, ctx: LoadContext): Promise<CacheResult> {
    const wantsStore = policy.skip !== true;
    const older = this.#inflight.get(key);
    // A bust never joins a load under way: that load began before the bust arrived, so its
    // value may be older than what the bust asks for. It starts its own, which later
    // requests join instead, and the older one no longer stores its value.
    if (older !== undefined && policy.bust !== true) {
      const { value, stored: leaderStored, meta } = await older.promise;
      let stored = wantsStore && leaderStored;
      if (wantsStore && !older.leaderStores && !older.superseded)
        stored = await this.put(key, value, policy.ttlMs, this.#entryMeta(meta, policy));
      this.onOutcome('coalesced', key);
      return { value, outcome: 'coalesced', stored, meta };
    }
    // Only a bust that stores has a newer value to protect (bust + skip leaves the cache alone).
    if (older !== undefined && wantsStore) older.superseded = true;
    const flight = this.#start(key, load, wantsStore, policy, ctx);
    try {
      const { value, remote, stored, meta } = await flight.promise;
      const outcome = remote ? 'coalesced' : policy.bust === true ? 'bypass' : 'miss';
      this.onOutcome(outcome, key);
      return { value, outcome, stored, meta };
    } finally {
      if (this.#inflight.get(key) === flight) this.#inflight.delete(key);
    }
  }

  /** Lead a load of key and register it as the one under way, for identical requests to join. */
  #start(key: string, load: Loader, stores: boolean, policy: CachePolicy, ctx: LoadContext): InFlight {
    const flight: { -readonly [K in keyof InFlight]: InFlight[K] } = {
      promise: undefined as unknown as Promise<Loaded>,
      leaderStores: stores,
      superseded: false,
    };
    flight.promise = this.#lead(key, load, flight, policy, ctx);
    this.#inflight.set(key, flight);
    return flight;
  }

  /**
   * stale-while-revalidate: refresh key in the background, unless a load of it is already
   * under way (that one replaces the entry). Its result replaces the entry; a failure leaves
   * the entry as it is and answers nobody.
   */
  #revalidate(key: string, load: Loader, policy: CachePolicy): void {
    if (this.#inflight.has(key)) return;
    const flight = this.#start(
      key,
      load,
      true,
      { ...policy, bust: true, skip: false },
      { staleAtHand: false },
    );
    const promise = flight.promise;
    promise.then(
      () => this.staleHooks.onRevalidate?.('ok', key),
      (err: unknown) => this.staleHooks.onRevalidate?.('failed', key, err),
    );
    void promise
      .catch(() => {})
      .finally(() => {
        if (this.#inflight.get(key) === flight) this.#inflight.delete(key);
      });
  }

  async #lead(
    key: string,
    load: Loader,
    flight: Pick<InFlight, 'leaderStores' | 'superseded'>,
    policy: CachePolicy,
    ctx: LoadContext,
  ): Promise<Loaded> {
    // Read when the value is there, not when the load began: a bust may supersede it meanwhile.
    const storing = (): boolean => flight.leaderStores && !flight.superseded;
    if (this.coalescer === undefined) {
      const { value, meta } = loaded(await load(ctx));
      const stored = storing() && (await this.put(key, value, policy.ttlMs, this.#entryMeta(meta, policy)));
      return { value, remote: false, stored, meta };
    }
    let storedHere = false;
    let meta: EntryMeta | undefined;
    const shared = await this.coalescer.run(key, {
      load: async () => {
        const got = loaded(await load(ctx));
        meta = got.meta;
        if (storing())
          storedHere = await this.put(key, got.value, policy.ttlMs, this.#entryMeta(meta, policy));
        return got.value;
      },
      // Another instance's entry counts only if it is fresh for this very request: the stale
      // entry this load is replacing must never come back as its result.
      read: async () => {
        const entry = await this.peek(key);
        if (entry === undefined) return undefined;
        let judged = this.#judge(key, entry, policy);
        if (judged instanceof Promise) judged = await judged;
        return judged.use === 'fresh' ? entry : undefined;
      },
      get stores() {
        return storing();
      },
      get votes() {
        return meta?.votes;
      },
      fresh: policy.bust === true,
    });
    // Another instance's value attested by fewer upstreams than this key needs here (an
    // instance of another consensus setting on the same store): not this request's answer.
    const required = this.attestation?.required(key);
    if (!shared.loadedHere && required !== undefined && (shared.votes ?? 1) < required) {
      const got = loaded(await load(ctx));
      const stored =
        storing() && (await this.put(key, got.value, policy.ttlMs, this.#entryMeta(got.meta, policy)));
      return { value: got.value, remote: false, stored, meta: got.meta };
    }
    if (!shared.loadedHere && shared.votes !== undefined) meta = { votes: shared.votes };
    // Another instance's value that it did not store (its request had skipCache): store it here.
    let stored = shared.loadedHere ? storedHere : storing() && shared.stored;
    if (!shared.loadedHere && storing() && !shared.stored)
      stored = await this.put(key, shared.value, policy.ttlMs, this.#entryMeta(meta, policy));
    return { value: shared.value, remote: !shared.loadedHere, stored, meta };
  }

  /** What a new entry records: the loader's meta and the stale retention, if any. */
  #entryMeta(meta: EntryMeta | undefined, policy: CachePolicy): EntryMeta | undefined {
    if (policy.keepStaleMs === undefined || policy.keepStaleMs <= 0) return meta;
    return { ...meta, keepStaleMs: policy.keepStaleMs };
  }

  /**
   * The judge's verdict on an entry for this request, now (src/cache/judge.ts): the request's
   * requirements from its policy, the chain's view when the judge would look at it (learning
   * the tip may take a shared /v2/info, hence the promise), the chain identity from the key.
   */
  #judge(key: string, entry: CacheEntry, policy: CachePolicy): Verdict | Promise<Verdict> {
    const chain = this.chain?.current(key);
    // stale-if-error needs a way to tell a transient failure: without one, no window.
    const req: Requirements = {
      maxBlocks: policy.freshness?.maxBlocks,
      staleWhileRevalidateMs: policy.staleWhileRevalidateMs,
      staleIfErrorMs: policy.isTransient === undefined ? undefined : policy.staleIfErrorMs,
      chain,
      proof: policy.proof,
      minVotes: this.attestation?.required(key),
    };
    const verdict = (tip: TipView | undefined): Verdict => {
      const v = judge(entry, req, tip, this.now());
      if (v.use === 'unusable' && v.why === 'other-chain') this.chain?.onOtherChain?.(key, entry);
      return v;
    };
    if (!needsTip(entry, req, this.now())) return verdict(undefined);
    const view = this.#tipView(policy);
    return view instanceof Promise ? view.then(verdict) : verdict(view);
  }

  /** The chain's view for the judge: the policy's port, else a view that knows no tip. */
  #tipView(policy: CachePolicy): TipView | Promise<TipView> {
    return policy.tipView === undefined ? NO_TIP : policy.tipView();
  }

  /**
   * The judge's fresh verdict when get(key) with this policy would still serve this very entry
   * object as a plain hit, judged synchronously from the store's memory tier; undefined when it
   * would not, or when unsure. Anything that changes the key (a write, a bust, a failed write,
   * an invalidation, another instance's change evicting the hot copy) replaces or drops the
   * object, so answers derived from it stop at once. The verdict says the tip the entry is
   * current at now (tipOf), for a replay to tell.
   */
  stillServes(key: string, entry: CacheEntry, policy: CachePolicy = {}): Verdict | undefined {
    if (this.store.peekHot?.(key) !== entry) return undefined;
    const judged = this.#judge(key, entry, policy);
    if (judged instanceof Promise) {
      // The tip is only known asynchronously here (shared tips): let the full path judge it.
      judged.catch(() => {});
      return undefined;
    }
    return judged.use === 'fresh' ? judged : undefined;
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
   * One page of the live keys under prefix in key order, strictly after `after`, at most
   * limit: from the store's index when it keeps one, else the whole list sorted. A store
   * failure is thrown.
   */
  async listPage(prefix: string, after: string | undefined, limit: number): Promise<string[]> {
    if (this.store.listPage !== undefined) return this.store.listPage(prefix, after, limit);
    const keys = (await this.store.list(prefix)).sort();
    return keys.filter((k) => after === undefined || k > after).slice(0, limit);
  }

  /** How many live keys are under prefix. A store failure is thrown. */
  async count(prefix: string): Promise<number> {
    if (this.store.count !== undefined) return this.store.count(prefix);
    return (await this.store.list(prefix)).length;
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

/** A loader's answer as value and meta. */
function loaded(got: string | LoadedValue): LoadedValue {
  return typeof got === 'string' ? { value: got } : got;
}
