/**
 * profile: not a figure with a goal but where a hit's time goes: the bare reference and the hit
 * scenarios (read-only hit, decode) under `node --cpu-prof`, loaded by wrk -t1 -c64 for 10 s after
 * a 2 s warm-up, summarized into bench/results/profile-data.md and profile.json, with flame graphs
 * (bench/results/flame-*.svg). Run only when named: `node --import tsx bench/run.ts profile`.
 *
 *   npm run build && node --import tsx bench/cases/profile.ts
 */
import fs from 'node:fs';
import path from 'node:path';
import { analyzeProfile, formatProfile } from '../analyze-profile.js';
import { flameGraph } from '../flamegraph.js';
import {
  type BenchCase,
  CONNECTIONS,
  DECODE_BODY,
  DECODE_PATH,
  expectOk,
  type FakeNodeProc,
  formatWithBiome,
  freshDir,
  gateway,
  gitCommit,
  log,
  type Measured,
  measure,
  RO_BODY,
  RO_PATH,
  ROOT,
  requireGatewayEntry,
  runStandalone,
  startFakeNodeProcess,
  startReference,
  WARMUP_S,
} from '../support.js';

/** Folded stacks kept in the repository per profile: the heaviest ones (the full set is large). */
const FOLDED_KEPT = 80;

async function profileCase(node: FakeNodeProc) {
  const outDir = path.join(ROOT, 'bench/results/profile');
  const resultsDir = path.join(ROOT, 'bench/results');
  fs.rmSync(outDir, { recursive: true, force: true });
  fs.mkdirSync(outDir, { recursive: true });
  const sections: string[] = [];
  const summaries: Record<string, ReturnType<typeof analyzeProfile>> = {};
  // The bare reference too (answering the read-only hit's bytes): what the same load costs Node itself.
  const warm = await gateway(node.url, freshDir('profile-warm'));
  const roBytes = await expectOk(`${warm.url}${RO_PATH}`, RO_BODY);
  await warm.proc.stop();
  for (const [name, p, body] of [
    ['reference', RO_PATH, RO_BODY],
    ['read-only-hit', RO_PATH, RO_BODY],
    ['decode', DECODE_PATH, DECODE_BODY],
  ] as const) {
    // Under tsx (the reference) the loader thread writes a profile too: a directory of its own,
    // then the main thread's profile (the largest) is kept.
    const profDir = path.join(outDir, name);
    const flags = ['--cpu-prof', `--cpu-prof-dir=${profDir}`];
    const server =
      name === 'reference'
        ? await startReference({ [RO_PATH]: roBytes }, freshDir('profile-ref'), undefined, flags)
        : await gateway(node.url, freshDir(`profile-${name}`), {}, flags);
    let result: Measured;
    try {
      await expectOk(`${server.url}${p}`, body);
      log(`profile: ${name} under load`);
      result = await measure(server, `${server.url}${p}`, body, { durationSeconds: 10 });
    } catch (err) {
      await server.proc.stop();
      throw err;
    }
    // A clean exit (SIGTERM -> graceful close -> exit 0) is what writes the profile.
    const code = await server.proc.stop();
    if (code !== 0) throw new Error(`profiled ${name} exited ${code}: ${server.proc.output()}`);
    const written = fs
      .readdirSync(profDir)
      .filter((f) => f.endsWith('.cpuprofile'))
      .map((f) => path.join(profDir, f))
      .sort((a, b) => fs.statSync(b).size - fs.statSync(a).size);
    if (written[0] === undefined) throw new Error(`no profile written by ${name}`);
    const file = path.join(outDir, `${name}.cpuprofile`);
    fs.renameSync(written[0], file);
    fs.rmSync(profDir, { recursive: true, force: true });
    const summary = analyzeProfile(file, 20);
    summaries[name] = summary;
    const flame = flameGraph(
      file,
      `${name}: node --cpu-prof of ${path.relative(ROOT, requireGatewayEntry())} under wrk`,
    );
    fs.writeFileSync(path.join(resultsDir, `flame-${name}.svg`), flame.svg);
    fs.writeFileSync(
      path.join(resultsDir, `flame-${name}.folded.txt`),
      `${flame.folded.split('\n').slice(0, FOLDED_KEPT).join('\n')}\n`,
    );
    fs.writeFileSync(path.join(outDir, `${name}.folded`), flame.folded);
    sections.push(
      `### ${name} (${result.rps} req/s under the profiler, p99 ${result.latencyMs.p99} ms, server CPU ${result.serverCpuUsPerRequest} µs/request, wrk ${result.loadGeneratorCpuPct} % of a core)\n\n` +
        `Flame graph: [flame-${name}.svg](flame-${name}.svg); heaviest folded stacks: [flame-${name}.folded.txt](flame-${name}.folded.txt).\n\n${formatProfile(summary)}`,
    );
  }
  const md = [
    `# Profile data of the hit path (generated)`,
    '',
    `\`node --import tsx bench/run.ts profile\` on ${new Date().toISOString()}, commit ${gitCommit()}: the gateway under`,
    `\`node --cpu-prof\` (\`${path.relative(ROOT, requireGatewayEntry())}\`, frames mapped back to src/ and node_modules/ through its`,
    `source map), wrk -t1 -c${CONNECTIONS} for 10 s after a ${WARMUP_S} s warm-up. The reading of these figures and the`,
    'proposals are in profile.md. Raw profiles: `bench/results/profile/*.cpuprofile` (not committed;',
    'open them in Chrome DevTools).',
    '',
    ...sections,
  ].join('\n');
  fs.writeFileSync(path.join(resultsDir, 'profile-data.md'), md);
  fs.writeFileSync(path.join(resultsDir, 'profile.json'), `${JSON.stringify(summaries, null, 2)}\n`);
  formatWithBiome(['bench/results/profile-data.md', 'bench/results/profile.json']);
  process.stdout.write(`${md}\n`);
  return { profiles: Object.keys(summaries), dataFile: 'bench/results/profile-data.md' };
}

async function run() {
  const node = await startFakeNodeProcess();
  try {
    const results = await profileCase(node);
    return {
      settings: { connections: CONNECTIONS, warmupS: WARMUP_S, durationS: 10 },
      rows: [],
      notes: [
        'The hit path under `node --cpu-prof`: tables in bench/results/profile-data.md, flame graphs in',
        'bench/results/flame-*.svg (no figure with a goal).',
      ],
      results,
    };
  } finally {
    await node.stop();
  }
}

export const profile: BenchCase = { title: 'profile of the hit path (node --cpu-prof)', run };
runStandalone(import.meta.filename, profile);
