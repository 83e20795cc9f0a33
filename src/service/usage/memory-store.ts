/**
 * Usage rows for CACHE_STORE=memory: in this process only, lost on restart like the cache.
 * Rows are kept per day (a query reads only the days of its range; prune drops whole days),
 * and units per key and month beside them for monthUnits.
 */
import {
  checkQuery,
  matches,
  type UsageQuery,
  type UsageResult,
  type UsageRow,
  type UsageStore,
  UsageTally,
  utcMonth,
} from './usage.js';

type MutableRow = { -readonly [K in keyof UsageRow]: UsageRow[K] };

export class MemoryUsageStore implements UsageStore {
  readonly kind = 'memory';
  /** day -> JSON [key, route, function, outcome] -> row. */
  readonly #days = new Map<string, Map<string, MutableRow>>();
  /** month -> key -> units. */
  readonly #months = new Map<string, Map<string | null, number>>();

  async add(rows: readonly UsageRow[]): Promise<void> {
    for (const row of rows) {
      let day = this.#days.get(row.day);
      if (day === undefined) {
        day = new Map();
        this.#days.set(row.day, day);
      }
      const id = JSON.stringify([row.key, row.route, row.function, row.outcome]);
      const held = day.get(id);
      if (held === undefined) day.set(id, { ...row });
      else {
        held.requests += row.requests;
        held.units += row.units;
        held.upstreamRequests += row.upstreamRequests;
        held.bytesSent += row.bytesSent;
      }
      const monthKey = utcMonth(row.day);
      let month = this.#months.get(monthKey);
      if (month === undefined) {
        month = new Map();
        this.#months.set(monthKey, month);
      }
      month.set(row.key, (month.get(row.key) ?? 0) + row.units);
    }
  }

  async query(query: UsageQuery): Promise<UsageResult> {
    checkQuery(query);
    const tally = new UsageTally(query.groupBy);
    for (const [day, rows] of this.#days) {
      if (!matches({ from: query.from, to: query.to, groupBy: [] }, null, day)) continue;
      for (const row of rows.values()) if (matches(query, row.key, day)) tally.add(row);
    }
    return tally.result();
  }

  async prune(oldestKeptDay: string): Promise<void> {
    for (const day of this.#days.keys()) if (day < oldestKeptDay) this.#days.delete(day);
    const oldestMonth = utcMonth(oldestKeptDay);
    for (const month of this.#months.keys()) if (month < oldestMonth) this.#months.delete(month);
  }

  async monthUnits(keys: readonly (string | null)[], month: string): Promise<number[]> {
    const units = this.#months.get(month);
    return keys.map((k) => units?.get(k) ?? 0);
  }

  /** Nothing to release; the rows stay (a new recorder on this store sees them). */
  async close(): Promise<void> {}
}
