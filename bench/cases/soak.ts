import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { generateLoad } from '../load.js';
import { type Sample, sample } from '../memory-sample.js';
import {
  type BenchCase,
  CONNECTIONS,
  clockTicksPerSecond,
  expectOk,
  freshDir,
  gateway,
  int,
  load,
  log,
  mark,
  measure,
  memoryOf,
  ms,
  RO_BODY,
  RO_PATH,
  ROOT,
  round,
  runStandalone,
  sleep,
  startFakeNodeProcess,
  startReference,
  WARMUP_S,
  x,
} from '../support.js';

const SOAK_S = Number(process.env.SOAK_S ?? 600);
const SAMPLE_S = 5;
const REFERENCE_S = 10;
const GROWTH_GOAL = 0.1;
const MAX_RSS_GOAL_MIB = 256;

async function run() {
  const node = await startFakeNodeProcess();
  const dir = freshDir('soak');
  const probeFile = path.join(dir, 'memory.json');
  const gw = await gateway(node.url, dir, { MEMORY_PROBE_FILE: probeFile }, [
    '--import',
    pathToFileURL(path.join(ROOT, 'bench/memory-probe.mjs')).href,
  ]);
  try {
    const roBytes = await expectOk(`${gw.url}${RO_PATH}`, RO_BODY);
    if ((await expectOk(`${gw.url}${RO_PATH}`, RO_BODY)) !== roBytes)
      throw new Error('hit differs from miss');
    const ref = await startReference({ [RO_PATH]: roBytes }, freshDir('soak-ref'));
    let reference: Awaited<ReturnType<typeof measure>>;
    let refRssMiB: number;
    try {
      log(`soak: reference for ${REFERENCE_S} s`);
      reference = await measure(ref, `${ref.url}${RO_PATH}`, RO_BODY, { durationSeconds: REFERENCE_S });
      refRssMiB = memoryOf(ref.proc.pid).rssMiB;
    } finally {
      await ref.proc.stop();
    }
    const warm = await callReads(node);
    const samples: Sample[] = [await sample(gw.proc, probeFile, 0)];
    log(`soak: ${SOAK_S} s of hits at full speed, memory every ${SAMPLE_S} s`);
    const t0 = performance.now();
    let done = false;
    const loadRun = generateLoad(
      load(`${gw.url}${RO_PATH}`, RO_BODY, { warmupSeconds: 0, durationSeconds: SOAK_S }),
      clockTicksPerSecond(),
    ).finally(() => {
      done = true;
    });
    const sampler = (async () => {
      for (let k = 1; !done; k++) {
        const wait = t0 + k * SAMPLE_S * 1000 - performance.now();
        while (!done && performance.now() < t0 + k * SAMPLE_S * 1000) await sleep(Math.min(100, wait));
        if (done) break;
        const s = await sample(gw.proc, probeFile, (performance.now() - t0) / 1000);
        samples.push(s);
        if (k % 6 === 0 || SOAK_S <= 60)
          log(`soak t=${s.t} s: RSS ${s.rssMiB} MiB, heap ${s.heapUsedMiB} MiB`);
      }
    })();
    const result = await loadRun;
    await sampler;
    samples.push(await sample(gw.proc, probeFile, (performance.now() - t0) / 1000));
    const upstreamCalls = (await callReads(node)) - warm;
    if (result.non2xx > 0 || result.errors > 0)
      throw new Error(`soak: ${result.non2xx} non-2xx answers and ${result.errors} errors`);
    // The second half: from the sample nearest to SOAK_S / 2 to the last one.
    const half = samples.reduce((best, s) =>
      Math.abs(s.t - SOAK_S / 2) < Math.abs(best.t - SOAK_S / 2) ? s : best,
    );
    const last = samples[samples.length - 1]!;
    const growth = (last.rssMiB - half.rssMiB) / half.rssMiB;
    const maxRss = Math.max(...samples.map((s) => s.rssMiB));
    const hwmMiB = memoryOf(gw.proc.pid).hwmMiB;
    const rpsRatio = result.rps / reference.rps;
    const peak = (pick: (s: Sample) => number): number => Math.max(...samples.map(pick));
    return {
      settings: {
        soakS: SOAK_S,
        sampleS: SAMPLE_S,
        connections: CONNECTIONS,
        referenceS: REFERENCE_S,
        referenceWarmupS: WARMUP_S,
      },
      rows: [
        {
          figure: `RSS growth over the second half (t=${half.t} → ${last.t} s)`,
          value: `${(growth * 100).toFixed(1)} % (${half.rssMiB} → ${last.rssMiB} MiB)`,
          reference: '—',
          ratio: x(last.rssMiB / half.rssMiB, 3),
          target: `< ${GROWTH_GOAL * 100} %`,
          status: mark(growth < GROWTH_GOAL),
        },
        {
          figure: `max RSS over ${samples.length} samples`,
          value: `${maxRss.toFixed(1)} MiB`,
          reference: `${refRssMiB.toFixed(1)} MiB (bare, after its run)`,
          ratio: x(maxRss / refRssMiB),
          target: `< ${MAX_RSS_GOAL_MIB} MiB`,
          status: mark(maxRss < MAX_RSS_GOAL_MIB),
        },
        {
          figure: `hit throughput over ${SOAK_S} s (p99 ${ms(result.latencyMs.p99, 3)})`,
          value: `${int(result.rps)} req/s`,
          reference: `${int(reference.rps)} req/s (bare, ${REFERENCE_S} s)`,
          ratio: x(rpsRatio),
          target: 'info',
          status: '—',
          loadCpu: `${result.loadGeneratorCpuPct} % / ${reference.loadGeneratorCpuPct} %`,
        },
      ],
      notes: [
        `The read-only hit (\`get-info\`, the warm entry) at full speed, wrk -t1 -c${CONNECTIONS} for ${SOAK_S} s; the`,
        `gateway's RSS (VmRSS) and \`process.memoryUsage()\` (via bench/memory-probe.mjs on SIGUSR2) every ${SAMPLE_S} s.`,
        `Before it, the bare reference under the same load for ${REFERENCE_S} s. Growth: last sample against the one`,
        `nearest to half-time. Peaks: heapUsed ${peak((s) => s.heapUsedMiB)} MiB, external ${peak((s) => s.externalMiB)} MiB,`,
        `arrayBuffers ${peak((s) => s.arrayBuffersMiB)} MiB; VmHWM at the end ${hwmMiB} MiB. Upstream calls during the`,
        `soak: ${upstreamCalls} (0 = every answer a hit). RSS samples (MiB): ${samples.map((s) => s.rssMiB).join(', ')}.`,
      ],
      results: {
        soak: result,
        reference,
        throughputRatio: round(rpsRatio, 3),
        rssGrowthSecondHalf: round(growth, 4),
        maxRssMiB: maxRss,
        hwmMiB,
        referenceRssMiB: refRssMiB,
        upstreamCalls,
        samples,
      },
    };
  } finally {
    await gw.proc.stop();
    await node.stop();
  }
}

const callReads = (node: { count(kind?: 'call-read'): Promise<number> }): Promise<number> =>
  node.count('call-read');

export const soak: BenchCase = { title: 'soak: hits at full speed, memory over time', run };
runStandalone(import.meta.filename, soak);
