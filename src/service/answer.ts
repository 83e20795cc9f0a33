import type { CacheView } from './cache-status.js';

/**
 * A service's answer as values, never HTTP text: the answer's JSON text, what the cache did and
 * the tip it was read at. src/http/reply.ts alone turns it into status, headers and bytes; a
 * batch puts the same values in each item's meta.
 */
export interface RenderedAnswer {
  readonly status: number;
  /** The JSON text of the answer (the success envelope, or the node's own shape). */
  readonly body: string;
  /** What the cache did (absent where no cache answered). */
  readonly cache?: CacheView | undefined;
  /** The chain tip height the answer was read at, when known. */
  readonly tipHeight?: number | undefined;
  /** How the answer may be replayed for an identical request; absent = never. */
  readonly reuse?: LaneReuse | undefined;
}

export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * How an answer may be replayed for an identical request (the HTTP fast lane, src/http/fast-lane.ts)
 * without going through the service again. Given only for answers whose validity the service can
 * judge synchronously; everything else simply has none.
 */
export interface LaneReuse {
  /** Whether the full path would still give this very answer at `now` (epoch ms); false drops it. */
  valid(now: number): boolean;
  /**
   * Headers that change per answer (Cache-Status, Age), as flat name/value pairs; the same
   * array object as long as they are the same.
   */
  headers?(now: number): readonly string[];
  /** Told each time the answer is replayed (cache outcome metrics). */
  served?(): void;
}
