/**
 * scale: RSS and hit latency with 10k / 100k / 1M entries in the SQLite store (seeded directly,
 * keys built as the gateway builds them), one gateway per size (the default hot tier: 32 MiB),
 * taking turns round after round: wrk -t1 -c64 saturated and -c1, every request a uniformly random
 * seeded id; the 10k figures are the reference. Gateway: what `npm start` runs (package.json "main"),
 * LOG_LEVEL=warn. Goals: 1M entries RSS ≤ 256 MiB; hit p99 ≤ 1.5× the 10k figure; hits spread
 * uniformly over 1M entries ≥ 0.5× the throughput of 10k (all in the hot tier).
 *
 *   npm run build && node --import tsx bench/cases/scale.ts
 */
import fs from 'node:fs';
import path from 'node:path';
import { HOT_TIER_MAX_BYTES } from '../../src/cache/stores/create.js';
import { approximateBytes } from '../../src/cache/stores/memory.js';
import { RESULT_HEX } from '../fake-node-process.js';
import { entryKey, seedEntries } from '../seed.js';
import {
  type BenchCase,
  CONNECTIONS,
  cpuOf,
  DURATION_S,
  ENTRY_PATH,
  entryBody,
  expectOk,
  type FakeNodeProc,
  freshDir,
  gateway,
  int,
  log,
  type Measured,
  mark,
  measure,
  medianRound,
  memoryOf,
  ms,
  QUICK,
  type Row,
  round,
  runStandalone,
  type Server,
  startFakeNodeProcess,
  WARMUP_S,
  x,
} from '../support.js';

/** Rounds of the scale scenario (three gateways, two loads each per round). */
const SCALE_ROUNDS = QUICK ? 1 : 3;
const SCALE_SIZES = [10_000, 100_000, 1_000_000];
/**
 * Entries the default hot tier holds (HOT_CACHE_MAX_BYTES, bytes only): each seeded entry costs
 * what the store's size estimate says (its key and the tuple's hex, as UTF-16, plus overhead).
 */
const HOT_TIER_ENTRIES = Math.floor(
  HOT_TIER_MAX_BYTES / approximateBytes(entryKey(0), { value: RESULT_HEX } as never),
);
/**
 * Connections of the scale scenario's unsaturated runs: one request at a time, so that the p99 is
 * the latency of a hit and not of a queue.
 */
const SCALE_SERIAL_CONNECTIONS = 1;

interface ScaleGateway {
  readonly entries: number;
  readonly dir: string;
  readonly seedMs: number;
  readonly gw: Server;
  readonly memoryIdle: ReturnType<typeof memoryOf>;
  /** As fast as answered over 64 connections. */
  readonly rounds: Measured[];
  /** Over SCALE_SERIAL_CONNECTIONS connection(s): the latency of a hit rather than of a queue. */
  readonly serialRounds: Measured[];
}

async function scaleCase(node: FakeNodeProc) {
  // One file per size, each seeded from empty; then one gateway per file, all started before
  // the first load so that the sizes can take turns round after round, like the hit scenario.
  const sizes: ScaleGateway[] = [];
  try {
    for (const size of SCALE_SIZES) {
      const dir = freshDir(`scale-${size}`);
      log(`scale: seeding ${size} entries`);
      const seedMs = await seedEntries(dir, size);
      const gw = await gateway(node.url, dir);
      await node.call({ cmd: 'resetStats' });
      // The first and last seeded keys are hits: the key layout matches the gateway's.
      await expectOk(`${gw.url}${ENTRY_PATH}`, entryBody(0));
      await expectOk(`${gw.url}${ENTRY_PATH}`, entryBody(size - 1));
      if ((await node.count('call-read')) !== 0)
        throw new Error('scale: a seeded key missed (key layout mismatch)');
      sizes.push({
        entries: size,
        dir,
        seedMs,
        gw,
        memoryIdle: memoryOf(gw.proc.pid),
        rounds: [],
        serialRounds: [],
      });
    }
    await node.call({ cmd: 'resetStats' });
    for (let round = 0; round < SCALE_ROUNDS; round++) {
      const order = round % 2 === 0 ? sizes : [...sizes].reverse();
      for (const s of order) {
        log(`scale round ${round + 1}/${SCALE_ROUNDS}: ${s.entries} entries, hits spread over every key`);
        const spread = {
          count: s.entries,
          prefix: '{"functionArgs":[{"type":"uint","value":"',
          suffix: '"}]}',
        };
        s.rounds.push(
          await measure(s.gw, `${s.gw.url}${ENTRY_PATH}`, '', { spread, warmupSeconds: WARMUP_S + 1 }),
        );
        s.serialRounds.push(
          await measure(s.gw, `${s.gw.url}${ENTRY_PATH}`, '', {
            spread,
            warmupSeconds: 0,
            connections: SCALE_SERIAL_CONNECTIONS,
          }),
        );
      }
    }
    const misses = await node.count('call-read');
    if (misses !== 0) throw new Error(`scale: ${misses} requests missed the cache`);
    return sizes.map((s) => {
      const figures = medianRound(s.rounds);
      return {
        entries: s.entries,
        dbFileMiB: round(fs.statSync(path.join(s.dir, 'clarity-cache.db')).size / 1024 / 1024, 1),
        seedMs: round(s.seedMs, 0),
        hotTierShare: round(Math.min(1, HOT_TIER_ENTRIES / s.entries), 3),
        memoryIdle: s.memoryIdle,
        /** After every round of load. */
        memory: memoryOf(s.gw.proc.pid),
        rps: figures.rps,
        p50: figures.p50,
        p99: figures.p99,
        cpuUsPerRequest: figures.cpuUsPerRequest,
        serial: { connections: SCALE_SERIAL_CONNECTIONS, ...medianRound(s.serialRounds) },
        rounds: s.rounds,
      };
    });
  } finally {
    for (const s of sizes) await s.gw.proc.stop();
  }
}

type Scale = Awaited<ReturnType<typeof scaleCase>>;

function rows(scale: Scale): Row[] {
  const out: Row[] = [];
  const base = scale[0]!;
  for (const s of scale) {
    const label = s.entries >= 1_000_000 ? `${s.entries / 1_000_000}M` : `${s.entries / 1000}k`;
    const isMillion = s.entries === 1_000_000;
    out.push({
      figure: `${label} entries: RSS after load`,
      value: `${s.memory.rssMiB.toFixed(1)} MiB`,
      reference: `${base.memory.rssMiB.toFixed(1)} MiB (10k)`,
      ratio: x(s.memory.rssMiB / base.memory.rssMiB),
      target: isMillion ? '≤ 256 MiB' : '—',
      status: isMillion ? mark(s.memory.rssMiB <= 256) : '—',
    });
    const p99Ratio = s.p99 / base.p99;
    out.push({
      loadCpu: cpuOf(s),
      figure: `${label} entries: hit p99, saturated (${int(s.rps)} req/s)`,
      value: ms(s.p99, 3),
      reference: `${ms(base.p99, 3)} (10k)`,
      ratio: x(p99Ratio),
      target: s === base ? '—' : '≤ 1.50×',
      status: s === base ? '—' : mark(p99Ratio <= 1.5),
    });
    if (isMillion) {
      out.push({
        figure: '1M entries, hits spread uniformly: throughput vs 10k (all in the hot tier)',
        value: `${int(s.rps)} req/s`,
        reference: `${int(base.rps)} req/s (10k)`,
        ratio: x(s.rps / base.rps),
        target: '≥ 0.50×',
        status: mark(s.rps / base.rps >= 0.5),
      });
    }
    const serial = s.serial;
    const baseSerial = base.serial;
    if (serial !== undefined && baseSerial !== undefined) {
      const serialRatio = serial.p99 / baseSerial.p99;
      out.push({
        figure: `${label} entries: hit p99, ${serial.connections} connection (${int(serial.rps)} req/s)`,
        value: ms(serial.p99, 3),
        reference: `${ms(baseSerial.p99, 3)} (10k)`,
        ratio: x(serialRatio),
        target: s === base ? '—' : '≤ 1.50×',
        status: s === base ? '—' : mark(serialRatio <= 1.5),
      });
    }
  }
  return out;
}

function notes(scale: Scale): string[] {
  return [
    '**4. Scale.** Three SQLite files, seeded directly (better-sqlite3, one transaction per 100k rows)',
    'with 10k, 100k and 1M rows whose keys are built by src/cache/keys.ts exactly as the gateway builds',
    'them for `get-entry(u<id>)`, each holding the real tuple result hex; one gateway per file (default',
    `hot tier: HOT_CACHE_MAX_BYTES 32 MiB, no count bound, about ${HOT_TIER_ENTRIES.toLocaleString('en-US')} of these entries), all three running, taking turns for the load round after`,
    `round (${SCALE_ROUNDS} rounds, order reversed every other round; medians). Load: the same 64`,
    'connections, every request for a uniformly random id of the seeded range (bench/load.ts builds each',
    `body), so with 10k entries every hit comes from the hot tier, with 100k about ${Math.round((100 * HOT_TIER_ENTRIES) / 100_000)} % and`,
    `with 1M about ${Math.round((100 * HOT_TIER_ENTRIES) / 1_000_000)} %: the rest are SQLite reads (then promoted into the hot tier, evicting others).`,
    'Each size is loaded twice per round: saturated over 64 connections (as fast as answered: its p99 is',
    'mostly queueing, so its ratio follows the throughput ratio), then over one connection, one request at',
    'a time (its p99 is the latency of a hit itself). The 2× target is checked on both.',
    'Every request was a hit (the fake node saw no call-read). RSS is VmRSS of each gateway process from',
    '/proc/<pid>/status after all its rounds (peak: VmHWM); the reference is the 10k figure.',
    '',
    '| entries | DB file | seeding | hot-tier share | RSS idle → after load (peak) | saturated: req/s | CPU/request | p50 | p99 | 1 connection: req/s | p50 | p99 |',
    '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...scale.map(
      (e) =>
        `| ${int(e.entries)} | ${e.dbFileMiB} MiB | ${(e.seedMs / 1000).toFixed(1)} s | ${(e.hotTierShare * 100).toFixed(0)} % |` +
        ` ${e.memoryIdle.rssMiB} → ${e.memory.rssMiB} (${e.memory.hwmMiB}) MiB | ${int(e.rps)} |` +
        ` ${e.cpuUsPerRequest.toFixed(0)} µs | ${ms(e.p50, 3)} | ${ms(e.p99, 3)} |` +
        (e.serial === undefined
          ? ' — | — | — |'
          : ` ${int(e.serial.rps)} | ${ms(e.serial.p50, 3)} | ${ms(e.serial.p99, 3)} |`),
    ),
    '',
  ];
}

async function run() {
  const node = await startFakeNodeProcess();
  try {
    const results = await scaleCase(node);
    return {
      settings: {
        connections: CONNECTIONS,
        warmupS: WARMUP_S,
        durationS: DURATION_S,
        scaleRounds: SCALE_ROUNDS,
        scaleSizes: SCALE_SIZES,
        hotTierEntries: HOT_TIER_ENTRIES,
        scaleSerialConnections: SCALE_SERIAL_CONNECTIONS,
      },
      rows: rows(results),
      notes: notes(results),
      results,
    };
  } finally {
    await node.stop();
  }
}

export const scale: BenchCase = { title: 'scale: SQLite + 10k hot tier', run };
runStandalone(import.meta.filename, scale);
