/**
 * hit-independent: the read-only hit measured the way an independent check measured it, beside
 * this benchmark's own way, in the same run, so that the two figures can be told apart:
 *
 * - independent: `wrk -t1 -c64 -d5s --latency`, no warm-up, three rounds, each figure the
 *   median of its rounds and the ratio the ratio of the medians; `POST
 *   /contract-calls/read-only/{testnet address}/demo/get-balance` with one `principal` argument
 *   in the simplified form; gateway started as `npm start` does with NODE_ENV=production and
 *   LOG_LEVEL=warn; the reference a bare node:http server in its own process answering the
 *   gateway's exact bytes.
 * - this benchmark's: the same request, 2 s warm-up then 8 s, five rounds with the order
 *   alternating, the ratio the median of the per-round ratios.
 *
 * Goal: ≥ 0.85× either way.
 *
 *   npm run build && node --import tsx bench/cases/hit-independent.ts
 */
import { TESTNET_ADDR } from '../../test/support/fixtures.js';
import { CONTRACT } from '../fake-node-process.js';
import {
  type BenchCase,
  cpuOf,
  expectOk,
  freshDir,
  gateway,
  int,
  log,
  type Measured,
  mark,
  measure,
  median,
  medianRound,
  ms,
  pairedRatio,
  QUICK,
  runStandalone,
  startFakeNodeProcess,
  startReference,
  x,
} from '../support.js';

const PATH = `/contract-calls/read-only/${TESTNET_ADDR}/${CONTRACT}/get-balance`;
const BODY = JSON.stringify({ functionArgs: [{ type: 'principal', value: TESTNET_ADDR }] });
const GOAL = 0.85;

async function run() {
  const node = await startFakeNodeProcess();
  const gw = await gateway(node.url, freshDir('hit-independent'), { NODE_ENV: 'production' });
  try {
    await expectOk(`${gw.url}${PATH}`, BODY);
    const answer = await expectOk(`${gw.url}${PATH}`, BODY);
    const ref = await startReference({ [PATH]: answer }, freshDir('hit-independent-ref'));
    try {
      if ((await expectOk(`${ref.url}${PATH}`, BODY)) !== answer) throw new Error('reference bytes differ');
      // Their way: 3 rounds of 5 s each, no warm-up, gateway then reference.
      const theirs = { gw: [] as Measured[], ref: [] as Measured[] };
      for (let round = 0; round < (QUICK ? 1 : 3); round++) {
        theirs.gw.push(await measure(gw, `${gw.url}${PATH}`, BODY, { warmupSeconds: 0, durationSeconds: 5 }));
        theirs.ref.push(
          await measure(ref, `${ref.url}${PATH}`, BODY, { warmupSeconds: 0, durationSeconds: 5 }),
        );
        log(
          `hit-independent (their way) round ${round + 1}: gateway ${theirs.gw.at(-1)!.rps}, reference ${theirs.ref.at(-1)!.rps}`,
        );
      }
      // Ours: warm-up, alternating order, paired ratios.
      const ours = { gw: [] as Measured[], ref: [] as Measured[] };
      for (let round = 0; round < (QUICK ? 1 : 5); round++) {
        const runs = [
          async () => ours.ref.push(await measure(ref, `${ref.url}${PATH}`, BODY)),
          async () => ours.gw.push(await measure(gw, `${gw.url}${PATH}`, BODY)),
        ];
        if (round % 2 === 1) runs.reverse();
        for (const r of runs) await r();
        log(
          `hit-independent (our way) round ${round + 1}: gateway ${ours.gw.at(-1)!.rps}, reference ${ours.ref.at(-1)!.rps}`,
        );
      }
      const tg = medianRound(theirs.gw);
      const tr = medianRound(theirs.ref);
      const theirRatio = tg.rps / tr.rps;
      const og = medianRound(ours.gw);
      const or = medianRound(ours.ref);
      const ourRatio = pairedRatio(og, or, (m) => m.rps);
      const firstRound = theirs.gw[0]!.rps / theirs.ref[0]!.rps;
      return {
        settings: { path: PATH, body: BODY },
        rows: [
          {
            figure: 'read-only hit, their way (5 s, no warm-up, 3 rounds, ratio of medians): throughput',
            value: `${int(tg.rps)} req/s`,
            reference: `${int(tr.rps)} req/s`,
            ratio: x(theirRatio),
            target: `≥ ${GOAL.toFixed(2)}×`,
            status: mark(theirRatio >= GOAL),
            loadCpu: `${cpuOf(tg)} / ${cpuOf(tr)}`,
          },
          {
            figure: 'read-only hit, their way: p99 latency',
            value: ms(tg.p99, 3),
            reference: ms(tr.p99, 3),
            ratio: x(tg.p99 / tr.p99),
            target: '≤ 1.30×',
            status: mark(tg.p99 / tr.p99 <= 1.3),
          },
          {
            figure:
              'read-only hit, our way (2 s warm-up + 8 s, 5 rounds alternating, median of ratios): throughput',
            value: `${int(og.rps)} req/s`,
            reference: `${int(or.rps)} req/s`,
            ratio: x(ourRatio),
            target: `≥ ${GOAL.toFixed(2)}×`,
            status: mark(ourRatio >= GOAL),
            loadCpu: `${cpuOf(og)} / ${cpuOf(or)}`,
          },
        ],
        notes: [
          `Same request both ways (\`POST ${PATH.replace(TESTNET_ADDR, 'ST1PQ…')}\`, a principal argument). Their way's first`,
          `round alone: ${x(firstRound)} (the gateway's JIT is cold in it; the reference has little to warm).`,
          `Per-round ratios their way: ${theirs.gw.map((g, i) => x(g.rps / theirs.ref[i]!.rps)).join(', ')};`,
          `our way: ${ours.gw.map((g, i) => x(g.rps / ours.ref[i]!.rps)).join(', ')}. Median of the whole: ${x(median([theirRatio, ourRatio]))}.`,
        ],
        results: {
          theirs: { gateway: tg, reference: tr, ratio: theirRatio },
          ours: { gateway: og, reference: or, ratio: ourRatio },
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

export const hitIndependent: BenchCase = {
  title: 'read-only hit: the independent check’s protocol beside ours',
  run,
};
runStandalone(import.meta.filename, hitIndependent);
