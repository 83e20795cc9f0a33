/**
 * Embedded persistent store (CACHE_STORE=sqlite): one SQLite file in DATA_DIR, WAL mode,
 * one table. Expired rows are never returned; they are deleted when read and by a periodic
 * sweep whose timer does not keep the process alive.
 *
 * A file written by an older version lacks the stale_at and tip_height columns: opening it
 * adds them (see migrate), so a restart after an upgrade keeps the cache.
 *
 * Writes are committed in groups: every set() made in one turn of the event loop goes into one
 * transaction at the end of it (setImmediate), and each set() resolves once its row is
 * committed. One commit per entry was most of a miss's cost (about 90 µs each, against 14 µs
 * in a batch of 32, measured), and distinct misses arrive together. Until the commit, get()
 * answers the pending entry, and every other operation (delete, list, count, sweep, close)
 * commits what is pending first, so no reader ever sees an older value than a set() made.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { type CacheEntry, isLive, newEntry } from '../entry.js';
import type { CacheStore, EntryMeta } from '../store.js';
import { prefixSuccessor } from './key-range.js';
import { describeOpenFailure, fileIdentity, sameFile, storeError } from './sqlite-faults.js';

/**
 * How long a statement waits for a lock held by another connection (a backup, the sqlite3
 * shell, a second instance) before failing with SQLITE_BUSY. The driver is synchronous, so
 * this wait blocks the whole event loop: it is kept to a few milliseconds, and a write that
 * gives up is reported as failed (Cache-Status without `stored`, /ready degraded) instead of
 * freezing every request. Measured with bench/sqlite-lock-block.ts (see README).
 */
export const BUSY_TIMEOUT_MS = 5;

export interface SqliteStoreOptions {
  /** Clock in epoch ms; injectable so tests can advance time without sleeping. */
  readonly now?: () => number;
  /** Period of the expired-row sweep; 0 disables it. Default one minute. */
  readonly sweepIntervalMs?: number;
  /**
   * Largest size of the database in bytes (SQLite max_page_count); a write beyond it fails
   * with SQLITE_FULL exactly as on a full disk. Unset = only the disk limits it.
   */
  readonly maxBytes?: number;
}

/** A set() waiting for its group's commit. */
interface PendingSet {
  readonly entry: CacheEntry;
  readonly waiting: { resolve: () => void; reject: (err: unknown) => void }[];
}

interface Row {
  value: string;
  stored_at: number;
  stale_at: number | null;
  expires_at: number | null;
  tip_height: number | null;
  chain: string | null;
  tip_reported: number | null;
  votes: number | null;
}

export { prefixSuccessor } from './key-range.js';

/** A bound above every key under prefix (the empty prefix has none: above any real key). */
function upperBound(prefix: string): string {
  return prefixSuccessor(prefix) ?? String.fromCodePoint(0x10ffff).repeat(8);
}

/**
 * WITHOUT ROWID: the rows live in the key's B-tree, so a lookup by key reads one leaf page, not
 * an index leaf and then a table leaf (measured: ~22% more uniform hits over a million rows,
 * a 12% smaller file). Files created before keep their rowid table: same columns, same
 * statements, only slower.
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS entries (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL,
  stored_at INTEGER NOT NULL,
  expires_at INTEGER,
  stale_at INTEGER,
  tip_height INTEGER,
  chain TEXT,
  tip_reported INTEGER,
  votes INTEGER
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS entries_expires_at ON entries(expires_at) WHERE expires_at IS NOT NULL;
`;

/**
 * Columns added after the first release, with the statement that fills them in rows written
 * before: an old row's ttl ended its freshness and its life at once (stale_at = expires_at),
 * and its tip height is unknown (NULL).
 */
const ADDED_COLUMNS: readonly { name: string; add: string; backfill?: string }[] = [
  {
    name: 'stale_at',
    add: 'ALTER TABLE entries ADD COLUMN stale_at INTEGER',
    backfill: 'UPDATE entries SET stale_at = expires_at',
  },
  { name: 'tip_height', add: 'ALTER TABLE entries ADD COLUMN tip_height INTEGER' },
  // The chain an entry was read from: unknown (NULL) for rows written before.
  { name: 'chain', add: 'ALTER TABLE entries ADD COLUMN chain TEXT' },
  // Whether tip_height is the answering node's own: not known (NULL) for rows written before.
  { name: 'tip_reported', add: 'ALTER TABLE entries ADD COLUMN tip_reported INTEGER' },
  // Attested answers' votes (docs/consensus.md): NULL (one upstream's word) for rows written before.
  { name: 'votes', add: 'ALTER TABLE entries ADD COLUMN votes INTEGER' },
];

/** Bring a table created by an older version up to SCHEMA, in one transaction. */
function migrate(db: Database.Database): void {
  const present = new Set(
    (db.prepare('PRAGMA table_info(entries)').all() as { name: string }[]).map((c) => c.name),
  );
  const missing = ADDED_COLUMNS.filter((c) => !present.has(c.name));
  if (missing.length === 0) return;
  db.transaction(() => {
    for (const column of missing) {
      db.exec(column.add);
      if (column.backfill !== undefined) db.exec(column.backfill);
    }
  })();
}

export class SqliteStore implements CacheStore {
  readonly kind = 'sqlite';
  /** Absolute path of the database file. */
  readonly file: string;
  readonly #db: Database.Database;
  readonly #now: () => number;
  readonly #sweepTimer: NodeJS.Timeout | undefined;
  /** Device and inode of the file when opened: a deleted or replaced file no longer matches. */
  readonly #identity: fs.Stats;
  /** Why the last write failed; undefined once a write succeeds. */
  #writeError: string | undefined;
  #closed = false;
  /** set()s not committed yet, by key (see the module comment). */
  readonly #pending = new Map<string, PendingSet>();
  #commitScheduled = false;
  readonly #upsertAll: (batch: readonly (readonly [string, PendingSet])[]) => void;

  readonly #get: Database.Statement<[string], Row>;
  readonly #upsert: Database.Statement<
    [
      string,
      string,
      number,
      number | null,
      number | null,
      number | null,
      string | null,
      1 | null,
      number | null,
    ]
  >;
  readonly #delete: Database.Statement<[string]>;
  readonly #deleteIfExpired: Database.Statement<[string, number]>;
  readonly #listRange: Database.Statement<[string, string, number], string>;
  readonly #listFrom: Database.Statement<[string, number], string>;
  readonly #sweep: Database.Statement<[number]>;
  readonly #page: Database.Statement<[string, string, string, number, number], string>;
  readonly #count: Database.Statement<[string, string, number], number>;

  /**
   * Open (creating the directory, file and table as needed) `dir/file`. Rows written by an
   * earlier process are kept: the cache survives a restart.
   */
  static open(dir: string, file = 'clarity-cache.db', options: SqliteStoreOptions = {}): SqliteStore {
    const resolved = path.resolve(dir, file);
    try {
      fs.mkdirSync(dir, { recursive: true });
      return new SqliteStore(resolved, options);
    } catch (err) {
      throw describeOpenFailure(err, dir, resolved);
    }
  }

  private constructor(file: string, options: SqliteStoreOptions) {
    this.file = file;
    this.#now = options.now ?? Date.now;
    const db = new Database(file);
    try {
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      // Another process on the same file (a second instance, a CLI) waits instead of failing.
      db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
      db.exec(SCHEMA);
      migrate(db);
      if (options.maxBytes !== undefined) {
        const pageSize = db.pragma('page_size', { simple: true }) as number;
        db.pragma(`max_page_count = ${Math.max(1, Math.floor(options.maxBytes / pageSize))}`);
      }
      this.#get = db.prepare<[string], Row>(
        'SELECT value, stored_at, stale_at, expires_at, tip_height, chain, tip_reported, votes FROM entries WHERE key = ?',
      );
      this.#upsert = db.prepare(
        `INSERT INTO entries (key, value, stored_at, stale_at, expires_at, tip_height, chain, tip_reported, votes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT(key) DO UPDATE SET value = excluded.value, stored_at = excluded.stored_at,
           stale_at = excluded.stale_at, expires_at = excluded.expires_at, tip_height = excluded.tip_height,
           chain = excluded.chain, tip_reported = excluded.tip_reported, votes = excluded.votes`,
      );
      const upsert = this.#upsert;
      this.#upsertAll = db.transaction((batch: readonly (readonly [string, PendingSet])[]) => {
        for (const [key, { entry: e }] of batch)
          upsert.run(
            key,
            e.value,
            e.storedAt,
            e.staleAt,
            e.expiresAt,
            e.tipHeight,
            e.chain ?? null,
            e.tipReported === true ? 1 : null,
            e.votes ?? null,
          );
      });
      this.#delete = db.prepare('DELETE FROM entries WHERE key = ?');
      this.#deleteIfExpired = db.prepare(
        'DELETE FROM entries WHERE key = ? AND expires_at IS NOT NULL AND expires_at <= ?',
      );
      // A range on the primary key (not LIKE: `_` and `%` are wildcards there, and LIKE is
      // case-insensitive for ASCII), so SQLite searches the key index.
      this.#listRange = db
        .prepare<[string, string, number], string>(
          'SELECT key FROM entries WHERE key >= ? AND key < ? AND (expires_at IS NULL OR expires_at > ?)',
        )
        .pluck();
      this.#listFrom = db
        .prepare<[string, number], string>(
          'SELECT key FROM entries WHERE key >= ? AND (expires_at IS NULL OR expires_at > ?)',
        )
        .pluck();
      this.#sweep = db.prepare('DELETE FROM entries WHERE expires_at IS NOT NULL AND expires_at <= ?');
      // Pages and counts walk the primary-key index from a bound: no sort, no full scan.
      this.#page = db
        .prepare<[string, string, string, number, number], string>(
          `SELECT key FROM entries WHERE key >= ? AND key > ? AND key < ?
             AND (expires_at IS NULL OR expires_at > ?) ORDER BY key LIMIT ?`,
        )
        .pluck();
      this.#count = db
        .prepare<[string, string, number], number>(
          'SELECT COUNT(*) FROM entries WHERE key >= ? AND key < ? AND (expires_at IS NULL OR expires_at > ?)',
        )
        .pluck();
    } catch (err) {
      db.close();
      throw err;
    }
    this.#db = db;
    this.#identity = fileIdentity(file);
    const every = options.sweepIntervalMs ?? 60_000;
    if (every > 0) {
      this.#sweepTimer = setInterval(() => {
        try {
          this.sweep();
        } catch {
          // A failed sweep (disk full, locked) is retried at the next tick; reads ignore
          // expired rows regardless.
        }
      }, every);
      this.#sweepTimer.unref();
    }
  }

  async get(key: string): Promise<CacheEntry | undefined> {
    const pending = this.#pending.get(key);
    if (pending !== undefined) return isLive(pending.entry, this.#now()) ? pending.entry : undefined;
    const row = this.#get.get(key);
    if (row === undefined) return undefined;
    const entry: CacheEntry = {
      value: row.value,
      storedAt: row.stored_at,
      staleAt: row.stale_at,
      expiresAt: row.expires_at,
      tipHeight: row.tip_height,
      ...(row.chain === null ? {} : { chain: row.chain }),
      ...(row.tip_reported === 1 ? { tipReported: true } : {}),
      ...(row.votes === null ? {} : { votes: row.votes }),
    };
    const now = this.#now();
    if (!isLive(entry, now)) {
      try {
        this.#deleteIfExpired.run(key, now);
      } catch {
        // Locked or full: the sweep removes it later; an expired row is never returned anyway.
      }
      return undefined;
    }
    return entry;
  }

  set(key: string, value: string, ttlMs?: number, meta?: EntryMeta): Promise<void> {
    const entry = newEntry(value, this.#now(), ttlMs, meta);
    return new Promise((resolve, reject) => {
      // A second set of the same key in one turn replaces the first; both resolve with the commit.
      const waiting = this.#pending.get(key)?.waiting ?? [];
      waiting.push({ resolve, reject });
      this.#pending.set(key, { entry, waiting });
      if (!this.#commitScheduled) {
        this.#commitScheduled = true;
        setImmediate(() => {
          this.#commitScheduled = false;
          this.#commit();
        });
      }
    });
  }

  /** Commit every pending set() in one transaction (one check of the file), then settle them. */
  #commit(): void {
    if (this.#pending.size === 0) return;
    const batch = [...this.#pending];
    this.#pending.clear();
    try {
      this.#write(() => this.#upsertAll(batch));
    } catch (err) {
      for (const [, p] of batch) for (const w of p.waiting) w.reject(err);
      return;
    }
    // Only a stored entry proves the store can write again: a delete succeeds on a full disk.
    this.#writeError = undefined;
    for (const [, p] of batch) for (const w of p.waiting) w.resolve();
  }

  async delete(key: string): Promise<boolean> {
    this.#commit();
    return this.#write(() => this.#delete.run(key)).changes > 0;
  }

  /**
   * Run one write, after checking that the file is still the one opened (a deleted file
   * would take writes into an unlinked inode that no restart sees). A failure is remembered
   * for writeProblem() (until an entry is stored again) and thrown with the file's path in
   * its message.
   */
  #write<T>(run: () => T): T {
    try {
      const gone = this.#fileProblem();
      if (gone !== undefined) throw new Error(gone);
      return run();
    } catch (err) {
      const reported = storeError(err, this.file);
      this.#writeError = reported.message;
      throw reported;
    }
  }

  /** Why writes are not landing in the database file now, or undefined when they are. */
  writeProblem(): string | undefined {
    if (this.#closed) return undefined;
    return this.#fileProblem() ?? this.#writeError;
  }

  #fileProblem(): string | undefined {
    return sameFile(this.file, this.#identity);
  }

  async list(prefix: string): Promise<string[]> {
    this.#commit();
    const now = this.#now();
    const upper = prefixSuccessor(prefix);
    return upper === undefined ? this.#listFrom.all(prefix, now) : this.#listRange.all(prefix, upper, now);
  }

  async listPage(prefix: string, after: string | undefined, limit: number): Promise<string[]> {
    this.#commit();
    return this.#page.all(prefix, after ?? '', upperBound(prefix), this.#now(), limit);
  }

  async count(prefix: string): Promise<number> {
    this.#commit();
    return this.#count.get(prefix, upperBound(prefix), this.#now()) ?? 0;
  }

  /** Delete every expired row now; returns how many went. Runs periodically on its own. */
  sweep(): number {
    if (this.#closed) return 0;
    this.#commit();
    return this.#sweep.run(this.#now()).changes;
  }

  /**
   * The connection, for the usage tables kept in the same file (src/service/usage/sqlite-store.ts),
   * so that they share its size limit and busy timeout. Closing it stays this store's.
   */
  get database(): Database.Database {
    return this.#db;
  }

  /** Read one pragma of this connection (journal_mode, synchronous...), for diagnostics and tests. */
  pragma(name: 'journal_mode' | 'synchronous' | 'busy_timeout'): unknown {
    return this.#db.pragma(name, { simple: true });
  }

  /** SQLite's plan for list(prefix), for tests that check the key index is used. */
  explainList(prefix: string): string[] {
    const upper = prefixSuccessor(prefix) ?? '';
    const rows = this.#db
      .prepare(
        'EXPLAIN QUERY PLAN SELECT key FROM entries WHERE key >= ? AND key < ? AND (expires_at IS NULL OR expires_at > ?)',
      )
      .all(prefix, upper, 0) as { detail: string }[];
    return rows.map((r) => r.detail);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#commit();
    this.#closed = true;
    if (this.#sweepTimer !== undefined) clearInterval(this.#sweepTimer);
    this.#db.close();
  }
}
