/**
 * memory-distinct: where a gateway's memory goes when its traffic is spread over many distinct
 * keys (the load that lifted RSS in the scale case, where one hot key in the soak did not).
 * One gateway (SQLite store, default memory tiers) with bench/memory-probe.mjs preloaded under
 * --expose-gc: `process.memoryUsage()` and the live heap after a full collection, and VmRSS, at
 * start, after 20 s of misses over 100k distinct bodies (each stored), and after 20 s of hits
 * spread over them. Informational: it says what to bound, no goal of its own.
 *
 *   npm run build && node --import tsx bench/cases/memory-distinct.ts
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { type Sample, sample } from '../memory-sample.js';
import {
  type BenchCase,
  ENTRY_PATH,
  entryBody,
  expectOk,
  freshDir,
  gateway,
  int,
  log,
  measure,
  QUICK,
  ROOT,
  runStandalone,
  startFakeNodeProcess,
} from '../support.js';

const KEYS = 100_000;
const PHASE_S = QUICK ? 5 : 20;

async function run() {
  const node = await startFakeNodeProcess();
  const dir = freshDir('memory-distinct');
  const probeFile = path.join(dir, 'memory.json');
  // The environment passes through (NODE_OPTIONS, MALLOC_ARENA_MAX: experiments with the heap's
  // and the allocator's settings).
  const gw = await gateway(node.url, dir, { MEMORY_PROBE_FILE: probeFile, MEMORY_PROBE_GC: '1' }, [
    '--expose-gc',
    '--import',
    pathToFileURL(path.join(ROOT, 'bench/memory-probe.mjs')).href,
  ]);
  try {
    await expectOk(`${gw.url}${ENTRY_PATH}`, entryBody(0));
    const spread = { count: KEYS, prefix: '{"functionArgs":[{"type":"uint","value":"', suffix: '"}]}' };
    const phases: Array<{ phase: string; sample: Sample; rps?: number; upstreamCalls?: number }> = [];
    phases.push({ phase: 'started', sample: await sample(gw.proc, probeFile, 0) });
    let calls = await node.count('call-read');
    for (const phase of ['misses over 100k keys', 'hits spread over them']) {
      log(`memory-distinct: ${PHASE_S} s of ${phase}`);
      const m = await measure(gw, `${gw.url}${ENTRY_PATH}`, '', {
        spread,
        warmupSeconds: 0,
        durationSeconds: PHASE_S,
      });
      const now = await node.count('call-read');
      phases.push({
        phase,
        sample: await sample(gw.proc, probeFile, 0),
        rps: m.rps,
        upstreamCalls: now - calls,
      });
      calls = now;
    }
    const row = (p: (typeof phases)[number]) => ({
      figure: `after: ${p.phase}`,
      value: `RSS ${p.sample.rssMiB} MiB`,
      reference: `heap ${p.sample.heapUsedMiB} of ${p.sample.heapTotalMiB ?? '?'} MiB (live ${p.sample.liveHeapMiB ?? '?'} MiB), external ${p.sample.externalMiB} MiB (array buffers ${p.sample.arrayBuffersMiB} MiB)`,
      ratio: p.rps === undefined ? '—' : `${int(p.rps)} req/s`,
      target: 'info',
      status: '—',
    });
    return {
      settings: { keys: KEYS, phaseS: PHASE_S },
      rows: phases.map(row),
      notes: [
        `One gateway, SQLite store and default memory tiers; ${int(KEYS)} distinct \`get-entry\` bodies, uniform.`,
        'RSS is VmRSS; heap, external and array buffers are process.memoryUsage() as the gateway sees it;',
        '"live" is the heap after a full collection (node --expose-gc): the rest of the heap is garbage not yet',
        'collected. RSS minus (heap + external) is memory outside what V8 accounts for (allocator, SQLite).',
        `Upstream calls per phase: ${phases.map((p) => p.upstreamCalls ?? 0).join(' / ')}.`,
      ],
      results: { phases },
    };
  } finally {
    await gw.proc.stop();
    await node.stop();
  }
}

export const memoryDistinct: BenchCase = {
  title: 'memory with traffic spread over 100k distinct keys',
  run,
};
runStandalone(import.meta.filename, memoryDistinct);
