/**
 * Quotas (docs/access-control.md): one token bucket per API key or keyless client address,
 * of `capacity` tokens refilled at `capacity` per minute. `take` spends one token, or says
 * how long until one is there; `judge` decides a request against all of a key's buckets in
 * one operation (one Redis round trip in a fleet, however many quotas the key has).
 *
 * On one instance the buckets live in memory (bounded, so a flood of addresses cannot grow it
 * without end); with Redis, every instance
 * spends from the same buckets (src/http/admission/redis-quota.ts), so a fleet counts one quota.
 */

/** 0 = a token was spent; otherwise the ms until the next token (nothing was spent). */
export type QuotaTake = number | Promise<number>;

/** A bucket after a spend: whether it held `minimum`, and what it holds now. */
export interface Balance {
  /** The bucket held at least `minimum` tokens, and `cost` was spent. */
  readonly ok: boolean;
  /** Tokens now (after the spend when ok); may be below zero for a cost in units. */
  readonly tokens: number;
  /** When not ok: ms until the bucket holds `minimum` again. */
  readonly waitMs: number;
}

/** A bucket a request is judged against (made once per key: its quota plan). */
export interface BucketSpend {
  readonly id: string;
  readonly capacity: number;
  /** What an admitted request takes now: 1 for a request quota, 0 for units (taken after the answer). */
  readonly cost: number;
  /** Tokens the bucket must hold for the request to be admitted; default 1. */
  readonly minimum?: number;
}

/** Several buckets judged at once (QuotaStore.judge). */
export interface Judgement {
  /** Each bucket's tokens afterwards, in order (after the spend when every one held a token). */
  readonly tokens: number[];
  /** The first bucket that held less than its minimum; -1: every one held it (and spent its cost). */
  readonly short: number;
  /** Ms until every short bucket holds its minimum again; 0 when none is short. */
  readonly waitMs: number;
}

export interface QuotaStore {
  /**
   * Judge a request against its buckets, atomically: when every one holds at least its minimum
   * and `spend` is true, each spends its cost; otherwise none spends anything (a request
   * refused by one quota costs no other, and `spend` false only looks).
   */
  judge(buckets: readonly BucketSpend[], spend: boolean): Judgement | Promise<Judgement>;
  /** Spend one token of bucket `id` (capacity tokens, refilled capacity per minute). */
  take(id: string, capacity: number): QuotaTake;
  /**
   * Spend `cost` tokens of bucket `id` if it holds at least `minimum` (a cost in units is
   * admitted while one unit is left, and may drive the bucket below zero: docs/usage.md).
   * `cost` 0 only reads the balance.
   */
  spend(id: string, capacity: number, cost: number, minimum: number): Balance | Promise<Balance>;
}

const MINUTE_MS = 60_000;
const MAX_BUCKETS = 100_000;

interface Bucket {
  tokens: number;
  at: number;
}

/** Ms until a bucket of `capacity` per minute holds `minimum` tokens again. */
function refillMs(bucket: Bucket, minimum: number, capacity: number): number {
  return Math.ceil(((minimum - bucket.tokens) * MINUTE_MS) / capacity);
}

/** The buckets of the judgement under way (judge is synchronous: one list serves every call). */
const held: Bucket[] = [];

export class MemoryQuota implements QuotaStore {
  /**
   * Bounded by dropping the oldest-created bucket when full (a plain Map keeps insertion
   * order): cheaper on every request than an LRU's recency bookkeeping, and a dropped bucket
   * only comes back full, which errs on the side of the client.
   */
  readonly #buckets = new Map<string, Bucket>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  take(id: string, capacity: number): number {
    const b = this.spend(id, capacity, 1, 1);
    return b.ok ? 0 : b.waitMs;
  }

  judge(buckets: readonly BucketSpend[], spend: boolean): Judgement {
    const now = this.#now();
    const n = buckets.length;
    const tokens: number[] = new Array(n);
    let short = -1;
    let waitMs = 0;
    for (let i = 0; i < n; i++) {
      const spec = buckets[i]!;
      const bucket = this.#refill(spec.id, spec.capacity, now);
      held[i] = bucket;
      tokens[i] = bucket.tokens;
      const minimum = spec.minimum ?? 1;
      if (bucket.tokens < minimum) {
        if (short < 0) short = i;
        waitMs = Math.max(waitMs, refillMs(bucket, minimum, spec.capacity));
      }
    }
    if (short >= 0 || !spend) return { tokens, short, waitMs };
    for (let i = 0; i < n; i++) {
      const bucket = held[i]!;
      bucket.tokens -= buckets[i]!.cost;
      tokens[i] = bucket.tokens;
    }
    return { tokens, short, waitMs: 0 };
  }

  spend(id: string, capacity: number, cost: number, minimum: number): Balance {
    const bucket = this.#refill(id, capacity, this.#now());
    if (bucket.tokens < minimum) {
      return { ok: false, tokens: bucket.tokens, waitMs: refillMs(bucket, minimum, capacity) };
    }
    bucket.tokens -= cost;
    return { ok: true, tokens: bucket.tokens, waitMs: 0 };
  }

  #refill(id: string, capacity: number, now: number): Bucket {
    let bucket = this.#buckets.get(id);
    if (bucket === undefined) {
      if (this.#buckets.size >= MAX_BUCKETS) {
        const oldest = this.#buckets.keys().next().value;
        if (oldest !== undefined) this.#buckets.delete(oldest);
      }
      bucket = { tokens: capacity, at: now };
      this.#buckets.set(id, bucket);
      return bucket;
    }
    const elapsed = Math.max(0, now - bucket.at);
    bucket.tokens = Math.min(capacity, bucket.tokens + (elapsed * capacity) / MINUTE_MS);
    bucket.at = now;
    return bucket;
  }
}
