import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { prefixSuccessor, SqliteStore } from '../../../src/cache/stores/sqlite.js';
import { testClock } from './store-contract.js';
import { tmpDir } from './tmp-dir.js';

describe('prefixSuccessor', () => {
  it('bumps the last code point', () => {
    expect(prefixSuccessor('abi:')).toBe('abi;');
    expect(prefixSuccessor('a_')).toBe('a`');
    expect(prefixSuccessor('ü')).toBe('ý');
    expect(prefixSuccessor('😀')).toBe('😁');
  });

  it('skips surrogates and carries past U+10FFFF', () => {
    expect(prefixSuccessor('\uD7FF')).toBe('\uE000');
    expect(prefixSuccessor('\uFFFF')).toBe('\u{10000}');
    expect(prefixSuccessor('a\u{10FFFF}')).toBe('b');
    expect(prefixSuccessor('a\u{10FFFF}\u{10FFFF}')).toBe('b');
  });

  it('has no upper bound for the empty prefix or only U+10FFFF', () => {
    expect(prefixSuccessor('')).toBeUndefined();
    expect(prefixSuccessor('\u{10FFFF}')).toBeUndefined();
  });
});

describe('SqliteStore', () => {
  let tmp: ReturnType<typeof tmpDir>;
  const open: SqliteStore[] = [];
  const openStore = (...args: Parameters<typeof SqliteStore.open>): SqliteStore => {
    const store = SqliteStore.open(...args);
    open.push(store);
    return store;
  };
  const rowCount = (file: string): number => {
    const db = new Database(file, { readonly: true });
    try {
      return (db.prepare('SELECT count(*) AS n FROM entries').get() as { n: number }).n;
    } finally {
      db.close();
    }
  };

  beforeEach(() => {
    tmp = tmpDir('sqlite-store');
  });

  afterEach(async () => {
    vi.useRealTimers();
    for (const store of open.splice(0)) await store.close();
    tmp.remove();
  });

  it('migrates a file written before stale_at and tip_height existed, keeping its rows', async () => {
    const file = path.join(tmp.dir, 'clarity-cache.db');
    const old = new Database(file);
    old.exec(`CREATE TABLE entries (key TEXT PRIMARY KEY, value TEXT NOT NULL, stored_at INTEGER NOT NULL, expires_at INTEGER);
      INSERT INTO entries VALUES ('ro:ttl', 'a', 1, 8000000000000), ('abi:forever', 'b', 2, NULL);`);
    old.close();
    const clock = testClock();
    const store = openStore(tmp.dir, 'clarity-cache.db', { now: clock.now, sweepIntervalMs: 0 });
    expect(await store.get('ro:ttl')).toEqual({
      value: 'a',
      storedAt: 1,
      staleAt: 8_000_000_000_000,
      expiresAt: 8_000_000_000_000,
      tipHeight: null,
    });
    expect(await store.get('abi:forever')).toEqual({
      value: 'b',
      storedAt: 2,
      staleAt: null,
      expiresAt: null,
      tipHeight: null,
    });
    await store.set('ro:new', 'c', 1_000, { tipHeight: 42 });
    expect((await store.get('ro:new'))?.tipHeight).toBe(42);
    await store.close();
    // Opening the migrated file again changes nothing.
    const again = openStore(tmp.dir, 'clarity-cache.db', { now: clock.now, sweepIntervalMs: 0 });
    expect((await again.get('ro:new'))?.tipHeight).toBe(42);
    expect(rowCount(file)).toBe(3);
  });

  it('migrates a file written before votes existed: its rows have none, new rows keep theirs', async () => {
    const file = path.join(tmp.dir, 'clarity-cache.db');
    const old = new Database(file);
    old.exec(`CREATE TABLE entries (key TEXT PRIMARY KEY, value TEXT NOT NULL, stored_at INTEGER NOT NULL,
        expires_at INTEGER, stale_at INTEGER, tip_height INTEGER, chain TEXT, tip_reported INTEGER) WITHOUT ROWID;
      INSERT INTO entries VALUES ('ro:old', 'a', 1, NULL, NULL, 7, 'c1', 1);`);
    old.close();
    const clock = testClock();
    const store = openStore(tmp.dir, 'clarity-cache.db', { now: clock.now, sweepIntervalMs: 0 });
    expect(await store.get('ro:old')).toEqual({
      value: 'a',
      storedAt: 1,
      staleAt: null,
      expiresAt: null,
      tipHeight: 7,
      chain: 'c1',
      tipReported: true,
    });
    await store.set('ro:voted', 'b', undefined, { votes: 2 });
    expect((await store.get('ro:voted'))?.votes).toBe(2);
    await store.close();
    const columns = (): string[] => {
      const db = new Database(file, { readonly: true });
      try {
        return (db.prepare('PRAGMA table_info(entries)').all() as { name: string }[]).map((c) => c.name);
      } finally {
        db.close();
      }
    };
    expect(columns()).toContain('votes');
    // Opening the migrated file again changes nothing.
    const again = openStore(tmp.dir, 'clarity-cache.db', { now: clock.now, sweepIntervalMs: 0 });
    expect((await again.get('ro:voted'))?.votes).toBe(2);
    expect(await again.get('ro:old')).not.toHaveProperty('votes');
    expect(columns().filter((c) => c === 'votes')).toHaveLength(1);
    expect(rowCount(file)).toBe(2);
  });

  it('creates the directory and the file, in WAL mode with synchronous=NORMAL', async () => {
    const dir = path.join(tmp.dir, 'a', 'b');
    const store = openStore(dir);
    await store.set('k', 'v');
    expect(store.file).toBe(path.join(dir, 'clarity-cache.db'));
    expect(fs.existsSync(store.file)).toBe(true);
    expect(fs.existsSync(`${store.file}-wal`)).toBe(true);
    expect(store.pragma('journal_mode')).toBe('wal');
    expect(store.pragma('synchronous')).toBe(1); // NORMAL
    // WAL is a property of the file: a fresh connection sees it too.
    const raw = new Database(store.file, { readonly: true });
    expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
    raw.close();
  });

  it('survives a reopen: entries, write times and expiries are kept', async () => {
    const clock = testClock();
    const first = openStore(tmp.dir, 'c.db', { now: clock.now });
    await first.set('abi:mainnet:SP1.a', '{"abi":1}');
    await first.set('ro:mainnet:x', 'r', 10_000);
    await first.set('ro:mainnet:short', 's', 100);
    const expected = await first.get('ro:mainnet:x');
    await first.close();

    clock.advance(100);
    const second = openStore(tmp.dir, 'c.db', { now: clock.now });
    expect((await second.get('abi:mainnet:SP1.a'))?.value).toBe('{"abi":1}');
    expect(await second.get('ro:mainnet:x')).toEqual(expected);
    expect(await second.get('ro:mainnet:short')).toBeUndefined();
    expect((await second.list('')).sort()).toEqual(['abi:mainnet:SP1.a', 'ro:mainnet:x']);
  });

  it("a second instance on the same directory sees the first one's writes", async () => {
    const a = openStore(tmp.dir);
    const b = openStore(tmp.dir);
    await a.set('abi:testnet:ST1.x', 'from a');
    expect((await b.get('abi:testnet:ST1.x'))?.value).toBe('from a');
    await b.delete('abi:testnet:ST1.x');
    expect(await a.get('abi:testnet:ST1.x')).toBeUndefined();
  });

  it('lists with a range search on the key, not a scan (a new file keeps rows in key order: WITHOUT ROWID)', () => {
    const store = openStore(tmp.dir);
    const plan = store.explainList('abi:mainnet:').join('\n');
    expect(plan).toMatch(/SEARCH entries USING PRIMARY KEY \(key>\? AND key<\?\)/);
    expect(plan).not.toMatch(/SCAN/);
  });

  it('purges an expired row when it is read', async () => {
    const clock = testClock();
    const store = openStore(tmp.dir, 'p.db', { now: clock.now, sweepIntervalMs: 0 });
    await store.set('t:1', 'v', 50);
    await store.set('t:2', 'v');
    clock.advance(50);
    expect(rowCount(store.file)).toBe(2);
    expect(await store.get('t:1')).toBeUndefined();
    expect(rowCount(store.file)).toBe(1);
  });

  it('sweeps expired rows on an interval', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const clock = testClock();
    const store = openStore(tmp.dir, 's.db', { now: clock.now, sweepIntervalMs: 1_000 });
    await store.set('t:1', 'v', 500);
    await store.set('t:2', 'v', 5_000);
    await store.set('t:3', 'v');
    clock.advance(600);
    expect(rowCount(store.file)).toBe(3);
    vi.advanceTimersByTime(1_000);
    expect(rowCount(store.file)).toBe(2);
    clock.advance(5_000);
    expect(store.sweep()).toBe(1);
    expect(rowCount(store.file)).toBe(1);
  });

  it('commits the set()s of one turn together: readable at once, in the file once awaited', async () => {
    const store = openStore(tmp.dir, 'g.db', { sweepIntervalMs: 0 });
    const writes = Array.from({ length: 50 }, (_, i) => store.set(`k:${i}`, `v${i}`));
    // Before the commit: this store answers the pending entries, the file has none of them.
    expect((await store.get('k:7'))?.value).toBe('v7');
    expect(rowCount(store.file)).toBe(0);
    await Promise.all(writes);
    expect(rowCount(store.file)).toBe(50);
    // A later set of the same key in the same turn wins, and both calls resolve.
    await Promise.all([store.set('k:1', 'first'), store.set('k:1', 'second')]);
    expect((await store.get('k:1'))?.value).toBe('second');
    const db = new Database(store.file, { readonly: true });
    try {
      expect(db.prepare("SELECT value FROM entries WHERE key = 'k:1'").pluck().get()).toBe('second');
    } finally {
      db.close();
    }
  });

  it('commits what is pending before a delete, a listing, a count or a close', async () => {
    const store = openStore(tmp.dir, 'h.db', { sweepIntervalMs: 0 });
    void store.set('a:1', 'v');
    expect(await store.delete('a:1')).toBe(true);
    expect(await store.get('a:1')).toBeUndefined();
    void store.set('b:1', 'v');
    void store.set('b:2', 'v');
    expect(await store.count('b:')).toBe(2);
    void store.set('b:3', 'v');
    expect(await store.list('b:')).toEqual(['b:1', 'b:2', 'b:3']);
    void store.set('b:4', 'v');
    await store.close();
    expect(rowCount(store.file)).toBe(4);
  });

  it('fails every set() of a group that cannot be committed, and the next group recovers', async () => {
    const store = openStore(tmp.dir, 'i.db', { sweepIntervalMs: 0, maxBytes: 64 * 1024 });
    const big = 'x'.repeat(8 * 1024);
    const results = await Promise.allSettled(
      Array.from({ length: 16 }, (_, i) => store.set(`big:${i}`, big)),
    );
    expect(results.every((r) => r.status === 'rejected')).toBe(true);
    expect((results[0] as PromiseRejectedResult).reason).toMatchObject({ code: 'SQLITE_FULL' });
    expect(store.writeProblem()).toMatch(/full/i);
    // The rolled-back group left nothing behind; a group that fits is committed.
    expect(rowCount(store.file)).toBe(0);
    await store.set('small', 'v');
    expect(store.writeProblem()).toBeUndefined();
    expect(rowCount(store.file)).toBe(1);
  });

  it('stops sweeping once closed, and refuses work after close', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const store = openStore(tmp.dir, 'x.db', { sweepIntervalMs: 1_000 });
    expect(vi.getTimerCount()).toBe(1);
    await store.close();
    expect(vi.getTimerCount()).toBe(0);
    expect(store.sweep()).toBe(0);
    await expect(store.get('k')).rejects.toThrow(/not open/);
  });
});
