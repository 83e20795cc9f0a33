/**
 * The differential run at length (test/devnet/differential.test.ts is its short form): for
 * several seeds, a seeded workload makes 1,000+ blocks on the local chain (src/devnet, the real
 * Clarity VM) while the gateway follows it as its event observer, and after every block every
 * tracked read is compared through each door (`maxBlocks: 0`, NODE_MAX_BLOCKS=0) with the
 * chain's own answer (test/devnet/differential/compare.ts). Figures per door: wrong answers
 * (goal: none), hits, and hits across a block (kept current by the observer's proof).
 *
 * The devnet and the gateway run in this process, the gateway from src/ (as the tests start it):
 * the run waits for the observer to apply each block, which only an in-process gateway tells.
 * The figures are correctness and hit rates, not throughput.
 *
 *   node --import tsx bench/run.ts differential --no-report
 *   DIFFERENTIAL_BLOCKS (default 1000), DIFFERENTIAL_SEEDS (comma-separated, default 1,2,3)
 */
import {
  DOORS,
  type Door,
  type DoorStats,
  type RunReport,
  runDifferential,
  startEnvironment,
  summarize,
} from '../../test/devnet/differential/compare.js';
import { type BenchCase, type CaseOutput, log, QUICK, type Row, runStandalone } from '../support.js';

const BLOCKS = Number(process.env.DIFFERENTIAL_BLOCKS ?? (QUICK ? 60 : 1000));
const SEEDS = (process.env.DIFFERENTIAL_SEEDS ?? (QUICK ? '1' : '1,2,3')).split(',').map(Number);

const pct = (n: number, d: number): string => (d === 0 ? '—' : `${((100 * n) / d).toFixed(1)} %`);

/** A wrong answer's cause, for the record: the read (its contract without the fresh contracts' numbers) and door. */
const causeOf = (read: string): string => read.replace(/-\d+::/, '-N::');

async function run(): Promise<CaseOutput> {
  const reports: RunReport[] = [];
  for (const seed of SEEDS) {
    const env = await startEnvironment();
    try {
      log(`differential: seed ${seed}, ${BLOCKS} blocks`);
      const report = await runDifferential({
        devnetUrl: env.devnet.url,
        tipHeight: () => env.devnet.tipHeight(),
        gateway: env.gateway,
        recorder: env.recorder,
        seed,
        blocks: BLOCKS,
        log: (line) => {
          if (!line.startsWith('WRONG')) log(line);
        },
      });
      process.stderr.write(`${summarize(report)}\n`);
      reports.push(report);
    } finally {
      await env.close();
    }
  }

  const total = Object.fromEntries(
    DOORS.map((door) => {
      const sum = {} as Record<keyof DoorStats, number>;
      for (const r of reports) {
        for (const [k, v] of Object.entries(r.doors[door]) as [keyof DoorStats, number][]) {
          sum[k] = (sum[k] ?? 0) + v;
        }
      }
      return [door, sum];
    }),
  ) as Record<Door, DoorStats>;
  const blocks = reports.reduce((n, r) => n + r.blocks, 0);
  const comparisons = reports.reduce((n, r) => n + r.comparisons, 0);
  const wrong = reports.reduce((n, r) => n + r.wrong, 0);
  const byCause: Record<string, number> = {};
  for (const r of reports) {
    for (const [key, n] of Object.entries(r.wrongByRead)) {
      const [door, ...read] = key.split(' ');
      const cause = `${causeOf(read.join(' '))} (${door})`;
      byCause[cause] = (byCause[cause] ?? 0) + n;
    }
  }

  const rows: Row[] = [
    {
      figure: `wrong answers, every door (${SEEDS.length} seeds × ${BLOCKS} blocks, ${comparisons.toLocaleString('en-US')} comparisons)`,
      value: `${wrong}`,
      reference: 'the chain at the same tip',
      ratio: '—',
      target: '0',
      status: wrong === 0 ? 'MET' : 'MISSED',
    },
  ];
  for (const door of DOORS) {
    const s = total[door];
    rows.push(
      {
        figure: `${door}: wrong answers (of which hits labelled with the tip; racing a block)`,
        value: `${s.wrong} of ${s.reads.toLocaleString('en-US')} (${s.wrongAtTip}; ${s.racingWrong})`,
        reference: 'the chain at the same tip',
        ratio: '—',
        target: '0',
        status: s.wrong === 0 ? 'MET' : 'MISSED',
      },
      {
        figure: `${door}: hit rate (hits across a block: kept current by proof)`,
        value: `${pct(s.hits, s.reads)} (${s.provenHits.toLocaleString('en-US')})`,
        reference: '—',
        ratio: '—',
        target: '—',
        status: '—',
      },
    );
  }

  // Values only their own deployment wrote: every block but one that touches everything should keep them.
  const stable = reports.flatMap((r) =>
    Object.entries(r.stable).map(([read, k]) => ({ seed: r.seed, read, ...k })),
  );
  const compared = stable.filter((k) => k.rounds >= 6);
  const neverKept = compared.filter((k) => k.call === 0 || k.fast === 0);
  const rounds = compared.reduce((n, k) => n + k.rounds, 0);
  rows.push({
    figure: `values only their deployment wrote (${compared.length} reads): rounds kept current, call-read entry / fast-call-read entry`,
    value: `${pct(
      compared.reduce((n, k) => n + k.call, 0),
      rounds,
    )} / ${pct(
      compared.reduce((n, k) => n + k.fast, 0),
      rounds,
    )}`,
    reference: `${neverKept.length} of them never kept current`,
    ratio: '—',
    target: 'every read kept current',
    status: neverKept.length === 0 ? 'MET' : 'MISSED',
  });

  return {
    settings: {
      seeds: SEEDS,
      blocksPerSeed: BLOCKS,
      gateway: 'in process, from src/ (test/support/gateway.ts)',
    },
    rows,
    notes: [
      'The devnet (src/devnet, epoch 3.3) and the gateway (in this process, from src/, `CACHE_STORE=memory`) with',
      'the gateway as the devnet’s event observer. Per seed, test/devnet/differential/workload.ts deploys the contract',
      'family of test/devnet/differential/contracts/, then picks steps (signed calls and STX transfers broadcast to',
      '`/v2/transactions`, calls through `/devnet/call-public`, deployments of fresh contracts whose top-level code calls',
      'others, failing ones, a name deployed again after its first deployment failed, empty blocks), each making at',
      'least one block. After the observer applied each block, every tracked read (every read-only function, data var',
      'and map entry) is asked through each door with a block bound of 0 and of the devnet at the same tip; a wrong',
      'answer is one whose value differs. About a third of the steps are also raced by reads, each judged by the',
      'height it names. A hit across a block is a hit on the first read of its cache entry after a block.',
    ],
    results: {
      blocks,
      comparisons,
      wrong,
      doors: total,
      wrongByCause: byCause,
      stableNeverKeptCurrent: neverKept,
      perSeed: reports.map((r) => ({
        seed: r.seed,
        blocks: r.blocks,
        steps: r.steps,
        comparisons: r.comparisons,
        trackedReads: r.trackedReads,
        wrong: r.wrong,
        doors: r.doors,
        stable: r.stable,
        firstWrongAnswers: r.wrongAnswers.slice(0, 20),
        elapsedS: Math.round(r.elapsedMs / 100) / 10,
      })),
    },
  };
}

export const differential: BenchCase = {
  title: 'differential: gateway answers against the real Clarity VM, block by block',
  run,
};
runStandalone(import.meta.filename, differential);
