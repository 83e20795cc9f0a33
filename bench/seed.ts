/**
 * Cache entries written straight into a gateway's SQLite file, for the cases that measure a
 * large cache (scale, independent): a million rows through misses would take most of an hour.
 * The keys are exactly the ones the gateway builds for `get-entry(u<id>)` on the stand-in's
 * contract with the default sender, so a seeded id is a hit.
 */
import path from 'node:path';
import Database from 'better-sqlite3';
import { hashArguments, readOnlyKey } from '../src/cache/keys.js';
import { SqliteStore } from '../src/cache/stores/sqlite.js';
import { parseClarityValue, toHex } from '../src/clarity/index.js';
import { MAINNET_ADDR } from '../test/support/fixtures.js';
import { CONTRACT, RESULT_HEX } from './fake-node-process.js';

const INSERT_BATCH = 100_000;

/** The key the gateway builds for get-entry(u<id>) with the default sender. */
export function entryKey(id: number): string {
  const argHex = toHex(parseClarityValue({ type: 'uint', value: String(id) }, 'functionArgs[0]'));
  return readOnlyKey('mainnet', MAINNET_ADDR, CONTRACT, 'get-entry', MAINNET_ADDR, hashArguments([argHex]));
}

/**
 * Rows of ids [0, count) in DATA_DIR `dir`'s cache file (created first by the gateway's own
 * store code, so the table is the gateway's): one transaction per batch, keys sorted within a
 * batch and a large page cache for this connection only, so that the primary-key B-tree is not
 * built by a million random single-page writes. Returns the milliseconds it took.
 */
export async function seedEntries(dir: string, count: number): Promise<number> {
  const t = performance.now();
  await SqliteStore.open(dir, 'clarity-cache.db', { sweepIntervalMs: 0 }).close();
  const db = new Database(path.join(dir, 'clarity-cache.db'));
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = OFF');
    db.pragma('cache_size = -524288'); // 512 MiB, this seeding connection only
    const insert = db.prepare(
      'INSERT INTO entries (key, value, stored_at, expires_at) VALUES (?, ?, ?, NULL)',
    );
    const now = Date.now();
    const batch = db.transaction((keys: string[]) => {
      for (const key of keys) insert.run(key, RESULT_HEX, now);
    });
    for (let lo = 0; lo < count; lo += INSERT_BATCH) {
      const keys: string[] = [];
      for (let id = lo; id < Math.min(count, lo + INSERT_BATCH); id++) keys.push(entryKey(id));
      keys.sort();
      batch(keys);
    }
    db.pragma('wal_checkpoint(TRUNCATE)');
  } finally {
    db.close();
  }
  return performance.now() - t;
}
