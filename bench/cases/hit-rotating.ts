/**
 * hit-rotating: the read-only cache hit with three distinct request bodies in turn
 * (`get-entry(u1)`, `(u2)`, `(u3)`, a wrk Lua script cycling through them), against the bare
 * node:http reference (bench/reference-server.ts) answering each body the gateway's exact bytes,
 * both measured in the same run: wrk -t1 -c64, 2 s warm-up then 8 s, five rounds with the order
 * alternating, medians; the ratio is the median of the per-round ratios. Gateway: what `npm start`
 * runs (package.json "main"), SQLite store, LOG_LEVEL=warn. Goal: ≥ 0.85× the reference's
 * throughput (the single-body hit's goal).
 *
 *   npm run build && node --import tsx bench/cases/hit-rotating.ts
 */
import {
  type BenchCase,
  CONNECTIONS,
  cpuOf,
  DURATION_S,
  ENTRY_PATH,
  entryBody,
  expectOk,
  freshDir,
  gateway,
  int,
  log,
  type Measured,
  mark,
  measure,
  medianRound,
  ms,
  pairedRatio,
  QUICK,
  runStandalone,
  startFakeNodeProcess,
  startReference,
  WARMUP_S,
  x,
} from '../support.js';

const ROUNDS = QUICK ? 1 : 5;
const IDS = [1, 2, 3];
const GOAL = 0.85;

async function run() {
  const node = await startFakeNodeProcess();
  const gw = await gateway(node.url, freshDir('hit-rotating'));
  try {
    const bodies = IDS.map(entryBody);
    // Warm: each body's first request is a miss that stores the entry; then every one is a hit.
    const answers: Record<string, string> = {};
    for (const body of bodies) {
      await expectOk(`${gw.url}${ENTRY_PATH}`, body);
      answers[`${ENTRY_PATH}\n${body}`] = await expectOk(`${gw.url}${ENTRY_PATH}`, body);
    }
    const distinctAnswers = new Set(Object.values(answers)).size;
    const warmUpstreamCalls = await node.count('call-read');
    // The plain path first: startReference probes the first key.
    const ref = await startReference(
      { [ENTRY_PATH]: answers[`${ENTRY_PATH}\n${bodies[0]}`]!, ...answers },
      freshDir('hit-rotating-ref'),
    );
    try {
      for (const body of bodies) {
        if ((await expectOk(`${ref.url}${ENTRY_PATH}`, body)) !== answers[`${ENTRY_PATH}\n${body}`])
          throw new Error('reference bytes differ');
      }
      const gwRounds: Measured[] = [];
      const refRounds: Measured[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const runs = [
          async () => refRounds.push(await measure(ref, `${ref.url}${ENTRY_PATH}`, '', { bodies })),
          async () => gwRounds.push(await measure(gw, `${gw.url}${ENTRY_PATH}`, '', { bodies })),
        ];
        if (round % 2 === 1) runs.reverse();
        for (const r of runs) await r();
        log(
          `hit-rotating round ${round + 1}/${ROUNDS}: gateway ${gwRounds.at(-1)!.rps} req/s, reference ${refRounds.at(-1)!.rps} req/s`,
        );
      }
      const upstreamCalls = (await node.count('call-read')) - warmUpstreamCalls;
      const g = medianRound(gwRounds);
      const r = medianRound(refRounds);
      const ratio = pairedRatio(g, r, (m) => m.rps);
      const p99Ratio = pairedRatio(g, r, (m) => m.latencyMs.p99);
      const loadCpu = `${cpuOf(g)} / ${cpuOf(r)}`;
      return {
        settings: {
          connections: CONNECTIONS,
          warmupS: WARMUP_S,
          durationS: DURATION_S,
          rounds: ROUNDS,
          bodies,
        },
        rows: [
          {
            figure: `read-only hit, ${bodies.length} bodies in turn: throughput`,
            value: `${int(g.rps)} req/s`,
            reference: `${int(r.rps)} req/s`,
            ratio: x(ratio),
            target: `≥ ${GOAL.toFixed(2)}×`,
            status: mark(ratio >= GOAL && upstreamCalls === 0),
            loadCpu,
          },
          {
            figure: `read-only hit, ${bodies.length} bodies in turn: p99 latency`,
            value: ms(g.p99, 3),
            reference: ms(r.p99, 3),
            ratio: x(p99Ratio),
            target: '—',
            status: '—',
            loadCpu,
          },
        ],
        notes: [
          `\`POST ${ENTRY_PATH.replace(/SP[0-9A-Z]+/, 'SP3K…')}\` with ${bodies.length} bodies (\`get-entry\` of`,
          `u${IDS.join(', u')}), a wrk Lua script sending them in turn; each cached by one warm-up miss`,
          `(${distinctAnswers} distinct answer bytes: the fake node gives every id the same tuple). The reference answers each body the gateway's bytes for it.`,
          `${ROUNDS} round(s), the order alternating; ratio = median of the per-round ratios. Upstream calls under load:`,
          `${upstreamCalls} (0 = every answer a hit; the goal needs it).`,
        ],
        results: {
          gateway: g,
          reference: r,
          throughputRatio: ratio,
          p99Ratio,
          upstreamCalls,
          distinctAnswers,
        },
      };
    } finally {
      await ref.proc.stop();
    }
  } finally {
    await gw.proc.stop();
    await node.stop();
  }
}

export const hitRotating: BenchCase = {
  title: 'read-only hit, three bodies in turn, 64 connections',
  run,
};
runStandalone(import.meta.filename, hitRotating);
