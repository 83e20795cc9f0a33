/**
 * Coalescing across instances: the optional hook through which the read-through cache's
 * local leader of a miss (the one request per key and process that would load) makes sure
 * that only one instance of several sharing a store loads it. Without the hook (memory,
 * sqlite) the cache coalesces in-process only, on its unchanged fast path.
 */
import type { CacheEntry } from './entry.js';

export interface CoalesceTask {
  /** Load the value and store it (unless `stores` is false). Called at most once. */
  load(): Promise<string>;
  /** The shared store's entry for the key, a failure counting as absent. */
  read(): Promise<CacheEntry | undefined>;
  /**
   * Whether load() stores its value: false for skipCache, and once a newer bust superseded
   * the load (read when the load ends).
   */
  readonly stores: boolean;
  /** A bust: only a value whose load began after this call started is acceptable. */
  readonly fresh: boolean;
  /**
   * How many upstreams attested the value load() produced (docs/consensus.md), read when the
   * load ends and told to the other instances with it; undefined: one upstream's word.
   */
  readonly votes?: number | undefined;
}

export interface CoalescedValue {
  readonly value: string;
  /** true: task.load() produced it here; false: another instance's load did. */
  readonly loadedHere: boolean;
  /** For a value from elsewhere: whether it is in the shared store already. */
  readonly stored: boolean;
  /** For a value from elsewhere: the upstreams that attested it (undefined: one upstream's word). */
  readonly votes?: number | undefined;
}

export interface CrossInstanceCoalescer {
  /**
   * The value for key, loaded by exactly one of the instances asking at the same time
   * (this one, through task.load, or another one). A failure of the loading instance that
   * every asker would meet too is thrown to all of them.
   */
  run(key: string, task: CoalesceTask): Promise<CoalescedValue>;
}

/**
 * How a failure crosses instances: the holder publishes the wire form of a failure every
 * waiter would meet too (an unknown contract, a timeout, the shared budget exhausted), and each
 * waiter raises it again. The cache knows no error types of its own; the gateway's error table
 * supplies both directions (src/errors.ts).
 */
export interface SharedFailures {
  /** The wire form of `err`, or undefined when waiters elsewhere should load for themselves. */
  share(err: unknown): SharedFailure | undefined;
  /** The failure a waiter raises; undefined = not one it can raise (it loads for itself). */
  revive(failure: SharedFailure): Error | undefined;
}

/**
 * A failure as values: the error table's code, and the variant and retry time (whole seconds)
 * it names; the status and headers they mean are the HTTP layer's to render on each instance.
 */
export interface SharedFailure {
  readonly code: string;
  readonly message: string;
  readonly details?: Record<string, unknown>;
  readonly variant?: string;
  readonly retryAfter?: number;
}
