/**
 * Runs benchmark cases (bench/cases/<case>.ts, one measurement each), writes each one's record to
 * bench/results/<case>.json, then rewrites the generated part of BENCHMARKS.md from every record
 * there (bench/report.ts). Load comes from wrk (bench/load.ts).
 *
 *   npm run build && node --import tsx bench/run.ts [case …] [--quick] [--no-report]
 *
 * Without a case, every case of DEFAULT (in that order). `--quick` (or QUICK=1): short runs, for
 * trying the harness out. `--no-report`: leave BENCHMARKS.md alone. Other settings are the cases'
 * own environment variables (e.g. SOAK_S for soak); GATEWAY=<file> runs another build of the
 * gateway (default: package.json "main"). `profile` (the hit path under `node --cpu-prof`) runs
 * only when named.
 */
import type { BenchCase } from './support.js';

const CASES: Record<string, () => Promise<BenchCase>> = {
  startup: async () => (await import('./cases/startup.js')).startup,
  hits: async () => (await import('./cases/hits.js')).hits,
  'hit-rotating': async () => (await import('./cases/hit-rotating.js')).hitRotating,
  'hit-independent': async () => (await import('./cases/hit-independent.js')).hitIndependent,
  independent: async () => (await import('./cases/independent.js')).independent,
  bursts: async () => (await import('./cases/bursts.js')).bursts,
  miss: async () => (await import('./cases/miss.js')).miss,
  'miss-overhead': async () => (await import('./cases/miss-overhead.js')).missOverhead,
  hedging: async () => (await import('./cases/hedging.js')).hedging,
  consensus: async () => (await import('./cases/consensus.js')).consensus,
  scale: async () => (await import('./cases/scale.js')).scale,
  'admission-micro': async () => (await import('./cases/admission-micro.js')).admissionMicro,
  'access-and-observer': async () => (await import('./cases/access-and-observer.js')).accessAndObserver,
  'observer-payload': async () => (await import('./cases/observer-payload.js')).observerPayload,
  'observer-recorded': async () => (await import('./cases/observer-recorded.js')).observerRecorded,
  soak: async () => (await import('./cases/soak.js')).soak,
  'memory-distinct': async () => (await import('./cases/memory-distinct.js')).memoryDistinct,
  differential: async () => (await import('./cases/differential.js')).differential,
  watch: async () => (await import('./cases/watch.js')).watch,
  profile: async () => (await import('./cases/profile.js')).profile,
};
/** Start-up first, while nothing else has warmed the file-system cache for the gateway more than a build did. */
const DEFAULT = [
  'startup',
  'hits',
  'hit-rotating',
  'hit-independent',
  'bursts',
  'miss',
  'miss-overhead',
  'hedging',
  'consensus',
  'scale',
  'access-and-observer',
  'observer-payload',
  'observer-recorded',
  'soak',
  'memory-distinct',
  'watch',
];

const args = process.argv.slice(2);
const names: string[] = [];
let report = true;
for (const arg of args) {
  if (arg === '--quick') process.env.QUICK = '1';
  else if (arg === '--no-report') report = false;
  else if (arg in CASES) names.push(arg);
  else {
    process.stderr.write(`unknown case or option "${arg}"; cases: ${Object.keys(CASES).join(', ')}\n`);
    process.exit(2);
  }
}

// Imported after the options: support.ts reads QUICK when it loads.
const { cleanup, log, runCase } = await import('./support.js');
process.on('SIGINT', () => {
  cleanup();
  process.exit(130);
});
const failed: string[] = [];
for (const name of names.length > 0 ? names : DEFAULT) {
  try {
    await runCase(name, await CASES[name]!());
  } catch (err) {
    failed.push(name);
    process.stderr.write(
      `case ${name} failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
  } finally {
    cleanup();
  }
}
if (report) {
  const { writeReport } = await import('./report.js');
  const records = writeReport();
  log(`BENCHMARKS.md: generated part from ${records.length} case record(s)`);
}
if (failed.length > 0) {
  log(`failed: ${failed.join(', ')}`);
  process.exit(1);
}
