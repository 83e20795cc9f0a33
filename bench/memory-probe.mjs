/**
 * Preloaded into a gateway by the soak case (`node --import bench/memory-probe.mjs …`): on
 * SIGUSR2 it writes `process.memoryUsage()` and a sequence number as JSON to the file named by
 * MEMORY_PROBE_FILE (with MEMORY_PROBE_GC=1 under --expose-gc, also after a full collection).
 * No timer, nothing else: between two samples it costs the gateway nothing.
 */
import fs from 'node:fs';

const file = process.env.MEMORY_PROBE_FILE;
let seq = 0;
if (file !== undefined) {
  process.on('SIGUSR2', () => {
    seq += 1;
    const tmp = `${file}.tmp`;
    const usage = process.memoryUsage();
    // With MEMORY_PROBE_GC=1 (and node --expose-gc): also the figures after a full collection,
    // which tell live memory from garbage not yet collected.
    const gc = process.env.MEMORY_PROBE_GC === '1' ? globalThis.gc : undefined;
    if (gc !== undefined) gc();
    const afterGc = gc === undefined ? undefined : process.memoryUsage();
    fs.writeFileSync(tmp, JSON.stringify({ seq, ...usage, ...(afterGc === undefined ? {} : { afterGc }) }));
    fs.renameSync(tmp, file);
  });
}
