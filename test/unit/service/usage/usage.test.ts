/**
 * Usage metered per key (src/service/usage/): one suite run against every store (memory,
 * SQLite on a temporary file, Redis on a real redis-server), through the recorder as the
 * gateway uses it, with an injected clock. Each figure is checked against a naive sum kept by
 * the test itself, and a property test does the same for any sequence of records and flushes.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../../../src/cache/stores/sqlite.js';
import { RedisConnection } from '../../../../src/redis/connection.js';
import { MemoryUsageStore } from '../../../../src/service/usage/memory-store.js';
import { UsageRecorder, type UsageRecorderOptions } from '../../../../src/service/usage/recorder.js';
import { RedisUsageStore } from '../../../../src/service/usage/redis-store.js';
import { SqliteUsageStore } from '../../../../src/service/usage/sqlite-store.js';
import {
  addDays,
  oldestKeptDay,
  USAGE_DIMENSIONS,
  type UsageDimension,
  type UsageFigures,
  type UsageOutcome,
  type UsageQuery,
  type UsageRecord,
  type UsageRow,
  type UsageStore,
  utcDay,
} from '../../../../src/service/usage/usage.js';
import { startRedis } from '../../../support/redis-server.js';

const redis = await startRedis();
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'clarity-cache-usage-'));
afterAll(async () => {
  await redis?.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** Where one store keeps its rows: open() gives a store on it (a new one each time, where that means something). */
interface Backing {
  open(): Promise<UsageStore>;
  cleanup(): Promise<void>;
}

let files = 0;
let prefixes = 0;

const BACKINGS: { name: string; skip: boolean; make: () => Promise<Backing> }[] = [
  {
    name: 'memory',
    skip: false,
    make: async () => {
      // One process: every "instance" is the same store object.
      const store = new MemoryUsageStore();
      return { open: async () => store, cleanup: async () => {} };
    },
  },
  {
    name: 'sqlite',
    skip: false,
    make: async () => {
      const file = path.join(tmp, `usage-${++files}.db`);
      const opened: UsageStore[] = [];
      return {
        open: async () => {
          const store = SqliteUsageStore.open(file);
          opened.push(store);
          return store;
        },
        cleanup: async () => {
          for (const s of opened) await s.close();
        },
      };
    },
  },
  {
    name: 'redis',
    skip: redis === undefined,
    make: async () => {
      const prefix = `u${process.pid}-${++prefixes}:`;
      const connections: RedisConnection[] = [];
      return {
        open: async () => {
          const connection = new RedisConnection({ url: redis!.url });
          connections.push(connection);
          await connection.connect();
          return new RedisUsageStore(connection.client, prefix);
        },
        cleanup: async () => {
          for (const c of connections) await c.close();
        },
      };
    },
  },
];

const DAY_MS = 86_400_000;
/** Noon UTC, 15 March 2026: a clock the tests move by days. */
const START = Date.parse('2026-03-15T12:00:00Z');

type Rec = UsageRecord & { readonly day: string; readonly requests: number };

const FIGURES = ['requests', 'units', 'upstreamRequests', 'bytesSent'] as const;

/** The test's own sum: group recs by dims, in the order the recorder promises. */
function naive(
  recs: readonly Rec[],
  query: UsageQuery,
): { rows: Record<string, unknown>[]; totals: UsageFigures } {
  const groups = new Map<string, Record<string, unknown>>();
  const totals = { requests: 0, units: 0, upstreamRequests: 0, bytesSent: 0 };
  for (const r of recs) {
    if (query.key !== undefined && r.key !== query.key) continue;
    if (query.from !== undefined && r.day < query.from) continue;
    if (query.to !== undefined && r.day > query.to) continue;
    for (const f of FIGURES) totals[f] += r[f];
    if (query.groupBy.length === 0) continue;
    const values = query.groupBy.map((d) => r[d]);
    const id = JSON.stringify(values);
    let g = groups.get(id);
    if (g === undefined) {
      g = { requests: 0, units: 0, upstreamRequests: 0, bytesSent: 0 };
      query.groupBy.forEach((d, i) => {
        g![d] = values[i];
      });
      groups.set(id, g);
    }
    for (const f of FIGURES) (g[f] as number) += r[f];
  }
  const rank = (v: unknown): string => (v === null ? '' : `~${v as string}`);
  const rows = [...groups.values()].sort((a, b) => {
    for (const d of query.groupBy) {
      const x = rank(a[d]);
      const y = rank(b[d]);
      if (x !== y) return x < y ? -1 : 1;
    }
    return 0;
  });
  return { rows, totals };
}

for (const backing of BACKINGS) {
  describe.skipIf(backing.skip)(`usage on the ${backing.name} store`, () => {
    let t = START;
    const now = (): number => t;
    const cleanups: (() => Promise<void>)[] = [];
    afterEach(async () => {
      while (cleanups.length > 0) await cleanups.pop()!();
      t = START;
    });

    const fresh = async (): Promise<Backing> => {
      const b = await backing.make();
      cleanups.push(() => b.cleanup());
      return b;
    };
    const recorderOn = (store: UsageStore, options: Partial<UsageRecorderOptions> = {}): UsageRecorder => {
      const r = new UsageRecorder({ store, now, flushIntervalMs: 0, pruneIntervalMs: 0, ...options });
      cleanups.push(() => r.close());
      return r;
    };
    /** A recorder on a fresh backing, and recs: what it was given (for naive()). */
    const setup = async (options: Partial<UsageRecorderOptions> = {}) => {
      const b = await fresh();
      const store = await b.open();
      const recorder = recorderOn(store, options);
      const recs: Rec[] = [];
      const record = (r: UsageRecord, on: UsageRecorder = recorder): void => {
        on.record(r);
        recs.push({ ...r, requests: r.requests ?? 1, day: utcDay(t) });
      };
      return { backing: b, store, recorder, recs, record };
    };

    const rec = (
      key: string | null,
      route: string,
      fn: string,
      outcome: UsageOutcome,
      units = 1,
    ): UsageRecord => ({
      key,
      route,
      function: fn,
      outcome,
      units,
      upstreamRequests: outcome === 'miss' ? 1 : 0,
      bytesSent: 100 + units,
    });

    /** A varied day of traffic over four days, keys a, b and anonymous. */
    const traffic = (record: (r: UsageRecord) => void): void => {
      const routes = [
        '/contract-calls/read-only/{contractAddress}/{contractName}/{functionName}',
        '/v2/info',
      ];
      const keys = [null, 'a', 'b'];
      const outcomes: UsageOutcome[] = ['hit', 'miss', 'error', 'refused'];
      for (let d = 0; d < 4; d++) {
        t = START - (3 - d) * DAY_MS;
        for (let i = 0; i < 40; i++) {
          const route = routes[i % 2]!;
          record(
            rec(keys[i % 3]!, route, i % 2 === 0 ? `SP.x${i % 4}::f` : '', outcomes[(i * 7 + d) % 4]!, i % 5),
          );
        }
      }
      t = START;
    };

    it('aggregates: 1000 records of three rows make three rows with exact sums', async () => {
      const { store, recorder, recs, record } = await setup();
      for (let i = 0; i < 1000; i++) {
        const which = i % 3;
        record({
          key: which === 2 ? null : 'a',
          route: '/r',
          function: which === 1 ? 'SP.t::get' : '',
          outcome: which === 0 ? 'hit' : 'miss',
          units: i % 7,
          upstreamRequests: which,
          bytesSent: i,
          ...(i % 10 === 0 ? { requests: 2 } : {}),
        });
      }
      expect(recorder.pending).toBe(3);
      await recorder.flush();
      expect(recorder.pending).toBe(0);
      const all: UsageQuery = { groupBy: [...USAGE_DIMENSIONS] };
      const stored = await store.query(all);
      expect(stored.rows).toHaveLength(3);
      expect(stored).toEqual(naive(recs, all));
      expect(stored.totals.requests).toBe(1100);
      expect(stored.totals.bytesSent).toBe((999 * 1000) / 2);
    });

    it('groups by any dimensions, sorted by them in groupBy order (anonymous first)', async () => {
      const { recorder, recs, record } = await setup();
      traffic(record);
      await recorder.flush();
      const combos: UsageDimension[][] = [
        ['key'],
        ['day'],
        ['route'],
        ['function'],
        ['outcome'],
        ['outcome', 'key'],
        ['key', 'outcome'],
        ['day', 'route', 'function'],
        ['function', 'day', 'key', 'outcome', 'route'],
      ];
      for (const groupBy of combos) {
        const query = { groupBy, from: '2026-01-01' };
        expect(await recorder.query(query), groupBy.join()).toEqual(naive(recs, query));
      }
      const byKey = await recorder.query({ groupBy: ['key'] });
      expect(byKey.rows.map((r) => r.key)).toEqual([null, 'a', 'b']);
      expect(Object.keys(byKey.rows[0]!).sort()).toEqual([
        'bytesSent',
        'key',
        'requests',
        'units',
        'upstreamRequests',
      ]);
    });

    it('an empty groupBy gives no rows, only the totals', async () => {
      const { recorder, recs, record } = await setup();
      traffic(record);
      await recorder.flush();
      const result = await recorder.query({ groupBy: [] });
      expect(result.rows).toEqual([]);
      expect(result.totals).toEqual(naive(recs, { groupBy: [] }).totals);
      expect(result.totals.requests).toBe(160);
      const empty = await recorder.query({ groupBy: [], key: 'nobody' });
      expect(empty).toEqual({
        rows: [],
        totals: { requests: 0, units: 0, upstreamRequests: 0, bytesSent: 0 },
      });
    });

    it('filters by key: a name, null for anonymous only, undefined for all', async () => {
      const { recorder, recs, record } = await setup();
      traffic(record);
      await recorder.flush();
      for (const key of ['a', null, undefined, 'b', 'nobody']) {
        const query = { key, groupBy: ['key', 'outcome'] as UsageDimension[] };
        expect(await recorder.query(query), String(key)).toEqual(naive(recs, query));
      }
      expect((await recorder.query({ key: null, groupBy: ['key'] })).rows.map((r) => r.key)).toEqual([null]);
      expect((await recorder.query({ key: 'a', groupBy: ['key'] })).rows.map((r) => r.key)).toEqual(['a']);
      expect((await recorder.query({ groupBy: ['key'] })).rows).toHaveLength(3);
    });

    it('from and to are inclusive UTC days', async () => {
      const { recorder, recs, record } = await setup();
      traffic(record);
      await recorder.flush();
      const from = addDays(utcDay(START), -2);
      const to = addDays(utcDay(START), -1);
      const query = { from, to, groupBy: ['day'] as UsageDimension[] };
      const result = await recorder.query(query);
      expect(result.rows.map((r) => r.day)).toEqual([from, to]);
      expect(result).toEqual(naive(recs, query));
      expect((await recorder.query({ from: to, to: to, groupBy: ['day'] })).rows.map((r) => r.day)).toEqual([
        to,
      ]);
      expect((await recorder.query({ to: from, groupBy: ['day'] })).rows.map((r) => r.day)).toEqual([
        addDays(from, -1),
        from,
      ]);
    });

    it('keeps retentionDays UTC days: older ones are never answered and are pruned on start and by prune()', async () => {
      const { store, recorder, backing: b, record } = await setup({ retentionDays: 3 });
      for (let d = 5; d >= 0; d--) {
        t = START - d * DAY_MS;
        record(rec('a', '/r', '', 'hit'));
        await recorder.flush();
      }
      const today = utcDay(START);
      const days = async (s: UsageStore): Promise<string[]> =>
        (await s.query({ groupBy: ['day'] })).rows.map((r) => r.day!);
      expect(oldestKeptDay(START, 3)).toBe(addDays(today, -2));
      // Before any prune, the store has all six days; the recorder answers the three kept.
      expect(await days(store)).toHaveLength(6);
      expect((await recorder.query({ groupBy: ['day'] })).rows.map((r) => r.day)).toEqual([
        addDays(today, -2),
        addDays(today, -1),
        today,
      ]);
      await recorder.prune();
      expect(await days(store)).toEqual([addDays(today, -2), addDays(today, -1), today]);
      // An instance starting two days later prunes at once.
      t = START + 2 * DAY_MS;
      const later = recorderOn(await b.open(), { retentionDays: 3 });
      await later.flush();
      expect(await days(store)).toEqual([today]);
    });

    it('close() flushes: a new recorder on the same file or Redis sees the rows', async () => {
      const { recorder, recs, record, backing: b } = await setup();
      traffic(record);
      expect(recorder.pending).toBeGreaterThan(0);
      await recorder.close();
      recorder.record(rec('a', '/after-close', '', 'hit'));
      const next = recorderOn(await b.open());
      const all = { groupBy: [...USAGE_DIMENSIONS], from: '2026-01-01' };
      expect(await next.query(all)).toEqual(naive(recs, all));
    });

    it('two recorders on one store add up (a fleet on one Redis)', async () => {
      const { recorder: one, recs, record, backing: b } = await setup();
      const two = recorderOn(await b.open());
      traffic((r) => record(r, one));
      traffic((r) => record(r, two));
      await Promise.all([one.flush(), two.flush()]);
      // The same rows again from both: 160 distinct figures twice over, not 320 rows.
      const all = { groupBy: [...USAGE_DIMENSIONS], from: '2026-01-01' };
      const expected = naive(recs, all);
      expect(await one.query(all)).toEqual(expected);
      expect(await two.query(all)).toEqual(expected);
      expect(expected.totals.requests).toBe(320);
    });

    it('answers with unflushed figures at once, and counts nothing twice across a flush', async () => {
      const { store, recorder, recs, record } = await setup();
      const all = { groupBy: [...USAGE_DIMENSIONS] };
      for (let i = 0; i < 5; i++) record(rec('a', '/r', '', 'hit', 2));
      expect((await store.query(all)).totals.requests).toBe(0);
      expect(await recorder.query(all)).toEqual(naive(recs, all));
      await recorder.flush();
      expect(await recorder.query(all)).toEqual(naive(recs, all));
      for (let i = 0; i < 2; i++) record(rec('a', '/r', '', 'hit', 2));
      record(rec(null, '/r', '', 'miss', 1));
      // A flush and queries issued together: each sees every figure once.
      const [before, , after] = await Promise.all([
        recorder.query(all),
        recorder.flush(),
        recorder.query(all),
      ]);
      expect(before).toEqual(naive(recs, all));
      expect(after).toEqual(naive(recs, all));
      expect(after.totals.requests).toBe(8);
      expect(after.totals.units).toBe(15);
    });

    it('monthUnits: the key’s units this UTC month, fleet-wide, unflushed ones included once', async () => {
      const { recorder: one, record, backing: b } = await setup();
      const two = recorderOn(await b.open());
      t = Date.parse('2026-02-28T23:00:00Z');
      record(rec('a', '/r', '', 'hit', 1000)); // last month: never counted in March
      t = Date.parse('2026-03-01T00:00:00Z');
      record(rec('a', '/r', '', 'hit', 5));
      record(rec(null, '/r', '', 'hit', 7));
      t = START;
      record(rec('a', '/r', '', 'miss', 11));
      expect(one.monthUnits('a', t)).toBe(16);
      expect(one.monthUnits(null, t)).toBe(7);
      await one.flush();
      expect(one.monthUnits('a', t)).toBe(16);
      expect(one.monthUnits('b', t)).toBe(0);
      // Another instance: nothing of its own, the store's figure once loaded.
      expect(two.monthUnits('a', t)).toBe(0);
      expect(await two.loadMonthUnits('a', t)).toBe(16);
      record(rec('a', '/r', '', 'hit', 3), two);
      expect(two.monthUnits('a', t)).toBe(19);
      record(rec('a', '/r', '', 'hit', 100), one);
      expect(one.monthUnits('a', t)).toBe(116);
      await one.flush();
      await two.flush();
      expect(two.monthUnits('a', t)).toBe(119);
      await one.flush(); // refreshes what two added
      expect(one.monthUnits('a', t)).toBe(119);
      // February is another month.
      expect(await one.loadMonthUnits('a', Date.parse('2026-02-10T00:00:00Z'))).toBe(1000);
      // A new month starts at zero plus what is recorded in it.
      t = Date.parse('2026-04-01T00:00:01Z');
      expect(one.monthUnits('a', t)).toBe(0);
      record(rec('a', '/r', '', 'hit', 4), one);
      expect(one.monthUnits('a', t)).toBe(4);
      await one.flush();
      expect(one.monthUnits('a', t)).toBe(4);
    });

    it('flushes on its own every flushIntervalMs', async () => {
      const { store, record } = await setup({ flushIntervalMs: 20 });
      record(rec('a', '/r', '', 'hit', 9));
      await expect.poll(async () => (await store.query({ groupBy: [] })).totals.units).toBe(9);
    });

    it('equals a naive sum for any records flushed at any points (property)', async () => {
      const action = fc.oneof(
        {
          weight: 5,
          arbitrary: fc.record({
            // Few distinct rows, so that rows recur across flushes (adding, not replacing).
            key: fc.constantFrom(null, 'a', 'b:é'),
            dayBack: fc.integer({ min: 0, max: 1 }),
            route: fc.constantFrom('/r1', '/r2/{x}'),
            fn: fc.constantFrom('', 'SP.y::f\u0000g'),
            outcome: fc.constantFrom<UsageOutcome>('hit', 'miss', 'error', 'refused'),
            requests: fc.integer({ min: 0, max: 3 }),
            units: fc.integer({ min: 0, max: 1000 }),
            upstreamRequests: fc.integer({ min: 0, max: 2 }),
            bytesSent: fc.integer({ min: 0, max: 1_000_000 }),
          }),
        },
        { weight: 1, arbitrary: fc.constant('flush' as const) },
      );
      const runs = backing.name === 'memory' ? 100 : 25;
      await fc.assert(
        fc.asyncProperty(fc.array(action, { minLength: 20, maxLength: 80 }), async (actions) => {
          const { recorder, recs, record } = await setup({ retentionDays: 30 });
          for (const a of actions) {
            if (a === 'flush') {
              await recorder.flush();
              continue;
            }
            t = START - a.dayBack * DAY_MS;
            const { dayBack: _, fn, ...r } = a;
            record({ ...r, function: fn });
          }
          t = START;
          const all = { groupBy: [...USAGE_DIMENSIONS] };
          expect(await recorder.query(all)).toEqual(naive(recs, all));
          await recorder.flush();
          expect(await recorder.query(all)).toEqual(naive(recs, all));
          while (cleanups.length > 0) await cleanups.pop()!();
        }),
        { numRuns: runs },
      );
    });
  });
}

/** One hit of key `a` costing a unit: what the recorder tests record. */
const rows: UsageRecord = {
  key: 'a',
  route: '/r',
  function: '',
  outcome: 'hit',
  units: 1,
  upstreamRequests: 0,
  bytesSent: 1,
};

/**
 * A store around `inner` whose add fails while `fail()` says so: 'before' applying anything, or
 * 'after' applying (a reply lost with the connection). `sent`: each add's batch id and requests.
 */
const flaky = (inner: UsageStore, fail: () => 'no' | 'before' | 'after') => {
  const sent: { id: string | undefined; requests: number }[] = [];
  const store: UsageStore = {
    kind: inner.kind,
    add: async (batch, id) => {
      sent.push({ id, requests: batch.reduce((n, r) => n + r.requests, 0) });
      const mode = fail();
      if (mode === 'before') throw new Error('down');
      await inner.add(batch, id);
      if (mode === 'after') throw new Error('reply lost');
    },
    query: (q) => inner.query(q),
    prune: (d) => inner.prune(d),
    monthUnits: (k, m) => inner.monthUnits(k, m),
    close: () => inner.close(),
  };
  return { store, sent };
};

describe('UsageRecorder', () => {
  it('refuses negative or fractional figures, an empty key name, and malformed queries', async () => {
    const recorder = new UsageRecorder({ store: new MemoryUsageStore(), flushIntervalMs: 0 });
    expect(() => recorder.record({ ...rows, units: -1 })).toThrow(RangeError);
    expect(() => recorder.record({ ...rows, bytesSent: 1.5 })).toThrow(RangeError);
    expect(() => recorder.record({ ...rows, requests: Number.NaN })).toThrow(RangeError);
    expect(() => recorder.record({ ...rows, key: '' })).toThrow(RangeError);
    await expect(recorder.query({ groupBy: ['key', 'key'] })).rejects.toThrow(RangeError);
    await expect(recorder.query({ groupBy: ['nope' as UsageDimension] })).rejects.toThrow(RangeError);
    await expect(recorder.query({ groupBy: [], from: '2026-02-30' })).rejects.toThrow(RangeError);
    await expect(recorder.query({ groupBy: [], to: '2026-3-1' })).rejects.toThrow(RangeError);
    expect(() => new UsageRecorder({ store: new MemoryUsageStore(), retentionDays: 0 })).toThrow(RangeError);
    expect(recorder.pending).toBe(0);
    await recorder.close();
  });

  it('keeps a failed flush’s rows, still answers them, and adds them once when the store is back', async () => {
    const memory = new MemoryUsageStore();
    let failing = true;
    const { store } = flaky(memory, () => (failing ? 'before' : 'no'));
    const errors: unknown[] = [];
    const recorder = new UsageRecorder({
      store,
      flushIntervalMs: 0,
      onError: (err, op) => errors.push([op, err]),
    });
    recorder.record(rows);
    recorder.record(rows);
    expect(recorder.monthUnits('a')).toBe(2);
    await expect(recorder.flush()).rejects.toThrow('down');
    expect(recorder.pending).toBe(1);
    recorder.record(rows);
    expect((await recorder.query({ groupBy: [] })).totals.requests).toBe(3);
    expect(recorder.monthUnits('a')).toBe(3);
    failing = false;
    await recorder.flush();
    expect((await memory.query({ groupBy: [] })).totals.requests).toBe(3);
    expect((await recorder.query({ groupBy: [] })).totals.requests).toBe(3);
    expect(recorder.monthUnits('a')).toBe(3);
    // close() reports a last flush that fails instead of throwing.
    failing = true;
    recorder.record(rows);
    await recorder.close();
    expect(errors).toEqual([['flush', new Error('down')]]);
  });
});

describe('a failed flush sent again', () => {
  it('goes alone, first, under the same id; newer figures follow under a new one', async () => {
    let mode: 'no' | 'before' = 'before';
    const { store, sent } = flaky(new MemoryUsageStore(), () => mode);
    const recorder = new UsageRecorder({ store, flushIntervalMs: 0, pruneIntervalMs: 0 });
    recorder.record(rows);
    recorder.record(rows);
    await expect(recorder.flush()).rejects.toThrow('down');
    recorder.record(rows);
    expect(recorder.pending).toBe(2);
    expect(recorder.monthUnits('a')).toBe(3);
    await expect(recorder.flush()).rejects.toThrow('down');
    mode = 'no';
    await recorder.flush();
    expect(sent.map((s) => s.requests)).toEqual([2, 2, 2, 1]);
    const ids = sent.map((s) => s.id);
    expect(ids[0]).toEqual(expect.any(String));
    expect(ids[1]).toBe(ids[0]);
    expect(ids[2]).toBe(ids[0]);
    expect(ids[3]).not.toBe(ids[0]);
    expect((await recorder.query({ groupBy: [] })).totals.requests).toBe(3);
    expect(recorder.monthUnits('a')).toBe(3);
    await recorder.close();
  });

  it.skipIf(redis === undefined)('on Redis, is applied once when the first reply was lost', async () => {
    const connection = new RedisConnection({ url: redis!.url });
    await connection.connect();
    try {
      const redisStore = new RedisUsageStore(connection.client, `lost-${process.pid}:`);
      let mode: 'no' | 'after' = 'after';
      const { store, sent } = flaky(redisStore, () => mode);
      const recorder = new UsageRecorder({ store, flushIntervalMs: 0, pruneIntervalMs: 0 });
      for (let i = 0; i < 5; i++) recorder.record(rows);
      expect(recorder.monthUnits('a')).toBe(5);
      await expect(recorder.flush()).rejects.toThrow('reply lost');
      recorder.record(rows);
      expect(recorder.monthUnits('a')).toBe(6);
      mode = 'no';
      await recorder.flush();
      expect(sent.map((s) => s.requests)).toEqual([5, 5, 1]);
      // Five and one, not ten and one: the repeat of the applied batch was skipped.
      expect((await redisStore.query({ groupBy: [] })).totals).toMatchObject({ requests: 6, units: 6 });
      expect(await redisStore.monthUnits(['a'], utcDay(Date.now()).slice(0, 7))).toEqual([6]);
      expect(recorder.monthUnits('a')).toBe(6);
      // Without an id, every add counts: the id is what makes a repeat safe.
      await redisStore.add([{ ...rows, requests: 1, day: utcDay(Date.now()) }]);
      await redisStore.add([{ ...rows, requests: 1, day: utcDay(Date.now()) }]);
      expect((await redisStore.query({ groupBy: [] })).totals.requests).toBe(8);
      await recorder.close();
    } finally {
      await connection.close();
    }
  });
});

describe('UsageRecorder while a flush is under way', () => {
  const row: UsageRecord = {
    key: 'a',
    route: '/r',
    function: '',
    outcome: 'hit',
    units: 5,
    upstreamRequests: 0,
    bytesSent: 1,
  };

  /** A memory store whose add() waits for release(), and whose monthUnits() can be made to fail. */
  const gated = () => {
    const memory = new MemoryUsageStore();
    let release: () => void = () => {};
    let adding = false;
    let monthFails = false;
    const store: UsageStore = {
      kind: 'memory',
      add: async (r: readonly UsageRow[]) => {
        adding = true;
        await new Promise<void>((resolve) => {
          release = resolve;
        });
        await memory.add(r);
        adding = false;
      },
      query: (q) => memory.query(q),
      prune: (d) => memory.prune(d),
      monthUnits: (k, m) => (monthFails ? Promise.reject(new Error('month down')) : memory.monthUnits(k, m)),
      close: () => memory.close(),
    };
    return {
      store,
      release: () => release(),
      adding: () => adding,
      failMonths: (fail: boolean) => {
        monthFails = fail;
      },
    };
  };

  it('counts the rows being flushed in monthUnits once, before and after the store has them', async () => {
    const g = gated();
    const errors: unknown[] = [];
    const recorder = new UsageRecorder({
      store: g.store,
      flushIntervalMs: 0,
      onError: (_err, op) => errors.push(op),
    });
    expect(await recorder.loadMonthUnits('a')).toBe(0);
    recorder.record(row);
    const flushed = recorder.flush();
    await expect.poll(g.adding).toBe(true);
    expect(recorder.pending).toBe(0);
    expect(recorder.monthUnits('a')).toBe(5);
    recorder.record(row);
    expect(recorder.monthUnits('a')).toBe(10);
    // A query waits for the flush and counts every figure once.
    const answered = recorder.query({ groupBy: [] });
    g.release();
    await flushed;
    expect((await answered).totals.units).toBe(10);
    expect(recorder.monthUnits('a')).toBe(10);
    // The store took the rows but their month units could not be read back: counted here.
    g.failMonths(true);
    const again = recorder.flush();
    await expect.poll(g.adding).toBe(true);
    g.release();
    await again;
    expect(errors).toEqual(['month']);
    expect(recorder.monthUnits('a')).toBe(10);
    recorder.record(row);
    expect(recorder.monthUnits('a')).toBe(15);
    g.failMonths(false);
    const last = recorder.flush();
    await expect.poll(g.adding).toBe(true);
    g.release();
    await last;
    expect(recorder.monthUnits('a')).toBe(15);
    await recorder.close();
  });
});

describe('SqliteUsageStore on the cache store’s own connection', () => {
  it('shares the file with the cache, leaves the connection open on close, and keeps its rows', async () => {
    const dir = fs.mkdtempSync(path.join(tmp, 'shared-'));
    const cache = SqliteStore.open(dir);
    const usage = new SqliteUsageStore(cache.database);
    const recorder = new UsageRecorder({ store: usage, flushIntervalMs: 0 });
    recorder.record({
      key: null,
      route: '/r',
      function: '',
      outcome: 'miss',
      units: 3,
      upstreamRequests: 1,
      bytesSent: 10,
    });
    await recorder.close();
    await cache.set('k', 'v');
    expect((await cache.get('k'))?.value).toBe('v');
    await cache.close();
    const again = SqliteUsageStore.open(cache.file);
    expect(await again.query({ groupBy: ['key', 'outcome'] })).toEqual({
      rows: [{ key: null, outcome: 'miss', requests: 1, units: 3, upstreamRequests: 1, bytesSent: 10 }],
      totals: { requests: 1, units: 3, upstreamRequests: 1, bytesSent: 10 },
    });
    await again.close();
  });
});
