/**
 * A memory sample of a gateway started with bench/memory-probe.mjs preloaded: VmRSS from /proc
 * and `process.memoryUsage()` asked of the process itself (SIGUSR2), with the figures after a
 * full collection when the probe was told to collect (MEMORY_PROBE_GC=1, node --expose-gc).
 */
import fs from 'node:fs';
import { memoryOf, type Proc, round, sleep } from './support.js';

const MiB = 1024 * 1024;

export interface Sample {
  /** Seconds since the load started. */
  readonly t: number;
  readonly rssMiB: number;
  readonly heapUsedMiB: number;
  /** What V8 has committed for its heap (used or not). */
  readonly heapTotalMiB?: number;
  readonly externalMiB: number;
  readonly arrayBuffersMiB: number;
  /** Heap used after a full collection (live objects), when the probe collected. */
  readonly liveHeapMiB?: number;
}

interface Usage {
  seq: number;
  heapUsed: number;
  heapTotal?: number;
  external: number;
  arrayBuffers: number;
  afterGc?: { heapUsed: number };
}

/** Ask the probe for process.memoryUsage() (SIGUSR2) and wait for its answer (≤ 2 s). */
export async function sample(proc: Proc, file: string, t: number): Promise<Sample> {
  const before = fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as Usage).seq : 0;
  proc.child.kill('SIGUSR2');
  const deadline = Date.now() + 2000;
  for (;;) {
    if (fs.existsSync(file)) {
      const m = JSON.parse(fs.readFileSync(file, 'utf8')) as Usage;
      if (m.seq > before) {
        return {
          t: round(t, 1),
          rssMiB: memoryOf(proc.pid).rssMiB,
          heapUsedMiB: round(m.heapUsed / MiB, 1),
          ...(m.heapTotal === undefined ? {} : { heapTotalMiB: round(m.heapTotal / MiB, 1) }),
          externalMiB: round(m.external / MiB, 1),
          arrayBuffersMiB: round(m.arrayBuffers / MiB, 1),
          ...(m.afterGc === undefined ? {} : { liveHeapMiB: round(m.afterGc.heapUsed / MiB, 1) }),
        };
      }
    }
    if (Date.now() > deadline)
      throw new Error(`the gateway's memory probe did not answer:\n${proc.output()}`);
    await sleep(10);
  }
}
