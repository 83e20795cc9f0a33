/**
 * Differential test of the gateway's freshness against the real Clarity VM (docs/events.md,
 * docs/freshness.md): a seeded workload (differential/workload.ts) makes blocks on the local
 * chain while the gateway follows it as its event observer; after every block, every tracked
 * read (every read-only function, data var and map entry of the contracts in
 * differential/contracts/) is asked through each gateway door with a block bound of 0, and of
 * the chain itself, and the answers must agree (differential/compare.ts). A wrong answer is
 * logged with the block, the step that made it, the step that last changed the chain's answer
 * and the gateway's dependency analysis of the function.
 *
 * DIFFERENTIAL_SEED and DIFFERENTIAL_BLOCKS change the run; the longer one, several seeds and
 * 1,000+ blocks, is bench/cases/differential.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Environment,
  type RunReport,
  runDifferential,
  startEnvironment,
  summarize,
} from './differential/compare.js';

const SEED = Number(process.env.DIFFERENTIAL_SEED ?? 20_250_611);
const BLOCKS = Number(process.env.DIFFERENTIAL_BLOCKS ?? 50);

let env: Environment;
let report: RunReport;

beforeAll(async () => {
  env = await startEnvironment();
  report = await runDifferential({
    devnetUrl: env.devnet.url,
    tipHeight: () => env.devnet.tipHeight(),
    gateway: env.gateway,
    recorder: env.recorder,
    seed: SEED,
    blocks: BLOCKS,
    // More deployments than the bench's mix, so that a short run deploys every template.
    weights: { deploy: 20 },
    log: (line) => {
      if (line.startsWith('WRONG')) console.log(line);
    },
  });
  console.log(summarize(report));
}, 180_000);

afterAll(async () => {
  await env?.close();
});

describe(`differential run, seed ${SEED}, ${BLOCKS} blocks`, () => {
  it('exercised every kind of step, failures included', () => {
    const count = (prefix: string) =>
      Object.entries(report.steps)
        .filter(([k]) => k.startsWith(prefix))
        .reduce((n, [, v]) => n + v, 0);
    expect(report.blocks).toBeGreaterThanOrEqual(BLOCKS);
    expect(count('call:ok')).toBeGreaterThan(0);
    expect(count('call:err') + count('call:abort')).toBeGreaterThan(0);
    expect(count('transfer:ok')).toBeGreaterThan(0);
    // The family, fresh contracts, and deployments that fail.
    expect(count('deploy:ok')).toBeGreaterThan(12);
    expect(count('deploy:abort') + count('deploy:err')).toBeGreaterThan(0);
    expect(count('mine:')).toBeGreaterThan(0);
  });

  it('compared every tracked read through every door, and the proof kept entries current', () => {
    for (const [door, stats] of Object.entries(report.doors)) {
      expect(stats.reads, door).toBeGreaterThan(0);
      expect(stats.unavailable, door).toBe(0);
    }
    // A run that only ever missed would prove nothing: hits across blocks, on every entry kind.
    const d = report.doors;
    expect(d['read-only'].provenHits + d.batch.provenHits + d['call-read'].provenHits).toBeGreaterThan(0);
    expect(d['fast-call-read'].provenHits).toBeGreaterThan(0);
    expect(d['data-var'].provenHits).toBeGreaterThan(0);
    expect(d['map-entry'].provenHits).toBeGreaterThan(0);
  });

  it('kept values only their own deployment wrote current across most blocks, on every door', () => {
    const compared = Object.entries(report.stable).filter(([, k]) => k.rounds >= 6);
    expect(compared.length).toBeGreaterThan(1);
    for (const [read, k] of compared) {
      expect({ read, call: k.call >= k.rounds / 2, fast: k.fast >= k.rounds / 2 }).toEqual({
        read,
        call: true,
        fast: true,
      });
    }
  });

  it('never answered anything but what the chain answers at the height the answer names', () => {
    expect(report.wrongAnswers).toEqual([]);
    expect(report.wrong).toBe(0);
  });
});
