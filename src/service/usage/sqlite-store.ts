/**
 * Usage rows in the SQLite file of the SQLite cache store (CACHE_STORE=sqlite), in tables of
 * their own beside its `entries`:
 *
 *   usage        one row per (key_name, day, route, function_name, outcome), the figures
 *                added by an UPSERT; WITHOUT ROWID on that primary key, so one key's days
 *                are one range of the B-tree; an index on day for ranges over all keys and
 *                for prune
 *   usage_month  units per (key_name, month `YYYY-MM`), added in the same transaction, so a
 *                quota reads one row instead of summing a month
 *
 * The anonymous key (null) is stored as '' in key_name: a key's name has 1 to 64 characters
 * (src/http/admission/api-keys.ts), so '' is never one, and a primary key column stays NOT
 * NULL (NULLs would never conflict, and every flush would add a new anonymous row).
 *
 * Give it the cache store's own connection (SqliteStore.database): the file's size limit and
 * busy timeout then apply to usage too, and the driver being synchronous, a flush never
 * interleaves with a cache write. It never closes a connection it was given; open() makes one
 * of its own (tests, tools), which close() closes.
 */
import Database from 'better-sqlite3';
import {
  checkQuery,
  type UsageDimension,
  type UsageOutcome,
  type UsageQuery,
  type UsageResult,
  type UsageRow,
  type UsageStore,
  UsageTally,
  utcMonth,
} from './usage.js';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS usage (
  key_name TEXT NOT NULL,
  day TEXT NOT NULL,
  route TEXT NOT NULL,
  function_name TEXT NOT NULL,
  outcome TEXT NOT NULL,
  requests INTEGER NOT NULL,
  units INTEGER NOT NULL,
  upstream_requests INTEGER NOT NULL,
  bytes_sent INTEGER NOT NULL,
  PRIMARY KEY (key_name, day, route, function_name, outcome)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS usage_day ON usage(day);
CREATE TABLE IF NOT EXISTS usage_month (
  key_name TEXT NOT NULL,
  month TEXT NOT NULL,
  units INTEGER NOT NULL,
  PRIMARY KEY (key_name, month)
) WITHOUT ROWID;
`;

/** The anonymous key in key_name (see the header). */
const ANONYMOUS = '';

const COLUMN: Record<UsageDimension, string> = {
  key: 'key_name',
  day: 'day',
  route: 'route',
  function: 'function_name',
  outcome: 'outcome',
};

interface SumRow {
  key_name?: string;
  day?: string;
  route?: string;
  function_name?: string;
  outcome?: string;
  /** NULL: SUM over no rows (no groupBy, nothing matched). */
  requests: number | null;
  units: number;
  upstream_requests: number;
  bytes_sent: number;
}

export class SqliteUsageStore implements UsageStore {
  readonly kind = 'sqlite';
  readonly #db: Database.Database;
  readonly #owned: boolean;
  readonly #add: Database.Statement<[string, string, string, string, string, number, number, number, number]>;
  readonly #addMonth: Database.Statement<[string, string, number]>;
  readonly #month: Database.Statement<[string, string], number>;
  readonly #pruneDays: Database.Statement<[string]>;
  readonly #pruneMonths: Database.Statement<[string]>;
  readonly #queries = new Map<string, Database.Statement<unknown[], SumRow>>();
  #closed = false;

  /** A store on its own connection to file (WAL), closed by close(). */
  static open(file: string): SqliteUsageStore {
    const db = new Database(file);
    try {
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      db.pragma('busy_timeout = 5');
      return new SqliteUsageStore(db, { owned: true });
    } catch (err) {
      db.close();
      throw err;
    }
  }

  /** Creates the tables when missing. options.owned: close() closes db (default false). */
  constructor(db: Database.Database, options: { readonly owned?: boolean } = {}) {
    this.#db = db;
    this.#owned = options.owned === true;
    db.exec(SCHEMA);
    this.#add = db.prepare(
      `INSERT INTO usage (key_name, day, route, function_name, outcome, requests, units, upstream_requests, bytes_sent)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (key_name, day, route, function_name, outcome) DO UPDATE SET
         requests = requests + excluded.requests, units = units + excluded.units,
         upstream_requests = upstream_requests + excluded.upstream_requests,
         bytes_sent = bytes_sent + excluded.bytes_sent`,
    );
    this.#addMonth = db.prepare(
      `INSERT INTO usage_month (key_name, month, units) VALUES (?, ?, ?)
       ON CONFLICT (key_name, month) DO UPDATE SET units = units + excluded.units`,
    );
    this.#month = db
      .prepare<[string, string], number>('SELECT units FROM usage_month WHERE key_name = ? AND month = ?')
      .pluck();
    this.#pruneDays = db.prepare('DELETE FROM usage WHERE day < ?');
    this.#pruneMonths = db.prepare('DELETE FROM usage_month WHERE month < ?');
  }

  async add(rows: readonly UsageRow[]): Promise<void> {
    if (rows.length === 0) return;
    this.#db.transaction(() => {
      const months = new Map<string, number>();
      for (const r of rows) {
        const key = r.key ?? ANONYMOUS;
        this.#add.run(
          key,
          r.day,
          r.route,
          r.function,
          r.outcome,
          r.requests,
          r.units,
          r.upstreamRequests,
          r.bytesSent,
        );
        const id = `${utcMonth(r.day)}\u0000${key}`;
        months.set(id, (months.get(id) ?? 0) + r.units);
      }
      for (const [id, units] of months) {
        const at = id.indexOf('\u0000');
        this.#addMonth.run(id.slice(at + 1), id.slice(0, at), units);
      }
    })();
  }

  async query(query: UsageQuery): Promise<UsageResult> {
    checkQuery(query);
    const where: string[] = [];
    const params: unknown[] = [];
    if (query.key !== undefined) {
      where.push('key_name = ?');
      params.push(query.key ?? ANONYMOUS);
    }
    if (query.from !== undefined) {
      where.push('day >= ?');
      params.push(query.from);
    }
    if (query.to !== undefined) {
      where.push('day <= ?');
      params.push(query.to);
    }
    // Columns come from COLUMN only (checkQuery refused anything else): no caller text in the SQL.
    const columns = query.groupBy.map((d) => COLUMN[d]);
    const sql = `SELECT ${[...columns, ''].join(', ')}
        SUM(requests) AS requests, SUM(units) AS units,
        SUM(upstream_requests) AS upstream_requests, SUM(bytes_sent) AS bytes_sent
      FROM usage ${where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`}
      ${columns.length === 0 ? '' : `GROUP BY ${columns.join(', ')}`}`;
    let statement = this.#queries.get(sql);
    if (statement === undefined) {
      statement = this.#db.prepare<unknown[], SumRow>(sql);
      this.#queries.set(sql, statement);
    }
    const tally = new UsageTally(query.groupBy);
    for (const r of statement.all(...params)) {
      if (r.requests === null) continue;
      tally.add({
        ...(r.key_name === undefined ? {} : { key: r.key_name === ANONYMOUS ? null : r.key_name }),
        ...(r.day === undefined ? {} : { day: r.day }),
        ...(r.route === undefined ? {} : { route: r.route }),
        ...(r.function_name === undefined ? {} : { function: r.function_name }),
        ...(r.outcome === undefined ? {} : { outcome: r.outcome as UsageOutcome }),
        requests: r.requests,
        units: r.units,
        upstreamRequests: r.upstream_requests,
        bytesSent: r.bytes_sent,
      });
    }
    return tally.result();
  }

  async prune(oldestKeptDay: string): Promise<void> {
    this.#db.transaction(() => {
      this.#pruneDays.run(oldestKeptDay);
      this.#pruneMonths.run(utcMonth(oldestKeptDay));
    })();
  }

  async monthUnits(keys: readonly (string | null)[], month: string): Promise<number[]> {
    return keys.map((k) => this.#month.get(k ?? ANONYMOUS, month) ?? 0);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#owned) this.#db.close();
  }
}
