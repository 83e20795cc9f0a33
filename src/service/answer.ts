/**
 * A success ready to send, as every service entry point returns it: the HTTP layer (or a
 * batch, which wraps several) sends it as is, without knowing how it was made.
 */
export interface RenderedAnswer {
  readonly status: number;
  /** Response headers: Cache-Status and Age where a cache answered, and the Content-Type. */
  readonly headers: Readonly<Record<string, string>>;
  /** The JSON text of the success envelope. */
  readonly body: string;
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
  /** Headers that change per answer (Cache-Status, Age), as flat name/value pairs. */
  headers?(now: number): string[];
  /** Told each time the answer is replayed (cache outcome metrics). */
  served?(): void;
}
