/**
 * Measures how long one cache write blocks the event loop while another connection holds a
 * write lock on the SQLite file: a second connection runs
 * BEGIN EXCLUSIVE, then the store writes N times; the event-loop delay histogram and the wall
 * time of each write are printed. Run: `node --import tsx bench/sqlite-lock-block.ts`.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import { BUSY_TIMEOUT_MS, SqliteStore } from '../src/cache/stores/sqlite.js';
import { tmpDir } from '../test/unit/cache/tmp-dir.js';

const WRITES = Number(process.argv[2] ?? 5);
const { dir, remove } = tmpDir('lock-block');
const store = SqliteStore.open(dir, 'lock.db', { sweepIntervalMs: 0 });
await store.set('warm', 'x');
const holder = new Database(store.file);
holder.exec('BEGIN EXCLUSIVE');
const histogram = monitorEventLoopDelay({ resolution: 1 });
histogram.enable();
const perWrite: number[] = [];
let failed = 0;
for (let i = 0; i < WRITES; i++) {
  const started = performance.now();
  try {
    await store.set(`k${i}`, 'v');
  } catch {
    failed++;
  }
  perWrite.push(performance.now() - started);
  // Let the event loop turn so the histogram records the block.
  await new Promise((r) => setTimeout(r, 5));
}
histogram.disable();
holder.exec('ROLLBACK');
holder.close();
await store.close();
remove();
const ms = (ns: number) => (ns / 1e6).toFixed(1);
console.log(
  JSON.stringify({
    writes: WRITES,
    failed,
    busyTimeoutMs: BUSY_TIMEOUT_MS,
    perWriteMs: perWrite.map((x) => Number(x.toFixed(1))),
    eventLoopDelayMs: { max: ms(histogram.max), p99: ms(histogram.percentile(99)), mean: ms(histogram.mean) },
  }),
);
