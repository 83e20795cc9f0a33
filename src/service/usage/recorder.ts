/**
 * Usage metered per key, on the request path: record() adds one request's figures to rows
 * aggregated in memory (no I/O, no promise, a few map lookups), and a timer flushes them to
 * the store at least once a second (close() flushes too). So a SIGTERM loses nothing and a
 * kill -9 at most the last second of figures.
 *
 * Reads see this instance's figures at once: query() and monthUnits() add what is recorded
 * but not yet flushed to what the store holds, and count nothing twice (a flush and a query
 * never overlap; while a flush is under way monthUnits counts its rows until the store's
 * figure that includes them has been read back).
 *
 * Retention: days before (today - retentionDays + 1), UTC, are deleted from the store on
 * start and every pruneIntervalMs, and never answered by a query without `from`.
 *
 * A store that fails (Redis down, disk full) loses nothing either: a failed flush's batch is
 * kept and sent again first at the next tick, alone and under the same batch id (reported to
 * onError), so a store that applied it before its reply was lost (Redis) applies it once.
 */
import { randomUUID } from 'node:crypto';
import {
  checkQuery,
  matches,
  oldestKeptDay,
  type UsageOutcome,
  type UsageQuery,
  type UsageRecord,
  type UsageResult,
  type UsageRow,
  type UsageStore,
  UsageTally,
  utcDay,
  utcMonth,
} from './usage.js';

export const DEFAULT_USAGE_RETENTION_DAYS = 90;
export const DEFAULT_USAGE_FLUSH_INTERVAL_MS = 1_000;
export const DEFAULT_USAGE_PRUNE_INTERVAL_MS = 3_600_000;

/** A key whose month units nobody asked for in this long is no longer refreshed. */
const WATCH_IDLE_MS = 10 * 60_000;
/** Most keys whose month units are refreshed at each flush; beyond, the first watched goes. */
const WATCH_MAX = 10_000;

export type UsageOp = 'flush' | 'prune' | 'month';

export interface UsageRecorderOptions {
  readonly store: UsageStore;
  /** Clock in epoch ms; injectable so tests can change days without sleeping. */
  readonly now?: () => number;
  /** USAGE_RETENTION_DAYS: whole UTC days kept, today included. Default 90. */
  readonly retentionDays?: number;
  /** Period of the flush timer (unref'd); 0: no timer, flush() and close() only. Default 1000. */
  readonly flushIntervalMs?: number;
  /** Period of the retention prune after the one at start; 0: at start only. Default one hour. */
  readonly pruneIntervalMs?: number;
  /** A failure of the timer's flush, a prune, or a refresh of month units. */
  readonly onError?: (err: unknown, op: UsageOp) => void;
}

interface Figures {
  requests: number;
  units: number;
  upstreamRequests: number;
  bytesSent: number;
}

/** day -> key -> route -> function -> outcome -> figures: no string is built per record. */
type Rows = Map<string, Map<string | null, Map<string, Map<string, Map<UsageOutcome, Figures>>>>>;

interface Batch {
  readonly rows: Rows;
  /** month -> key -> units. */
  readonly months: Map<string, Map<string | null, number>>;
  size: number;
}

/** A batch sent to the store, and its id (the same each time it is sent). */
interface Sent {
  readonly batch: Batch;
  readonly id: string;
}

const newBatch = (): Batch => ({ rows: new Map(), months: new Map() as Batch['months'], size: 0 });

/** The map under key in map, created empty when missing. */
function inner<K, K2, V>(map: Map<K, Map<K2, V>>, key: K): Map<K2, V> {
  let value = map.get(key);
  if (value === undefined) {
    value = new Map();
    map.set(key, value);
  }
  return value;
}

/** Add figures to one row of batch (creating it). The hot path: lookups, no string built. */
function addTo(
  batch: Batch,
  day: string,
  month: string,
  key: string | null,
  route: string,
  fn: string,
  outcome: UsageOutcome,
  requests: number,
  units: number,
  upstreamRequests: number,
  bytesSent: number,
): void {
  const byOutcome = inner(inner(inner(inner(batch.rows, day), key), route), fn);
  const held = byOutcome.get(outcome);
  if (held === undefined) {
    byOutcome.set(outcome, { requests, units, upstreamRequests, bytesSent });
    batch.size++;
  } else {
    held.requests += requests;
    held.units += units;
    held.upstreamRequests += upstreamRequests;
    held.bytesSent += bytesSent;
  }
  if (units !== 0) {
    const byKey = inner(batch.months, month);
    byKey.set(key, (byKey.get(key) ?? 0) + units);
  }
}

function rowsOf(batch: Batch): UsageRow[] {
  const out: UsageRow[] = [];
  for (const [day, byKey] of batch.rows)
    for (const [key, byRoute] of byKey)
      for (const [route, byFn] of byRoute)
        for (const [fn, byOutcome] of byFn)
          for (const [outcome, f] of byOutcome) out.push({ key, day, route, function: fn, outcome, ...f });
  return out;
}

const isCount = (n: number): boolean => Number.isSafeInteger(n) && n >= 0;

interface Watched {
  /** Month of `stored`; undefined until first read from the store. */
  month: string | undefined;
  /** The store's units of the key in month (the fleet's, flushed). */
  stored: number;
  askedAt: number;
}

export class UsageRecorder {
  readonly store: UsageStore;
  readonly retentionDays: number;
  readonly #now: () => number;
  readonly #onError: (err: unknown, op: UsageOp) => void;
  readonly #flushTimer: NodeJS.Timeout | undefined;
  readonly #pruneTimer: NodeJS.Timeout | undefined;
  #pending: Batch = newBatch();
  /** The batches being added to the store, until the month units that include them are read back. */
  #inFlight: Batch[] = [];
  /** A batch whose add failed, with its id: sent again, alone, before anything newer. */
  #retry: Sent | undefined;
  /** Batch ids: this recorder's own prefix and a count. */
  readonly #instance = randomUUID();
  #sent = 0;
  readonly #watched = new Map<string | null, Watched>();
  /** The UTC day of the clock, recomputed only when the clock leaves [#dayFrom, #dayTo). */
  #day = '';
  #month = '';
  #dayFrom = 0;
  #dayTo = 0;
  /** Flushes, prunes, queries and month loads run one at a time, in order. */
  #tail: Promise<unknown> = Promise.resolve();
  #flushQueued = false;
  #closed = false;
  #closing: Promise<void> | undefined;

  constructor(options: UsageRecorderOptions) {
    const retention = options.retentionDays ?? DEFAULT_USAGE_RETENTION_DAYS;
    if (!Number.isSafeInteger(retention) || retention < 1) {
      throw new RangeError(`retentionDays must be a positive integer, got ${retention}`);
    }
    this.store = options.store;
    this.retentionDays = retention;
    this.#now = options.now ?? Date.now;
    this.#onError = options.onError ?? (() => {});
    const flushEvery = options.flushIntervalMs ?? DEFAULT_USAGE_FLUSH_INTERVAL_MS;
    if (flushEvery > 0) {
      this.#flushTimer = setInterval(() => {
        if (this.#flushQueued) return;
        this.flush().catch((err: unknown) => this.#onError(err, 'flush'));
      }, flushEvery);
      this.#flushTimer.unref();
    }
    this.#runPrune();
    const pruneEvery = options.pruneIntervalMs ?? DEFAULT_USAGE_PRUNE_INTERVAL_MS;
    if (pruneEvery > 0) {
      this.#pruneTimer = setInterval(() => this.#runPrune(), pruneEvery);
      this.#pruneTimer.unref();
    }
  }

  /**
   * Count one request (or `requests` alike) now. Synchronous and without I/O. Figures must be
   * non-negative integers and a key name non-empty (RangeError otherwise). After close(), ignored.
   */
  record(r: UsageRecord): void {
    if (this.#closed) return;
    const requests = r.requests ?? 1;
    if (!isCount(requests) || !isCount(r.units) || !isCount(r.upstreamRequests) || !isCount(r.bytesSent)) {
      throw new RangeError('usage figures must be non-negative integers');
    }
    if (r.key === '') throw new RangeError('a usage key is a name or null (anonymous), never empty');
    this.#today(this.#now());
    addTo(
      this.#pending,
      this.#day,
      this.#month,
      r.key,
      r.route,
      r.function,
      r.outcome,
      requests,
      r.units,
      r.upstreamRequests,
      r.bytesSent,
    );
  }

  /** Rows waiting for the next flush (distinct key, day, route, function, outcome). */
  get pending(): number {
    return this.#pending.size + (this.#retry?.batch.size ?? 0);
  }

  /**
   * Add the pending rows to the store, then refresh the month units of watched keys. On
   * failure the rows go back to the pending ones (retried next time) and this rejects.
   */
  flush(): Promise<void> {
    this.#flushQueued = true;
    return this.#exclusive(async () => {
      this.#flushQueued = false;
      await this.#flush();
    });
  }

  /**
   * What the store holds plus this instance's unflushed figures. `from` defaults to the
   * oldest day retention keeps; an empty groupBy gives no rows, only totals. Rejects with a
   * RangeError for an unknown or repeated dimension or a malformed day.
   */
  async query(query: UsageQuery): Promise<UsageResult> {
    checkQuery(query);
    const full: UsageQuery = { ...query, from: query.from ?? oldestKeptDay(this.#now(), this.retentionDays) };
    return this.#exclusive(async () => {
      // Taken before the store is read: no flush can move these rows there meanwhile.
      const unflushed = rowsOf(this.#pending);
      if (this.#retry !== undefined) unflushed.push(...rowsOf(this.#retry.batch));
      const tally = new UsageTally(full.groupBy);
      tally.addResult(await this.store.query(full));
      for (const row of unflushed) if (matches(full, row.key, row.day)) tally.add(row);
      return tally.result();
    });
  }

  /**
   * The key's units in now's UTC month, fleet-wide: the store's figure as of the last flush
   * (month counters, refreshed at every flush for keys asked about in the last 10 minutes)
   * plus this instance's figures not in it. A key asked about for the first time counts only
   * this instance's unflushed figures until the next flush (at most flushIntervalMs) or
   * loadMonthUnits() has read the store.
   */
  monthUnits(key: string | null, now: number = this.#now()): number {
    const month = this.#monthOf(now);
    let w = this.#watched.get(key);
    if (w === undefined) {
      if (this.#watched.size >= WATCH_MAX) this.#watched.delete(this.#watched.keys().next().value!);
      w = { month: undefined, stored: 0, askedAt: now };
      this.#watched.set(key, w);
    } else w.askedAt = now;
    let units = w.month === month ? w.stored : 0;
    units += this.#pending.months.get(month)?.get(key) ?? 0;
    for (const batch of this.#inFlight) units += batch.months.get(month)?.get(key) ?? 0;
    if (this.#retry !== undefined) units += this.#retry.batch.months.get(month)?.get(key) ?? 0;
    return units;
  }

  /** monthUnits() after reading the key's figure from the store (a key's first request). */
  loadMonthUnits(key: string | null, now: number = this.#now()): Promise<number> {
    this.monthUnits(key, now);
    return this.#exclusive(async () => {
      const month = this.#monthOf(now);
      const [stored] = await this.store.monthUnits([key], month);
      const w = this.#watched.get(key);
      if (w !== undefined) {
        w.month = month;
        w.stored = stored ?? 0;
      }
      return this.monthUnits(key, now);
    });
  }

  /** Delete the days retention no longer keeps (runs at start and every pruneIntervalMs). */
  prune(): Promise<void> {
    return this.#exclusive(() => this.store.prune(oldestKeptDay(this.#now(), this.retentionDays)));
  }

  /**
   * Stop the timers, flush what is pending (a failure is reported to onError: those figures
   * are lost) and close the store. Records after this call are ignored, so close the HTTP
   * server first. Idempotent.
   */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#closed = true;
      if (this.#flushTimer !== undefined) clearInterval(this.#flushTimer);
      if (this.#pruneTimer !== undefined) clearInterval(this.#pruneTimer);
      try {
        await this.flush();
      } catch (err) {
        this.#onError(err, 'flush');
      }
      await this.store.close();
    })();
    return this.#closing;
  }

  async #flush(): Promise<void> {
    const added: Batch[] = [];
    try {
      const retry = this.#retry;
      if (retry !== undefined) {
        this.#retry = undefined;
        await this.#add(retry, added);
      }
      if (this.#pending.size > 0) {
        const sent = { batch: this.#pending, id: `${this.#instance}:${++this.#sent}` };
        this.#pending = newBatch();
        await this.#add(sent, added);
      }
    } catch (err) {
      // What was added before the failure is in the store, not in the figures last read back.
      for (const batch of added) this.#creditWatched(batch);
      this.#inFlight = [];
      throw err;
    }
    try {
      await this.#refreshMonths();
    } catch (err) {
      // The store has the batches but the figures read back are older: count them here instead.
      for (const batch of added) this.#creditWatched(batch);
      this.#onError(err, 'month');
    } finally {
      this.#inFlight = [];
    }
  }

  /** Add one batch; if that fails, it is kept under its id, to be sent again first. */
  async #add(sent: Sent, added: Batch[]): Promise<void> {
    this.#inFlight.push(sent.batch);
    try {
      await this.store.add(rowsOf(sent.batch), sent.id);
    } catch (err) {
      this.#inFlight = this.#inFlight.filter((b) => b !== sent.batch);
      this.#retry = sent;
      throw err;
    }
    added.push(sent.batch);
  }

  async #refreshMonths(): Promise<void> {
    if (this.#watched.size === 0) return;
    const now = this.#now();
    for (const [key, w] of this.#watched) if (w.askedAt < now - WATCH_IDLE_MS) this.#watched.delete(key);
    const keys = [...this.#watched.keys()];
    if (keys.length === 0) return;
    const month = this.#monthOf(now);
    const units = await this.store.monthUnits(keys, month);
    keys.forEach((key, i) => {
      const w = this.#watched.get(key);
      if (w === undefined) return;
      w.month = month;
      w.stored = units[i] ?? 0;
    });
  }

  #creditWatched(batch: Batch): void {
    for (const [key, w] of this.#watched) {
      if (w.month !== undefined) w.stored += batch.months.get(w.month)?.get(key) ?? 0;
    }
  }

  #runPrune(): void {
    this.prune().catch((err: unknown) => this.#onError(err, 'prune'));
  }

  #exclusive<T>(run: () => Promise<T>): Promise<T> {
    const result = this.#tail.then(run, run);
    this.#tail = result.catch(() => {});
    return result;
  }

  /** Set #day and #month to now's, computing them only when the day changed. */
  #today(now: number): void {
    if (now >= this.#dayFrom && now < this.#dayTo) return;
    const day = utcDay(now);
    this.#day = day;
    this.#month = utcMonth(day);
    this.#dayFrom = Date.parse(`${day}T00:00:00Z`);
    this.#dayTo = this.#dayFrom + 86_400_000;
  }

  #monthOf(now: number): string {
    if (now >= this.#dayFrom && now < this.#dayTo) return this.#month;
    return utcMonth(now);
  }
}
