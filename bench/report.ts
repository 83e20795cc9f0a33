/**
 * Turns a run record (bench/results/latest.json) into the figures table and BENCHMARKS.md:
 * every figure with the reference measured in the same run, the ratio, the target and whether
 * it was met. Can also be run on its own to rewrite BENCHMARKS.md from the JSON:
 *
 *   node --import tsx bench/report.ts [bench/results/latest.json]
 */
import fs from 'node:fs';
import path from 'node:path';
import type { RunRecord } from './run.js';

export interface Row {
  readonly scenario: string;
  readonly figure: string;
  readonly value: string;
  readonly reference: string;
  readonly ratio: string;
  readonly target: string;
  /** MET, MISSED, `n/a (route absent)`, or `—` (reported, no target). */
  readonly status: string;
  /** wrk's own CPU, % of one core, in the gateway's runs / the reference's runs (medians); `—` without wrk. */
  readonly loadCpu?: string;
}

const ROOT = path.resolve(import.meta.dirname, '..');
const int = (n: number): string => Math.round(n).toLocaleString('en-US');
const ms = (n: number, digits = 2): string => `${n.toFixed(digits)} ms`;
const x = (n: number): string => `${n.toFixed(2)}×`;
const mark = (ok: boolean): string => (ok ? 'MET' : 'MISSED');

/** A figure's rounds, as measured (bench/run.ts's HitFigures). */
interface Rounds {
  readonly rounds: readonly {
    rps: number;
    latencyMs: { p50: number; p99: number };
    serverCpuUsPerRequest: number;
  }[];
}
type PickFigure = (round: Rounds['rounds'][number]) => number;
const RPS: PickFigure = (r) => r.rps;
const P50: PickFigure = (r) => r.latencyMs.p50;
const P99: PickFigure = (r) => r.latencyMs.p99;
const CPU: PickFigure = (r) => r.serverCpuUsPerRequest;

/**
 * The ratio of a figure to its reference: the median of the per-round ratios, each round's run
 * against the reference run measured next to it. On a shared machine a disturbed stretch hits
 * one round of one side; pairing keeps it from skewing the ratio as a ratio of medians would.
 */
export function pairedRatio(g: Rounds, r: Rounds, pick: PickFigure, scale = 1): number {
  const n = Math.min(g.rounds.length, r.rounds.length);
  const ratios: number[] = [];
  for (let i = 0; i < n; i++) ratios.push((pick(g.rounds[i]!) * scale) / pick(r.rounds[i]!));
  ratios.sort((a, b) => a - b);
  if (ratios.length === 0) return Number.NaN;
  const mid = ratios.length >> 1;
  return ratios.length % 2 === 1 ? ratios[mid]! : (ratios[mid - 1]! + ratios[mid]!) / 2;
}

/** Median wrk CPU of some measured runs, "%". */
const cpuOf = (f: { rounds: readonly { loadGeneratorCpuPct: number }[] } | undefined): string => {
  if (f === undefined || f.rounds.length === 0) return '—';
  const v = f.rounds.map((r) => r.loadGeneratorCpuPct).sort((a, b) => a - b);
  return `${v[v.length >> 1]} %`;
};
const cpuPair = (
  g: { rounds: readonly { loadGeneratorCpuPct: number }[] } | undefined,
  r: { rounds: readonly { loadGeneratorCpuPct: number }[] } | undefined,
): string => `${cpuOf(g)} / ${cpuOf(r)}`;

const NA = 'n/a (route absent)';

export function rows(run: RunRecord): Row[] {
  const out: Row[] = [];
  const { hits, bursts, miss, scale, startup, hedging } = run.results;
  if (hits !== undefined) {
    for (const [name, pair, targets] of [
      ['read-only hit (tuple)', hits.readOnly, true],
      ['decode (tuple hex)', hits.decode, false],
    ] as const) {
      const g = pair.gateway;
      const r = pair.reference;
      const scenario = '1. cache hits, 64 connections';
      const rpsRatio = pairedRatio(g, r, RPS);
      const p99Ratio = pairedRatio(g, r, P99);
      const loadCpu = cpuPair(g, r);
      out.push({
        loadCpu,
        scenario,
        figure: `${name}: throughput`,
        value: `${int(g.rps)} req/s`,
        reference: `${int(r.rps)} req/s`,
        ratio: x(rpsRatio),
        target: targets ? '≥ 0.80×' : '≥ 0.70×',
        status: mark(rpsRatio >= (targets ? 0.8 : 0.7)),
      });
      out.push({
        loadCpu,
        scenario,
        figure: `${name}: server CPU per request`,
        value: `${g.cpuUsPerRequest.toFixed(0)} µs`,
        reference: `${r.cpuUsPerRequest.toFixed(0)} µs`,
        ratio: x(pairedRatio(g, r, CPU)),
        target: '—',
        status: '—',
      });
      out.push({
        loadCpu,
        scenario,
        figure: `${name}: p50 latency`,
        value: ms(g.p50, 3),
        reference: ms(r.p50, 3),
        ratio: x(pairedRatio(g, r, P50)),
        target: '—',
        status: '—',
      });
      out.push({
        loadCpu,
        scenario,
        figure: `${name}: p99 latency`,
        value: ms(g.p99, 3),
        reference: ms(r.p99, 3),
        ratio: x(p99Ratio),
        target: targets ? '≤ 1.50×' : '—',
        status: targets ? mark(p99Ratio <= 1.5) : '—',
      });
    }
  }
  const floor = hits?.readOnly.fastifyFloor;
  if (hits !== undefined && floor !== undefined) {
    const r = hits.readOnly.reference;
    const scenario = '1. cache hits, 64 connections';
    const info = { scenario, target: 'info', status: '—', loadCpu: cpuPair(floor, r) };
    out.push(
      {
        ...info,
        figure: 'Fastify floor, no gateway work: throughput',
        value: `${int(floor.rps)} req/s`,
        reference: `${int(r.rps)} req/s`,
        ratio: x(pairedRatio(floor, r, RPS)),
      },
      {
        ...info,
        figure: 'Fastify floor, no gateway work: server CPU per request',
        value: `${floor.cpuUsPerRequest.toFixed(0)} µs`,
        reference: `${r.cpuUsPerRequest.toFixed(0)} µs`,
        ratio: x(pairedRatio(floor, r, CPU)),
      },
      {
        ...info,
        figure: 'Fastify floor, no gateway work: p99 latency',
        value: ms(floor.p99, 3),
        reference: ms(r.p99, 3),
        ratio: x(pairedRatio(floor, r, P99)),
      },
    );
  }
  if (hits !== undefined) out.push(...featureRows(hits));
  if (bursts !== undefined) {
    for (const [name, b, expected] of [
      ['1,000 identical cold requests', bursts.identical, 1],
      ['1,000 cold requests over 100 keys', bursts.distinct, 100],
    ] as const) {
      const all200 = (b.statuses['200'] ?? 0) === b.requests;
      const fair = b.answeredBeforeRelease === 0;
      out.push({
        scenario: '2. cold bursts',
        figure: `${name}: upstream calls`,
        value: `${b.callRead + b.otherUpstream}`,
        reference: `${expected} (keys)`,
        ratio: x((b.callRead + b.otherUpstream) / expected),
        target: `= ${expected}, all 200`,
        status: mark(b.callRead + b.otherUpstream === expected && all200 && fair),
      });
    }
  }
  if (miss !== undefined) {
    out.push({
      scenario: '3. miss overhead',
      figure: `miss latency − upstream latency, median (upstream ${miss.upstreamDelayMs} ms)`,
      value: ms(miss.overheadMs),
      reference: ms(miss.upstreamMs.p50),
      ratio: x(miss.gatewayMs.p50 / miss.upstreamMs.p50),
      target: '≤ 2 ms',
      status: mark(miss.overheadMs <= 2),
    });
  }
  if (miss !== undefined) {
    const scenario = '3. miss overhead';
    const pool = miss.pool;
    if (pool === undefined || 'absent' in pool) {
      out.push({
        scenario,
        figure: 'pool of three healthy upstreams: added miss overhead',
        value: '—',
        reference: '—',
        ratio: '—',
        target: '≤ 0.2 ms',
        status: pool === undefined ? '—' : 'n/a (no upstream lists)',
      });
    } else {
      out.push({
        scenario,
        figure: 'pool of three healthy upstreams: added miss overhead (pool − one, per-iteration median)',
        value: ms(pool.addedMs, 3),
        reference: `${ms(miss.overheadMs)} (one upstream's overhead)`,
        ratio: x(pool.gatewayMs.p50 / miss.gatewayMs.p50),
        target: '≤ 0.2 ms',
        status: mark(pool.addedMs <= 0.2),
      });
    }
  }
  if (hedging !== undefined) {
    const scenario = '3b. two upstreams, the preferred one 2 s slow';
    if ('absent' in hedging) {
      out.push({
        scenario,
        figure: 'miss p50 / p99 with and without UPSTREAM_HEDGE_MS',
        value: '—',
        reference: '—',
        ratio: '—',
        target: 'info',
        status: 'n/a (no upstream lists)',
      });
    } else {
      for (const [name, f] of [
        ['without hedging', hedging.withoutHedging],
        [`UPSTREAM_HEDGE_MS=${hedging.hedgeMs}`, hedging.withHedging],
      ] as const) {
        out.push({
          scenario,
          figure: `${name}: miss p50 (${f.misses} misses)`,
          value: ms(f.p50),
          reference: `${ms(hedging.fastNodeMs.p50)} (fast node)`,
          ratio: x(f.p50Ratio),
          target: 'info',
          status: '—',
        });
        out.push({
          scenario,
          figure: `${name}: miss p99 (${f.misses} misses)`,
          value: ms(f.p99),
          reference: `${ms(hedging.fastNodeMs.p50)} (fast node)`,
          ratio: x(f.p99Ratio),
          target: 'info',
          status: '—',
        });
      }
    }
  }
  if (scale !== undefined && scale.length > 0) {
    const base = scale[0]!;
    for (const s of scale) {
      const scenario = '4. scale (SQLite + 10k hot tier)';
      const label = s.entries >= 1_000_000 ? `${s.entries / 1_000_000}M` : `${s.entries / 1000}k`;
      const isMillion = s.entries === 1_000_000;
      out.push({
        scenario,
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
        scenario,
        figure: `${label} entries: hit p99, saturated (${int(s.rps)} req/s)`,
        value: ms(s.p99, 3),
        reference: `${ms(base.p99, 3)} (10k)`,
        ratio: x(p99Ratio),
        target: s === base ? '—' : '≤ 2.00×',
        status: s === base ? '—' : mark(p99Ratio <= 2),
      });
      const serial = s.serial;
      const baseSerial = base.serial;
      if (serial !== undefined && baseSerial !== undefined) {
        const serialRatio = serial.p99 / baseSerial.p99;
        out.push({
          scenario,
          figure: `${label} entries: hit p99, ${serial.connections} connection (${int(serial.rps)} req/s)`,
          value: ms(serial.p99, 3),
          reference: `${ms(baseSerial.p99, 3)} (10k)`,
          ratio: x(serialRatio),
          target: s === base ? '—' : '≤ 2.00×',
          status: s === base ? '—' : mark(serialRatio <= 2),
        });
      }
    }
  }
  if (startup !== undefined) {
    out.push({
      scenario: '5. start-up',
      figure: `spawn → first 200, median of ${startup.runs}`,
      value: ms(startup.gatewayMs.median, 0),
      reference: `${ms(startup.nodeEmptyMs.median, 0)} (node -e "")`,
      ratio: x(startup.gatewayMs.median / startup.nodeEmptyMs.median),
      target: '≤ 1000 ms',
      status: mark(startup.gatewayMs.median <= 1000),
    });
    if (startup.unbundledMs !== undefined) {
      out.push({
        scenario: '5. start-up',
        figure: `unbundled tsc output (dist/src/main.js), median of ${startup.runs}`,
        value: ms(startup.unbundledMs.median, 0),
        reference: `${ms(startup.nodeEmptyMs.median, 0)} (node -e "")`,
        ratio: x(startup.unbundledMs.median / startup.nodeEmptyMs.median),
        target: 'info',
        status: '—',
      });
    }
  }
  return out;
}

type Hits = NonNullable<RunRecord['results']['hits']>;

/** maxBlocks hit, node-compatible hit and batch (docs/freshness.md, docs/node-routes.md, docs/batch.md), or n/a rows. */
function featureRows(hits: Hits): Row[] {
  const scenario = '1b. hits of the newer routes, 64 connections';
  const plain = hits.readOnly.gateway;
  const bare = hits.readOnly.reference;
  const out: Row[] = [];
  const absentRow = (figure: string, target: string): Row => ({
    scenario,
    figure,
    value: '—',
    reference: '—',
    ratio: '—',
    target,
    status: NA,
  });
  const mb = hits.maxBlocks;
  if (mb === undefined || 'absent' in mb)
    out.push(absentRow('hit with cacheControl.maxBlocks: 1000: throughput', '≥ 0.90× plain hit'));
  else {
    out.push(
      {
        scenario,
        figure: 'hit with cacheControl.maxBlocks: 1000: throughput',
        value: `${int(mb.gateway.rps)} req/s`,
        reference: `${int(plain.rps)} req/s (plain hit)`,
        ratio: x(pairedRatio(mb.gateway, plain, RPS)),
        target: '≥ 0.90× plain hit',
        status: mark(pairedRatio(mb.gateway, plain, RPS) >= 0.9),
        loadCpu: cpuPair(mb.gateway, plain),
      },
      {
        scenario,
        figure: 'hit with cacheControl.maxBlocks: 1000: throughput vs bare',
        value: `${int(mb.gateway.rps)} req/s`,
        reference: `${int(bare.rps)} req/s (bare)`,
        ratio: x(pairedRatio(mb.gateway, bare, RPS)),
        target: 'info',
        status: '—',
        loadCpu: cpuPair(mb.gateway, bare),
      },
    );
  }
  const nc = hits.nodeCompat;
  if (nc === undefined || 'absent' in nc)
    out.push(
      absentRow('node-compatible hit (POST /v2/contracts/call-read/…): throughput', '≥ 0.90× plain hit'),
    );
  else {
    out.push(
      {
        scenario,
        figure: 'node-compatible hit (POST /v2/contracts/call-read/…): throughput',
        value: `${int(nc.gateway.rps)} req/s`,
        reference: `${int(plain.rps)} req/s (plain hit)`,
        ratio: x(pairedRatio(nc.gateway, plain, RPS)),
        target: '≥ 0.90× plain hit',
        status: mark(pairedRatio(nc.gateway, plain, RPS) >= 0.9),
        loadCpu: cpuPair(nc.gateway, plain),
      },
      {
        scenario,
        figure: 'node-compatible hit: throughput vs bare answering its bytes',
        value: `${int(nc.gateway.rps)} req/s`,
        reference: `${int(nc.reference.rps)} req/s (bare)`,
        ratio: x(pairedRatio(nc.gateway, nc.reference, RPS)),
        target: 'info',
        status: '—',
        loadCpu: cpuPair(nc.gateway, nc.reference),
      },
    );
  }
  const b = hits.batch;
  if (b === undefined || 'absent' in b) {
    out.push(
      absentRow('batch of 20 cached calls: items/s', '≥ 0.90× plain hit'),
      absentRow('batch of 20 vs 20 singles, one keep-alive connection: time', '≤ 0.30×'),
    );
  } else {
    const items = b.gateway.rps * b.size;
    const serialRatio = pairedRatio(b.serial.batch, b.serial.singles, P50, 1 / b.size);
    out.push(
      {
        scenario,
        figure: `batch of ${b.size} cached calls: items/s (${int(b.gateway.rps)} batches/s)`,
        value: `${int(items)} items/s`,
        reference: `${int(plain.rps)} req/s (plain hit)`,
        ratio: x(pairedRatio(b.gateway, plain, RPS, b.size)),
        target: '≥ 0.90× plain hit',
        status: mark(pairedRatio(b.gateway, plain, RPS, b.size) >= 0.9),
        loadCpu: cpuPair(b.gateway, plain),
      },
      {
        scenario,
        figure: `batch of ${b.size}: throughput vs bare answering its ${b.responseBytes} bytes`,
        value: `${int(b.gateway.rps)} req/s`,
        reference: `${int(b.reference.rps)} req/s (bare)`,
        ratio: x(pairedRatio(b.gateway, b.reference, RPS)),
        target: 'info',
        status: '—',
        loadCpu: cpuPair(b.gateway, b.reference),
      },
      {
        scenario,
        figure: `batch of ${b.size} vs ${b.size} singles, one keep-alive connection: time (p50)`,
        value: ms(b.serial.batch.p50, 3),
        reference: `${ms(b.size * b.serial.singles.p50, 3)} (${b.size} × ${ms(b.serial.singles.p50, 3)})`,
        ratio: x(serialRatio),
        target: '≤ 0.30×',
        status: mark(serialRatio <= 0.3),
        loadCpu: cpuPair(b.serial.batch, b.serial.singles),
      },
    );
  }
  return out;
}

const perRound = (g: readonly { rps: number }[], r: readonly { rps: number }[]): string =>
  g.map((round, i) => (r[i] === undefined ? '—' : x(round.rps / r[i]!.rps))).join(' / ');

/** How the 1b figures are taken, or which routes were absent. */
function featureText(hits: Hits): string[] {
  const absent = [
    ['maxBlocks hit', hits.maxBlocks],
    ['node-compatible hit', hits.nodeCompat],
    ['batch', hits.batch],
  ]
    .filter(([, f]) => f === undefined || (typeof f === 'object' && 'absent' in f))
    .map(([n]) => n);
  return [
    '**1b. Hits of the newer routes** (measured only when a probe shows the route answers, else',
    '"n/a (route absent)"): the read-only hit with `"cacheControl":{"maxBlocks":1000}` (docs/freshness.md;',
    'the probe checks its second answer is a hit), `POST /v2/contracts/call-read/…/get-info` with the',
    "node's body `{sender, arguments: []}` (docs/node-routes.md), and `POST /contract-calls/batch` with 20 distinct `get-entry`",
    'calls cached beforehand through the single endpoint (section 4; the probe checks every item is a hit). They',
    'run in the same rounds as the plain hit, alternating with it and with the bare reference answering the same',
    'bytes. Batch against singles: one keep-alive connection (`wrk -c1`), batches of 20 against the same 20 calls',
    'sent one per request, alternating; figure: batch p50 / (20 × single p50).',
    ...(absent.length > 0 ? [`Absent in this gateway: ${absent.join(', ')}.`] : []),
    ...[
      ['maxBlocks hit', hits.maxBlocks],
      ['node-compatible hit', hits.nodeCompat],
      ['batch', hits.batch],
    ].flatMap(([n, f]) =>
      typeof f === 'object' && f !== null && 'upstreamCalls' in f
        ? [`Upstream calls while the ${n} was under load: ${f.upstreamCalls} (0 = every answer a hit).`]
        : [],
    ),
    '',
  ];
}

const loadCpu = (rounds: readonly { loadGeneratorCpuPct: number }[]): string =>
  rounds.map((r) => `${r.loadGeneratorCpuPct} %`).join(' / ');

function table(rs: Row[]): string {
  return [
    '| scenario | figure | gateway | reference (same run) | ratio | target | status | wrk CPU (gateway / ref runs) |',
    '| --- | --- | ---: | ---: | ---: | --- | --- | ---: |',
    ...rs.map(
      (r) =>
        `| ${r.scenario} | ${r.figure} | ${r.value} | ${r.reference} | ${r.ratio} | ${r.target} | ${r.status} | ${r.loadCpu ?? '—'} |`,
    ),
  ].join('\n');
}

/** Key figures of a run, for the before/after table. */
function keyFigures(run: RunRecord): Record<string, string> {
  const f: Record<string, string> = {};
  const { hits, miss, scale, startup } = run.results;
  if (hits !== undefined) {
    const ro = hits.readOnly;
    const dec = hits.decode;
    f['read-only hit req/s (× bare)'] = `${int(ro.gateway.rps)} (${x(ro.gateway.rps / ro.reference.rps)})`;
    f['read-only hit p99 (× bare)'] = `${ms(ro.gateway.p99, 3)} (${x(ro.gateway.p99 / ro.reference.p99)})`;
    f['read-only hit CPU/request (× bare)'] =
      `${ro.gateway.cpuUsPerRequest.toFixed(0)} µs (${x(ro.gateway.cpuUsPerRequest / ro.reference.cpuUsPerRequest)})`;
    if (ro.fastifyFloor !== undefined) {
      f['Fastify floor req/s, CPU/request (× bare)'] =
        `${int(ro.fastifyFloor.rps)} (${x(ro.fastifyFloor.rps / ro.reference.rps)}), ` +
        `${ro.fastifyFloor.cpuUsPerRequest.toFixed(0)} µs (${x(ro.fastifyFloor.cpuUsPerRequest / ro.reference.cpuUsPerRequest)})`;
    }
    f['decode req/s (× bare)'] = `${int(dec.gateway.rps)} (${x(dec.gateway.rps / dec.reference.rps)})`;
    f['decode p99 (× bare)'] = `${ms(dec.gateway.p99, 3)} (${x(dec.gateway.p99 / dec.reference.p99)})`;
  }
  if (miss !== undefined) f['miss overhead, median'] = ms(miss.overheadMs);
  if (scale !== undefined) {
    const base = scale[0];
    for (const s of scale) {
      if (base === undefined) break;
      f[`${s.entries.toLocaleString('en-US')} entries: RSS / hit p99 saturated (× 10k)`] =
        `${s.memory.rssMiB.toFixed(0)} MiB / ${ms(s.p99, 3)} (${x(s.p99 / base.p99)})`;
      if (s.serial !== undefined && base.serial !== undefined) {
        f[`${s.entries.toLocaleString('en-US')} entries: hit p99, 1 connection (× 10k)`] =
          `${ms(s.serial.p99, 3)} (${x(s.serial.p99 / base.serial.p99)})`;
      }
    }
  }
  if (startup !== undefined) f['start-up, median'] = ms(startup.gatewayMs.median, 0);
  return f;
}

function beforeAfter(before: RunRecord, after: RunRecord): string {
  const b = keyFigures(before);
  const a = keyFigures(after);
  const names = [...new Set([...Object.keys(b), ...Object.keys(a)])];
  return [
    `Before: the baseline run of ${before.startedAt} (commit ${before.commit},`,
    `\`node ${before.gatewayEntry ?? 'dist/src/main.js'}\`), kept in`,
    '`bench/results/baseline.json`. After: this run. Different runs, so compare the ratios (each taken',
    'against a reference measured in its own run) rather than the absolute figures.',
    '',
    '| figure | before | after |',
    '| --- | ---: | ---: |',
    ...names.map((n) => `| ${n} | ${b[n] ?? '—'} | ${a[n] ?? '—'} |`),
  ].join('\n');
}

export function markdown(
  run: RunRecord,
  baseline: RunRecord | undefined,
  profileMd: string | undefined,
): string {
  const m = run.machine;
  const s = run.settings;
  const { hits, bursts, miss, scale, startup, hedging } = run.results;
  const entry = run.gatewayEntry ?? 'dist/src/main.js';
  const lines: string[] = [
    '# Benchmarks',
    '',
    'Generated by `npm run bench` (bench/run.ts); do not edit by hand. Raw figures:',
    '`bench/results/latest.json`. These machines are shared and noisy, so every figure is measured',
    'next to a reference in the same run and the ratios are what the targets apply to.',
    '',
    '## Run',
    '',
    `- Command: \`${[run.command, ...(run.args.length > 0 ? ['--', ...run.args] : [])].join(' ')}\``,
    '  (= `npm run build && node --import tsx bench/run.ts`)',
    `- Date: ${run.startedAt}; took ${run.elapsedS} s (plus the build)`,
    `- Commit: ${run.commit}`,
    `- Machine: ${m.nproc} CPUs (${m.cpu}), ${m.memoryGiB} GiB RAM, ${m.os}, Node ${m.node};`,
    `  load average at start ${m.loadAverageAtStart.join(' / ')}`,
    '- Set-up: wrk from Debian (`apt-get install -y wrk`; `WRK=<path>` selects another binary), Node and',
    '  `npm ci`; nothing else is downloaded.',
    `- Load: wrk (Debian package \`wrk\`, /usr/bin/wrk) \`-t1 -c${s.connections}\`, ${s.warmupS} s warm-up run then ${s.durationS} s measured run,`,
    "  the POST body set by a Lua script (bench/load.ts), which also reports wrk's own CPU time from /proc/self/stat",
    "  (the last column of the table: median % of one core in the gateway's runs / in the reference's runs;",
    '  near 100 % the load generator would be the limit). The throughput figures are ratios against the bare',
    '  node:http reference answering the same bytes, measured alternately in the same run (medians of rounds).',
    `  The gateway (\`node ${entry}\`, what \`npm start\` runs; CACHE_STORE=sqlite,`,
    '  LOG_LEVEL=warn), the bare reference server, the fake Stacks node and every load generator each',
    '  run in their own process, on 127.0.0.1.',
    '',
    '## Figures',
    '',
    table(rows(run)),
    '',
    '## How each figure is taken',
    '',
  ];
  if (hits !== undefined) {
    lines.push(
      '**1. Cache hits.** `POST /contract-calls/read-only/SP3K…/demo/get-info` with `{"functionArgs":[]}`',
      `(a ${hits.responseBytes.readOnly}-byte answer: the decoded 10-field tuple of test/support/fixtures.ts, served`,
      'from the hot tier after one warm-up miss) and `POST /contract-calls/decode-clarity-value` with the same',
      `tuple as hex (${hits.responseBytes.decode}-byte answer). The reference is bench/reference-server.ts: bare`,
      '`node:http` that reads and `JSON.parse`s the body and answers the very bytes the gateway answered.',
      `${s.hitRounds} rounds, gateway and reference alternating who goes first; each figure is the median of`,
      "its rounds, and each ratio the median of the per-round ratios (a round's gateway run against the",
      'reference run next to it), so that a disturbed stretch of the shared machine skews one pair, not the ratio.',
      "Latencies are wrk's (its histogram keeps microseconds). Server CPU per request is the server",
      "process's user + system time (/proc/<pid>/stat) over the measured run divided by its answers: it",
      'depends far less on what else the shared machine is doing than throughput does. The load generator',
      `used ${loadCpu(hits.readOnly.reference.rounds)} of a core against the bare server and`,
      `${loadCpu(hits.readOnly.gateway.rounds)} against the gateway (read-only; near 100 % it is itself the limit`,
      'and the throughput ratio understates the gap to the Node ceiling).',
      `Throughput ratio of each round (gateway / reference of the same round): read-only ${perRound(hits.readOnly.gateway.rounds, hits.readOnly.reference.rounds)};`,
      `decode ${perRound(hits.decode.gateway.rounds, hits.decode.reference.rounds)}. The spread shows how much the shared machine moved during the run.`,
      'The Fastify floor (bench/fastify-floor.ts, read-only path only) is Fastify 5 set up as the gateway is',
      '(pino at `warn`, so a child logger per request; UUID request ids; the same route pattern) answering the',
      'same bytes with no gateway work at all: the best a gateway built on this framework set-up can do.',
      `Upstream calls during the whole scenario: ${hits.upstreamCalls} (${hits.warmUpstreamCalls ?? '?'} of them warming up, before any load). Gateway RSS`,
      `after it: ${hits.gatewayMemory.rssMiB} MiB.`,
      '',
      ...featureText(hits),
    );
  }
  if (bursts !== undefined) {
    const d = (b: typeof bursts.identical): string =>
      `${b.callRead} call-read + ${b.otherUpstream} other upstream requests; statuses ${JSON.stringify(b.statuses)};` +
      ` ${b.heldAtUpstream} held at the node when released; ${b.answeredBeforeRelease} answered before release;` +
      ` ${b.wallMs} ms`;
    lines.push(
      `**2. Cold bursts.** ${s.burst} \`POST …/get-entry\` requests, each on a connection of its own, fired`,
      'at once while the fake node holds every call-read (its gate). Once every request is written and at',
      'least one call reached the node, one more quiet second lets the gateway read them all, then the gate',
      "opens and the node's counters are read after the last answer. The ABI is cached before (its fetch is",
      'not part of the count); UPSTREAM_TIMEOUT_MS=60000 so that the held call is not retried. The gateway',
      'pools 16 upstream connections, so in the 100-key burst at most 16 calls are held at once.',
      '',
      `- identical: ${d(bursts.identical)}`,
      `- 100 keys: ${d(bursts.distinct)}`,
      '',
    );
  }
  if (miss !== undefined) {
    lines.push(
      `**3. Miss overhead.** The fake node delays every call-read by ${miss.upstreamDelayMs} ms. ${miss.pairs} pairs`,
      '(after 10 unmeasured), one request at a time over one keep-alive connection each: a gateway miss',
      '(`get-entry` with a fresh argument, the ABI already cached) and the same call-read sent straight to the',
      'fake node, alternating which goes first. Figure: median(gateway) − median(upstream).',
      `Gateway p50/p90 ${ms(miss.gatewayMs.p50)} / ${ms(miss.gatewayMs.p90)}; upstream p50/p90`,
      `${ms(miss.upstreamMs.p50)} / ${ms(miss.upstreamMs.p90)}; per-pair difference p50/p90`,
      `${ms(miss.pairedOverheadMs.p50)} / ${ms(miss.pairedOverheadMs.p90)}. Call-reads at the node:`,
      `${miss.callRead} (one per miss and one per direct call).`,
      '',
      miss.pool === undefined || 'absent' in miss.pool
        ? `Pool of three: ${miss.pool === undefined ? 'not measured' : `n/a: ${miss.pool.absent}`}.`
        : `Pool of three: a second gateway with STACKS_API_URL_MAINNET listing this node and two more fake nodes, each ` +
            `delaying call-reads by ${miss.upstreamDelayMs} ms, measured in the same loop (triples: one-upstream miss, pool miss, ` +
            `direct call, rotating who goes first). Pool p50/p90 ${ms(miss.pool.gatewayMs.p50)} / ${ms(miss.pool.gatewayMs.p90)}, ` +
            `overhead over the direct median ${ms(miss.pool.overheadMs)}; per-iteration pool − one p50 ${ms(miss.pool.addedMs, 3)}. ` +
            `Call-reads per node: ${miss.pool.callReadPerNode.join(' / ')}.`,
      '',
    );
  }
  if (hedging !== undefined) {
    lines.push(
      'absent' in hedging
        ? `**3b. Two upstreams, one slow.** n/a: ${hedging.absent}.`
        : [
            `**3b. Two upstreams, one slow.** Two more fake nodes: the first of the list answers every call-read after`,
            `${hedging.slowMs} ms, the second after ${s.upstreamDelayMs} ms. Two gateways on \`STACKS_API_URL_MAINNET=<slow>,<fast>\`,`,
            `one without hedging and one with UPSTREAM_HEDGE_MS=${hedging.hedgeMs}; sequential misses (fresh arguments, ABI cached),`,
            `alternating with direct calls to the fast node, whose median (${ms(hedging.fastNodeMs.p50)}) is the reference.`,
            `${hedging.withoutHedging.misses} misses without hedging (each may take ${hedging.slowMs / 1000} s), ${hedging.withHedging.misses} with; with so few`,
            'samples the p99 is the slowest miss. Call-reads at the slow / fast node:',
            `${hedging.callReads.slow} / ${hedging.callReads.fast}.`,
          ].join('\n'),
      '',
    );
  }
  if (scale !== undefined) {
    lines.push(
      '**4. Scale.** Three SQLite files, seeded directly (better-sqlite3, one transaction per 100k rows)',
      'with 10k, 100k and 1M rows whose keys are built by src/cache/keys.ts exactly as the gateway builds',
      'them for `get-entry(u<id>)`, each holding the real tuple result hex; one gateway per file (default',
      'hot tier, HOT_CACHE_MAX_ENTRIES=10000), all three running, taking turns for the load round after',
      `round (${s.scaleRounds ?? s.hitRounds} rounds, order reversed every other round; medians). Load: the same 64`,
      'connections, every request for a uniformly random id of the seeded range (bench/load.ts builds each',
      'body), so with 10k entries practically every hit comes from the hot tier, with 100k about 10 % and',
      'with 1M about 1 %: the rest are SQLite reads (then promoted into the hot tier, evicting others).',
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
    );
  }
  if (startup !== undefined) {
    lines.push(
      `**5. Start-up.** \`node ${entry}\` spawned with an empty DATA_DIR; from just before \`spawn()\``,
      'to the first 200 answer to a decode request, retried immediately on every refused connection.',
      `${startup.runs} runs, median. Reference: spawn to exit of \`node -e ""\`, alternating with them.`,
      `Gateway runs: ${startup.gatewayMs.all.join(', ')} ms; node -e "": ${startup.nodeEmptyMs.all.join(', ')} ms` +
        (startup.unbundledMs === undefined ? '.' : `; unbundled: ${startup.unbundledMs.all.join(', ')} ms.`),
      '',
    );
  }
  if (baseline !== undefined && baseline.startedAt !== run.startedAt) {
    lines.push('## Before and after', '', beforeAfter(baseline, run), '');
  }
  if (profileMd !== undefined) lines.push(profileMd.trim(), '');
  return `${lines.join('\n')}`;
}

function readJson(file: string): RunRecord | undefined {
  return fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as RunRecord) : undefined;
}

/** The rows of the table; with `file`, also writes the whole report there. */
export function writeReport(run: RunRecord, file: string | undefined): Row[] {
  if (file !== undefined) {
    const baseline = readJson(path.join(ROOT, 'bench/results/baseline.json'));
    const profileFile = path.join(ROOT, 'bench/results/profile.md');
    const profileMd = fs.existsSync(profileFile) ? fs.readFileSync(profileFile, 'utf8') : undefined;
    fs.writeFileSync(file, markdown(run, baseline, profileMd));
  }
  return rows(run);
}

if (process.argv[1] !== undefined && import.meta.filename === process.argv[1]) {
  const file = process.argv[2] ?? path.join(ROOT, 'bench/results/latest.json');
  const run = readJson(file);
  if (run === undefined) throw new Error(`${file} does not exist`);
  writeReport(run, path.join(ROOT, 'BENCHMARKS.md'));
}
