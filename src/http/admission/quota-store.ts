/**
 * Quotas (docs/access-control.md): one token bucket per API key or keyless client address,
 * of `capacity` tokens refilled at `capacity` per minute. `take` spends one token, or says
 * how long until one is there.
 *
 * On one instance the buckets live in memory (bounded, so a flood of addresses cannot grow it
 * without end); with Redis, every instance
 * spends from the same buckets (src/http/admission/redis-quota.ts), so a fleet counts one quota.
 */

/** 0 = a token was spent; otherwise the ms until the next token (nothing was spent). */
export type QuotaTake = number | Promise<number>;

export interface QuotaStore {
  /** Spend one token of bucket `id` (capacity tokens, refilled capacity per minute). */
  take(id: string, capacity: number): QuotaTake;
}

const MINUTE_MS = 60_000;
const MAX_BUCKETS = 100_000;

interface Bucket {
  tokens: number;
  at: number;
}

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
    const now = this.#now();
    const bucket = this.#refill(id, capacity, now);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - bucket.tokens) * MINUTE_MS) / capacity);
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
