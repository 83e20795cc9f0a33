/**
 * Storage faults of the SQLite store: a full database, a lock
 * held by another connection, a deleted or replaced file, a corrupted file and an unusable
 * DATA_DIR. Real SQLite files in a temporary directory; the "other process" is a second
 * better-sqlite3 connection to the same file.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BUSY_TIMEOUT_MS, SqliteStore } from '../../../src/cache/stores/sqlite.js';
import { tmpDir } from './tmp-dir.js';

describe('SqliteStore faults', () => {
  let tmp: ReturnType<typeof tmpDir>;
  const opened: { close(): unknown }[] = [];
  const track = <T extends { close(): unknown }>(x: T): T => {
    opened.push(x);
    return x;
  };

  beforeEach(() => {
    tmp = tmpDir('sqlite-faults');
  });

  afterEach(async () => {
    for (const x of opened.splice(0).reverse()) await x.close();
    tmp.remove();
  });

  it('waits only a few milliseconds for a lock', () => {
    const store = track(SqliteStore.open(tmp.dir, 'c.db', { sweepIntervalMs: 0 }));
    expect(store.pragma('busy_timeout')).toBe(BUSY_TIMEOUT_MS);
    expect(BUSY_TIMEOUT_MS).toBeLessThanOrEqual(10);
  });

  it('a write refused by a lock another connection holds fails, naming the file; reads still answer; it recovers', async () => {
    const store = track(SqliteStore.open(tmp.dir, 'c.db', { sweepIntervalMs: 0 }));
    await store.set('k:1', 'before');
    expect(store.writeProblem()).toBeUndefined();
    const other = track(new Database(store.file));
    other.exec('BEGIN EXCLUSIVE');
    await expect(store.set('k:2', 'v')).rejects.toThrow(store.file);
    await expect(store.delete('k:1')).rejects.toThrow(/locked|busy/i);
    expect(store.writeProblem()).toMatch(/locked|busy/i);
    // WAL: readers are not blocked by the writer's lock.
    expect((await store.get('k:1'))?.value).toBe('before');
    other.exec('ROLLBACK');
    await store.set('k:2', 'after');
    expect(store.writeProblem()).toBeUndefined();
    expect((await store.get('k:2'))?.value).toBe('after');
  });

  it('a full database (max size reached) fails writes with SQLITE_FULL and reports it', async () => {
    const store = track(SqliteStore.open(tmp.dir, 'c.db', { sweepIntervalMs: 0, maxBytes: 64 * 1024 }));
    const big = 'x'.repeat(8 * 1024);
    let failure: unknown;
    for (let i = 0; i < 64 && failure === undefined; i++) {
      await store.set(`k:${i}`, big).catch((err: unknown) => {
        failure = err;
      });
    }
    expect(failure).toMatchObject({ code: 'SQLITE_FULL' });
    expect(String((failure as Error).message)).toContain(store.file);
    expect(store.writeProblem()).toMatch(/full/i);
    // Deleting frees room: the next write succeeds and the problem clears.
    expect(await store.delete('k:0')).toBe(true);
    await store.set('k:small', 'v');
    expect(store.writeProblem()).toBeUndefined();
  });

  it('detects a deleted database file: writes fail naming the path instead of going to an unlinked inode', async () => {
    const store = track(SqliteStore.open(tmp.dir, 'c.db', { sweepIntervalMs: 0 }));
    await store.set('k:1', 'v');
    fs.rmSync(store.file);
    expect(store.writeProblem()).toBe(
      `the cache database ${store.file} was deleted while open: writes are lost; restart the gateway to recreate it`,
    );
    await expect(store.set('k:2', 'v')).rejects.toThrow(`${store.file} was deleted`);
  });

  it('detects a database file replaced by another one', async () => {
    const store = track(SqliteStore.open(tmp.dir, 'c.db', { sweepIntervalMs: 0 }));
    fs.renameSync(store.file, `${store.file}.old`);
    fs.writeFileSync(store.file, '');
    expect(store.writeProblem()).toMatch(/was replaced while open/);
    await expect(store.set('k', 'v')).rejects.toThrow(/was replaced/);
  });

  it('refuses a corrupted file with one line that names it and says what to do', () => {
    const file = path.join(tmp.dir, 'c.db');
    fs.writeFileSync(file, 'this is not a database, it is some other file '.repeat(200));
    let message = '';
    try {
      track(SqliteStore.open(tmp.dir, 'c.db', { sweepIntervalMs: 0 }));
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain(`the cache database ${file} is corrupted`);
    expect(message).toContain('move it away or delete it');
    expect(message).not.toContain('\n');
  });

  it('names DATA_DIR when it cannot be used', () => {
    const notADir = path.join(tmp.dir, 'plain-file');
    fs.writeFileSync(notADir, 'x');
    expect(() => SqliteStore.open(notADir)).toThrow(`in DATA_DIR ${notADir}`);
    expect(() => SqliteStore.open(path.join(notADir, 'sub'))).toThrow(
      `in DATA_DIR ${path.join(notADir, 'sub')}`,
    );
  });
});
