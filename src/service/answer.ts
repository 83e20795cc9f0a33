import type { CacheEntry } from '../cache/entry.js';
import type { CacheView } from '../cache/view.js';

/**
 * A service's answer as values, never HTTP text: the answer's JSON text, what the cache did and
 * the tip it was read at. src/http/reply.ts alone turns it into status, headers and bytes; a
 * batch item's meta is rendered there from the same values.
 */
export interface RenderedAnswer {
  /** The JSON text of the answer (the success envelope, or the node's own shape). */
  readonly body: string;
  /** What the cache did (absent where no cache answered). */
  readonly cache?: CacheView | undefined;
  /** The chain tip height the answer was read at, when known. */
  readonly tipHeight?: number | undefined;
  /** How the answer may be replayed for an identical request; absent = never. */
  readonly reuse?: LaneReuse | undefined;
}

/**
 * How an answer may be replayed for an identical request (the HTTP fast lane, src/http/fast-lane.ts)
 * without going through the service again. Given only for answers whose validity the service can
 * judge synchronously; everything else simply has none. It says what each replay repeats as
 * values; src/http renders them.
 */
export interface LaneReuse {
  /** Whether the full path would still give this very answer at `now` (epoch ms); false drops it. */
  valid(now: number): boolean;
  /**
   * The cache hit every replay repeats, when the answer is one: its Cache-Status and Age follow
   * the entry's age and freshness at each replay.
   */
  readonly hit?: CacheEntry | undefined;
  /**
   * The tip each replay tells, when it moves with the chain (the verdict that let the replay
   * through names it); absent when it is the tip of the first answer, kept with its headers.
   */
  readonly tipHeight?: (() => number | undefined) | undefined;
  /** Told each time the answer is replayed (cache outcome metrics). */
  served?(): void;
}
