/**
 * Usage metered per key: the shapes shared by the recorder (src/service/usage/recorder.ts) and
 * its stores, UTC day arithmetic, and the one tally that filters, groups and sorts rows for
 * every store, so that the three answer a query identically.
 *
 * A row is an aggregate, never one request: the figures of every request of one key (null:
 * anonymous), one UTC day, one route, one function ('' when none) and one outcome, added up.
 */

export const USAGE_OUTCOMES = ['hit', 'miss', 'error', 'refused'] as const;
export type UsageOutcome = (typeof USAGE_OUTCOMES)[number];

/** What a query can group by, in the order rows are identified. */
export const USAGE_DIMENSIONS = ['key', 'day', 'route', 'function', 'outcome'] as const;
export type UsageDimension = (typeof USAGE_DIMENSIONS)[number];

export const USAGE_FIGURES = ['requests', 'units', 'upstreamRequests', 'bytesSent'] as const;
export type UsageFigure = (typeof USAGE_FIGURES)[number];

export interface UsageFigures {
  requests: number;
  units: number;
  upstreamRequests: number;
  bytesSent: number;
}

/** One request (or several alike) as the HTTP layer reports it; the recorder adds the day. */
export interface UsageRecord {
  /** The API key's name; null for anonymous requests. Never '' (names have 1 to 64 characters). */
  readonly key: string | null;
  /** The route's pattern, e.g. `/contract-calls/read-only/{contractAddress}/{contractName}/{functionName}`. */
  readonly route: string;
  /** e.g. `SP...abc.token::get-balance`; '' when the route has none. */
  readonly function: string;
  readonly outcome: UsageOutcome;
  /** Default 1. */
  readonly requests?: number;
  readonly units: number;
  readonly upstreamRequests: number;
  readonly bytesSent: number;
}

/** A stored aggregate: one (key, day, route, function, outcome) and its summed figures. */
export interface UsageRow extends UsageFigures {
  readonly key: string | null;
  /** UTC day, `YYYY-MM-DD`. */
  readonly day: string;
  readonly route: string;
  readonly function: string;
  readonly outcome: UsageOutcome;
}

export interface UsageQuery {
  /** undefined: every key; null: anonymous requests only; a name: that key only. */
  readonly key?: string | null | undefined;
  /** First UTC day, inclusive. The recorder's default: the oldest day retention keeps. */
  readonly from?: string | undefined;
  /** Last UTC day, inclusive. Default: no bound. */
  readonly to?: string | undefined;
  /** Dimensions of a row, also the order rows are sorted in. Empty: no rows, totals only. */
  readonly groupBy: readonly UsageDimension[];
}

/** One group: the groupBy dimensions (only those) and the figures summed over the group. */
export type UsageResultRow = Partial<{
  key: string | null;
  day: string;
  route: string;
  function: string;
  outcome: UsageOutcome;
}> &
  UsageFigures;

export interface UsageResult {
  /** Sorted by the groupBy dimensions in groupBy order (null key first, strings by code unit). */
  readonly rows: UsageResultRow[];
  /** Over every row the query matched (with an empty groupBy, the only answer). */
  readonly totals: UsageFigures;
}

/**
 * Where the rows live. add() adds figures to rows (creating them), as one unit where the
 * store allows (SQLite: one transaction; Redis: one script). monthUnits() reads counters kept
 * per key and UTC month beside the rows (so a quota never sums a month of rows), which prune
 * removes only once the whole month is older than the oldest day kept.
 */
export interface UsageStore {
  readonly kind: 'memory' | 'sqlite' | 'redis';
  /**
   * `batchId`: the recorder's name for this batch, the same when a failed add is sent again. A
   * store whose add can fail after it was applied (Redis: a reply lost with the connection)
   * applies one id once; the others apply nothing when add fails, and ignore it.
   */
  add(rows: readonly UsageRow[], batchId?: string): Promise<void>;
  /** from/to undefined: no bound (the recorder fills in its retention). */
  query(query: UsageQuery): Promise<UsageResult>;
  /** Delete every row of a day before oldestKeptDay, and the month counters of months before its month. */
  prune(oldestKeptDay: string): Promise<void>;
  /** Units of each key in month (`YYYY-MM`), in the order of keys. */
  monthUnits(keys: readonly (string | null)[], month: string): Promise<number[]>;
  /** Release what the store opened itself (a handle or client it was given stays open). */
  close(): Promise<void>;
}

const DAY_MS = 86_400_000;
const DAY = /^\d{4}-\d{2}-\d{2}$/;

/** The UTC day of an epoch-ms instant, `YYYY-MM-DD`. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** The UTC month of a day or of an epoch-ms instant, `YYYY-MM`. */
export function utcMonth(at: string | number): string {
  return (typeof at === 'number' ? utcDay(at) : at).slice(0, 7);
}

/** Epoch ms of a day's start; throws RangeError unless day is a real `YYYY-MM-DD`. */
export function dayStart(day: string): number {
  const ms = DAY.test(day) ? Date.parse(`${day}T00:00:00Z`) : Number.NaN;
  if (!Number.isFinite(ms) || utcDay(ms) !== day) throw new RangeError(`not a day (YYYY-MM-DD): ${day}`);
  return ms;
}

export function addDays(day: string, days: number): string {
  return utcDay(dayStart(day) + days * DAY_MS);
}

/** With retentionDays kept (today included), the oldest day kept at now. */
export function oldestKeptDay(now: number, retentionDays: number): string {
  return addDays(utcDay(now), -(retentionDays - 1));
}

/** Throw RangeError for a groupBy naming an unknown or repeated dimension, or a bad from/to. */
export function checkQuery(query: UsageQuery): void {
  const seen = new Set<string>();
  for (const d of query.groupBy) {
    if (!(USAGE_DIMENSIONS as readonly string[]).includes(d) || seen.has(d)) {
      throw new RangeError(`groupBy: unknown or repeated dimension ${JSON.stringify(d)}`);
    }
    seen.add(d);
  }
  if (query.from !== undefined) dayStart(query.from);
  if (query.to !== undefined) dayStart(query.to);
}

export function zeroFigures(): UsageFigures {
  return { requests: 0, units: 0, upstreamRequests: 0, bytesSent: 0 };
}

function addFigures(into: UsageFigures, from: UsageFigures): void {
  into.requests += from.requests;
  into.units += from.units;
  into.upstreamRequests += from.upstreamRequests;
  into.bytesSent += from.bytesSent;
}

/** Whether a row of (key, day) falls in query's key filter and day range. */
export function matches(query: UsageQuery, key: string | null, day: string): boolean {
  if (query.key !== undefined && query.key !== key) return false;
  if (query.from !== undefined && day < query.from) return false;
  if (query.to !== undefined && day > query.to) return false;
  return true;
}

/** null first, then strings by UTF-16 code unit: the same order whatever store answered. */
function compare(a: string | null | undefined, b: string | null | undefined): number {
  if (a === b) return 0;
  if (a === null || a === undefined) return -1;
  if (b === null || b === undefined) return 1;
  return a < b ? -1 : 1;
}

type Group = Partial<Record<UsageDimension, string | null>>;

/**
 * Groups rows by a query's dimensions and sums their figures. Rows given to add() must
 * already match the query (see matches); they may be stored rows or groups of the same
 * groupBy (a store's answer merged with a recorder's unflushed figures).
 */
export class UsageTally {
  readonly #groupBy: readonly UsageDimension[];
  /** JSON of the group's values -> its values (in groupBy order) and figures. */
  readonly #groups = new Map<string, { values: (string | null)[]; figures: UsageFigures }>();
  readonly #totals = zeroFigures();

  constructor(groupBy: readonly UsageDimension[]) {
    this.#groupBy = groupBy;
  }

  add(row: Group & UsageFigures): void {
    addFigures(this.#totals, row);
    if (this.#groupBy.length === 0) return;
    const values = this.#groupBy.map((d) => row[d] ?? null);
    const id = JSON.stringify(values);
    let slot = this.#groups.get(id);
    if (slot === undefined) {
      slot = { values, figures: zeroFigures() };
      this.#groups.set(id, slot);
    }
    addFigures(slot.figures, row);
  }

  /** Every row of another answer to the same groupBy. */
  addResult(result: UsageResult): void {
    if (this.#groupBy.length === 0) addFigures(this.#totals, result.totals);
    else for (const row of result.rows) this.add(row);
  }

  result(): UsageResult {
    const slots = [...this.#groups.values()];
    // On the values arrays (one shape), not on the rows: a sort of many rows stays cheap.
    slots.sort((a, b) => {
      for (let i = 0; i < a.values.length; i++) {
        const c = compare(a.values[i], b.values[i]);
        if (c !== 0) return c;
      }
      return 0;
    });
    const dims = this.#groupBy;
    const rows = slots.map(({ values, figures }) => {
      const row: Group = {};
      dims.forEach((d, i) => {
        row[d] = values[i]!;
      });
      return { ...row, ...figures } as UsageResultRow;
    });
    return { rows, totals: { ...this.#totals } };
  }
}
