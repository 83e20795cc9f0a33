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
}

export interface CoalescedValue {
  readonly value: string;
  /** true: task.load() produced it here; false: another instance's load did. */
  readonly loadedHere: boolean;
  /** For a value from elsewhere: whether it is in the shared store already. */
  readonly stored: boolean;
}

export interface CrossInstanceCoalescer {
  /**
   * The value for key, loaded by exactly one of the instances asking at the same time
   * (this one, through task.load, or another one). A failure of the loading instance that
   * every asker would meet too is thrown to all of them.
   */
  run(key: string, task: CoalesceTask): Promise<CoalescedValue>;
}
