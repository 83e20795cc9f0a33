/**
 * Preloaded into a gateway by the soak case (`node --import bench/memory-probe.mjs …`): on
 * SIGUSR2 it writes `process.memoryUsage()` and a sequence number as JSON to the file named by
 * MEMORY_PROBE_FILE. No timer, nothing else: between two samples it costs the gateway nothing.
 */
import fs from 'node:fs';

const file = process.env.MEMORY_PROBE_FILE;
let seq = 0;
if (file !== undefined) {
  process.on('SIGUSR2', () => {
    seq += 1;
    const tmp = `${file}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify({ seq, ...process.memoryUsage() }));
    fs.renameSync(tmp, file);
  });
}
