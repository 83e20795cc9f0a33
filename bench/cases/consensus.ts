/**
 * consensus: what attested answers (UPSTREAM_CONSENSUS_MAINNET=k/n, docs/consensus.md) cost. Two
 * gateways in one run: (a) on one stand-in node (bench/fake-node-process.ts), (b) on three equal
 * stand-ins (the same node as (a) and two more: same answers, same chain, every endpoint delayed
 * by the same 20 ms) with UPSTREAM_CONSENSUS_MAINNET=2/3. Misses: wrk -t1 at a few connections
 * (4, so that the upstream's latency dominates and neither gateway runs out of CPU; every request
 * `get-entry` with a random argument out of 10^9, so a miss), 2 s warm-up then 8 s, five rounds
 * alternating which gateway goes first (quick: one round of 1 s + 3 s); the stand-ins count the
 * call-reads each measured run sent, and those that named a block (`?tip=`, as a vote's do).
 * Hits: one hot key on both gateways, wrk -t1 -c64, five alternating rounds. Each ratio is the
 * median of the per-round ratios (b against the (a) round next to it). Gateway: what `npm start`
 * runs (package.json "main", or GATEWAY=<file>), SQLite store, LOG_LEVEL=warn, every upstream's
 * budget 1,000,000 a minute (never the limit). Goals: an attested miss's p50 ≤ 1.2× a
 * single-upstream miss's; hit throughput unchanged (≥ 0.95×).
 *
 *   npm run build && node --import tsx bench/cases/consensus.ts
 *
 * CONSENSUS_MISS_CONNECTIONS=<n> changes the miss load's connections (default 4).
 */
import type { LoadResult } from '../load.js';
import {
  ABI_PATH,
  type BenchCase,
  cpuMsOf,
  cpuOf,
  DURATION_S,
  ENTRY_PATH,
  entryBody,
  expectOk,
  type FakeNodeProc,
  freshDir,
  gateway,
  int,
  load,
  log,
  type Measured,
  mark,
  measure,
  median,
  medianRound,
  ms,
  type PickFigure,
  pairedRatio,
  QUICK,
  RO_BODY,
  RO_PATH,
  type Row,
  round,
  runLoad,
  runStandalone,
  type Server,
  sleep,
  startFakeNodeProcess,
  WARMUP_S,
  x,
} from '../support.js';

const ROUNDS = QUICK ? 1 : 5;
const UPSTREAM_DELAY_MS = 20;
const CONSENSUS = '2/3';
const MISS_CONNECTIONS = Number(process.env.CONSENSUS_MISS_CONNECTIONS ?? 4);
const MISS_GOAL = 1.2;
const HIT_GOAL = 0.95;
const IDLE_S = QUICK ? 2 : 5;
/** `get-entry(u<random in [0, 10^9)>)`: wrk builds each body; a repeat within a run is unlikely (~10^-3). */
const MISS_SPREAD = {
  count: 1_000_000_000,
  prefix: '{"functionArgs":[{"type":"uint","value":"',
  suffix: '"}]}',
};

const P50: PickFigure = (r) => r.latencyMs.p50;
const P99: PickFigure = (r) => r.latencyMs.p99;
const RPS: PickFigure = (r) => r.rps;
const CPU: PickFigure = (r) => r.serverCpuUsPerRequest;

/** What the stand-ins saw of one measured miss run. */
interface UpstreamTally {
  /** Call-reads at each stand-in, in the order of `nodes`. */
  readonly callReads: number[];
  /** Of those, the ones that named a block (`?tip=`). */
  readonly pinned: number[];
  /** `GET /v2/info` at each stand-in. */
  readonly info: number[];
  /** All call-reads over the answered requests. */
  readonly callReadsPerRequest: number;
}

interface MissRound extends Measured {
  readonly upstream: UpstreamTally;
}

const sum = (v: readonly number[]): number => v.reduce((a, b) => a + b, 0);

function checked(url: string, r: LoadResult): LoadResult {
  if (r.non2xx > 0 || r.errors > 0) {
    throw new Error(`${url}: ${r.non2xx} non-2xx answers and ${r.errors} errors under load`);
  }
  return r;
}

/** A miss run: unmeasured warm-up, the stand-ins' tallies reset, then the measured run. */
async function missRound(server: Server, nodes: readonly FakeNodeProc[]): Promise<MissRound> {
  const url = `${server.url}${ENTRY_PATH}`;
  const spec = load(url, '', { connections: MISS_CONNECTIONS, spread: MISS_SPREAD });
  if (spec.warmupSeconds > 0) {
    checked(url, await runLoad({ ...spec, durationSeconds: spec.warmupSeconds, warmupSeconds: 0 }));
  }
  await Promise.all(nodes.map((n) => n.call({ cmd: 'resetStats' })));
  const cpu0 = cpuMsOf(server.proc.pid);
  const result = checked(url, await runLoad({ ...spec, warmupSeconds: 0 }));
  const cpuMs = cpuMsOf(server.proc.pid) - cpu0;
  const callReads = await Promise.all(nodes.map((n) => n.count('call-read')));
  const pinned = await Promise.all(nodes.map(async (n) => (await n.call({ cmd: 'countPinned' })) as number));
  const info = await Promise.all(
    nodes.map(async (n) => (await n.call({ cmd: 'count', kind: 'info' })) as number),
  );
  return {
    ...result,
    serverCpuUsPerRequest: round((cpuMs * 1000) / Math.max(1, result.ok + result.non2xx), 1),
    serverCpuPct: Math.round((cpuMs / (result.durationSeconds * 1000)) * 100),
    upstream: {
      callReads,
      pinned,
      info,
      callReadsPerRequest: round(sum(callReads) / Math.max(1, result.ok), 3),
    },
  };
}

/** One POST with its headers (fetch: the probes only). */
async function post(url: string, body: string) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  const headers: Record<string, string> = {};
  res.headers.forEach((v, k) => {
    if (/^(cache-status|x-|age)/.test(k)) headers[k] = v;
  });
  return { status: res.status, body: await res.text(), headers };
}

async function consensusCase() {
  const nodes = [await startFakeNodeProcess(), await startFakeNodeProcess(), await startFakeNodeProcess()];
  const gateways: Server[] = [];
  try {
    const single = await gateway(nodes[0]!.url, freshDir('consensus-single'));
    gateways.push(single);
    const attested = await gateway(nodes.map((n) => n.url).join(','), freshDir('consensus-attested'), {
      UPSTREAM_CONSENSUS_MAINNET: CONSENSUS,
    });
    gateways.push(attested);
    for (const g of gateways) await expectOk(`${g.url}${ABI_PATH}`);
    // Every endpoint of every stand-in as slow as the others (call-read, /v2/info, …).
    for (const n of nodes) await n.call({ cmd: 'delay', ms: UPSTREAM_DELAY_MS });

    // One miss on each, the same call: the same bytes; what the stand-ins saw of the attested one.
    const probeBody = entryBody(999_999_999_999n);
    const a = await post(`${single.url}${ENTRY_PATH}`, probeBody);
    await Promise.all(nodes.map((n) => n.call({ cmd: 'resetStats' })));
    const b = await post(`${attested.url}${ENTRY_PATH}`, probeBody);
    const probeCalls = await Promise.all(nodes.map((n) => n.count('call-read')));
    const probePinned = await Promise.all(
      nodes.map(async (n) => (await n.call({ cmd: 'countPinned' })) as number),
    );
    if (a.status !== 200 || b.status !== 200) {
      throw new Error(
        `probe miss: HTTP ${a.status} / ${b.status}: ${a.body.slice(0, 300)} / ${b.body.slice(0, 300)}`,
      );
    }
    const sameBytes = a.body === b.body;
    const bAgain = await post(`${attested.url}${ENTRY_PATH}`, probeBody);
    const probe = {
      sameBytes,
      single: a.headers,
      attested: b.headers,
      attestedRepeat: bAgain.headers,
      attestedCallReadsPerNode: probeCalls,
      attestedPinnedPerNode: probePinned,
      ...(sameBytes ? {} : { singleBody: a.body.slice(0, 500), attestedBody: b.body.slice(0, 500) }),
    };
    log(
      `consensus: probe miss: same bytes ${sameBytes}; attested call-reads per node ${probeCalls.join('/')}, pinned ${probePinned.join('/')}`,
    );

    const misses: { single: MissRound[]; attested: MissRound[] } = { single: [], attested: [] };
    log(
      `consensus: ${ROUNDS} rounds of misses (wrk -c${MISS_CONNECTIONS}, ${WARMUP_S} s + ${DURATION_S} s), one upstream against ${CONSENSUS} of three, alternating`,
    );
    for (let i = 0; i < ROUNDS; i++) {
      const order = i % 2 === 0 ? (['single', 'attested'] as const) : (['attested', 'single'] as const);
      for (const which of order) {
        const r = await missRound(which === 'single' ? single : attested, nodes);
        misses[which].push(r);
        log(
          `  round ${i + 1} ${which}: p50 ${ms(r.latencyMs.p50)}, p90 ${ms(r.latencyMs.p90)}, ${int(r.rps)} req/s, ${r.serverCpuUsPerRequest} µs CPU/req, call-reads/req ${r.upstream.callReadsPerRequest} (pinned ${sum(r.upstream.pinned)})`,
        );
      }
    }

    // Hits: the same hot key, stored once on each (a miss), then measured at 64 connections.
    await Promise.all(nodes.map((n) => n.call({ cmd: 'resetStats' })));
    const roSingle = await expectOk(`${single.url}${RO_PATH}`, RO_BODY);
    const roAttested = await expectOk(`${attested.url}${RO_PATH}`, RO_BODY);
    if (roSingle !== roAttested) throw new Error('the hot key answers differ between the two gateways');
    const hitSample = await post(`${attested.url}${RO_PATH}`, RO_BODY);
    const fillCalls = sum(await Promise.all(nodes.map((n) => n.count('call-read'))));
    // Idle CPU of each (no request, both at once): background work would show in the hits.
    const idle0 = gateways.map((g) => cpuMsOf(g.proc.pid));
    await sleep(IDLE_S * 1000);
    const idleCpuPct = gateways.map((g, i) =>
      round(((cpuMsOf(g.proc.pid) - idle0[i]!) / (IDLE_S * 1000)) * 100, 1),
    );
    log(
      `consensus: idle CPU over ${IDLE_S} s: one upstream ${idleCpuPct[0]} %, ${CONSENSUS} ${idleCpuPct[1]} %`,
    );
    const hits: { single: Measured[]; attested: Measured[] } = { single: [], attested: [] };
    log(`consensus: ${ROUNDS} rounds of hits (wrk -c64), alternating`);
    for (let i = 0; i < ROUNDS; i++) {
      const order = i % 2 === 0 ? (['single', 'attested'] as const) : (['attested', 'single'] as const);
      for (const which of order) {
        const g = which === 'single' ? single : attested;
        const r = await measure(g, `${g.url}${RO_PATH}`, RO_BODY);
        hits[which].push(r);
        log(`  round ${i + 1} ${which}: ${int(r.rps)} req/s, p99 ${ms(r.latencyMs.p99)}`);
      }
    }
    const hitCalls = sum(await Promise.all(nodes.map((n) => n.count('call-read')))) - fillCalls;

    const attestedPinned = sum(misses.attested.map((r) => sum(r.upstream.pinned)));
    const attestedCalls = sum(misses.attested.map((r) => sum(r.upstream.callReads)));
    return {
      probe,
      misses,
      hits,
      /** Call-reads at the stand-ins to store the hot key on both gateways, and during the hit rounds (should be 0). */
      /** % of one core with no request, one upstream / the 2/3 gateway. */
      idleCpuPct: { single: idleCpuPct[0]!, attested: idleCpuPct[1]! },
      hitUpstream: { fillCallReads: fillCalls, duringHits: hitCalls, attestedHitHeaders: hitSample.headers },
      /** Whether the attested gateway voted: its call-reads named a block and more than one stand-in answered each miss. */
      voting:
        attestedCalls > 0 &&
        attestedPinned / attestedCalls > 0.99 &&
        median(misses.attested.map((r) => r.upstream.callReadsPerRequest)) >= 1.9,
    };
  } finally {
    for (const g of gateways) await g.proc.stop();
    for (const n of nodes) await n.stop();
  }
}

type Consensus = Awaited<ReturnType<typeof consensusCase>>;

const figures = (rounds: Measured[]) => {
  const m = medianRound(rounds);
  return { ...m, p90: median(rounds.map((r) => r.latencyMs.p90)) };
};

function rows(c: Consensus): Row[] {
  const ma = figures(c.misses.single);
  const mb = figures(c.misses.attested);
  const ha = medianRound(c.hits.single);
  const hb = medianRound(c.hits.attested);
  const missRatio = pairedRatio(mb, ma, P50);
  const hitRatio = pairedRatio(hb, ha, RPS);
  const notVoting = c.voting ? undefined : 'n/a (the 2/3 gateway did not vote: see notes)';
  const perReq = (r: MissRound[]) => median(r.map((v) => v.upstream.callReadsPerRequest)).toFixed(2);
  const missCpu = `${cpuOf(mb)} / ${cpuOf(ma)}`;
  const hitCpu = `${cpuOf(hb)} / ${cpuOf(ha)}`;
  return [
    {
      figure: `attested miss (${CONSENSUS}, three ${UPSTREAM_DELAY_MS} ms stand-ins) p50 against a one-upstream miss, wrk -c${MISS_CONNECTIONS}`,
      value: ms(mb.p50),
      reference: ms(ma.p50),
      ratio: x(missRatio),
      target: `≤ ${MISS_GOAL}×`,
      status: notVoting ?? mark(missRatio <= MISS_GOAL),
      loadCpu: missCpu,
    },
    {
      figure: 'attested miss p90 against a one-upstream miss',
      value: ms(mb.p90),
      reference: ms(ma.p90),
      ratio: x(median(c.misses.attested.map((r, i) => r.latencyMs.p90 / c.misses.single[i]!.latencyMs.p90))),
      target: 'info',
      status: '—',
      loadCpu: missCpu,
    },
    {
      figure: `attested miss: gateway CPU per miss (call-reads per miss ${perReq(c.misses.attested)} against ${perReq(c.misses.single)})`,
      value: `${mb.cpuUsPerRequest.toFixed(0)} µs`,
      reference: `${ma.cpuUsPerRequest.toFixed(0)} µs`,
      ratio: x(pairedRatio(mb, ma, CPU)),
      target: 'info',
      status: '—',
      loadCpu: missCpu,
    },
    {
      figure: `hit throughput, one hot key, ${CONSENSUS} gateway against one upstream (wrk -c64)`,
      value: `${int(hb.rps)} req/s`,
      reference: `${int(ha.rps)} req/s`,
      ratio: x(hitRatio),
      target: `≥ ${HIT_GOAL}× (unchanged)`,
      status: mark(hitRatio >= HIT_GOAL),
      loadCpu: hitCpu,
    },
    {
      figure: 'hit: gateway CPU per request',
      value: `${hb.cpuUsPerRequest.toFixed(1)} µs`,
      reference: `${ha.cpuUsPerRequest.toFixed(1)} µs`,
      ratio: x(pairedRatio(hb, ha, CPU)),
      target: 'info',
      status: '—',
      loadCpu: hitCpu,
    },
    {
      figure: `idle gateway CPU (${IDLE_S} s, no request)`,
      value: `${c.idleCpuPct.attested.toFixed(1)} %`,
      reference: `${c.idleCpuPct.single.toFixed(1)} %`,
      ratio: '—',
      target: 'info',
      status: '—',
    },
    {
      figure: 'hit p99',
      value: ms(hb.p99, 3),
      reference: ms(ha.p99, 3),
      ratio: x(pairedRatio(hb, ha, P99)),
      target: 'info',
      status: '—',
      loadCpu: hitCpu,
    },
  ];
}

function notes(c: Consensus): string[] {
  const line = (r: MissRound): string =>
    `${ms(r.latencyMs.p50)} (${int(r.rps)} req/s, ${r.upstream.callReadsPerRequest} call-reads/req)`;
  const pinned = (r: MissRound[]) => sum(r.map((v) => sum(v.upstream.pinned)));
  const calls = (r: MissRound[]) => sum(r.map((v) => sum(v.upstream.callReads)));
  const info = (r: MissRound[]) => sum(r.map((v) => sum(v.upstream.info)));
  return [
    `Two gateways in one run: one on a single stand-in node, one on three (that node and two more) with`,
    `\`UPSTREAM_CONSENSUS_MAINNET=${CONSENSUS}\`. The stand-ins (bench/fake-node-process.ts, one process each) answer the`,
    `same bytes on the same chain (tip height 100, \`?tip=\` answered at that block) and delay every endpoint by`,
    `${UPSTREAM_DELAY_MS} ms (\`/v2/info\` too). Every upstream's budget is 1,000,000 a minute. Misses: wrk \`-t1 -c${MISS_CONNECTIONS}\`,`,
    `\`get-entry\` with a random argument out of 10^9 per request, ${WARMUP_S} s warm-up then ${DURATION_S} s, ${c.misses.single.length} rounds alternating`,
    'which gateway goes first; ratio: median of the per-round ratios. Hits: `get-info`, stored once on each',
    `gateway, wrk \`-t1 -c64\`, the same rounds. Miss p50 per round, one upstream: ${c.misses.single.map(line).join(', ')};`,
    `${CONSENSUS}: ${c.misses.attested.map(line).join(', ')}. Call-reads naming a block (\`?tip=\`): ${pinned(c.misses.attested)} of`,
    `${calls(c.misses.attested)} from the ${CONSENSUS} gateway, ${pinned(c.misses.single)} of ${calls(c.misses.single)} from the single one;`,
    `\`/v2/info\` requests over the measured runs: ${info(c.misses.attested)} / ${info(c.misses.single)}. Hit rounds (req/s), one upstream:`,
    `${c.hits.single.map((r) => int(r.rps)).join(', ')}; ${CONSENSUS}: ${c.hits.attested.map((r) => int(r.rps)).join(', ')}; call-reads during the hit rounds:`,
    `${c.hitUpstream.duringHits}. A probe miss through both gave ${c.probe.sameBytes ? 'the same bytes' : 'DIFFERENT bytes'}; the attested one sent`,
    `${c.probe.attestedCallReadsPerNode.join(' / ')} call-reads to the three stand-ins (${c.probe.attestedPinnedPerNode.join(' / ')} pinned).`,
    ...(c.voting
      ? []
      : [
          '**The 2/3 gateway did not vote** (its call-reads did not name a block, or one stand-in answered each miss).',
        ]),
  ];
}

async function run() {
  const c = await consensusCase();
  return {
    settings: {
      rounds: ROUNDS,
      consensus: CONSENSUS,
      upstreamDelayMs: UPSTREAM_DELAY_MS,
      missConnections: MISS_CONNECTIONS,
      hitConnections: 64,
      warmupS: WARMUP_S,
      durationS: DURATION_S,
    },
    rows: rows(c),
    notes: notes(c),
    results: c,
  };
}

export const consensus: BenchCase = {
  title: `attested answers (${CONSENSUS} of three 20 ms stand-ins) against one upstream: misses and hits`,
  run,
};
runStandalone(import.meta.filename, consensus);
