/**
 * How far V8 lets the JavaScript heap grow past what survived its last full collection before
 * it collects again. V8 picks a factor of up to 4× by itself; under a cache's churn (entries
 * promoted, evicted, replaced, each a little garbage that lived long enough to be tenured) that
 * let the heap reach three times its live size: with a million entries spread uniformly, 55 MiB
 * live, 185 MiB of heap and a 360 MiB peak RSS. A fixed 1.5× keeps the peak near 215 MiB with
 * the same throughput (BENCHMARKS.md, "scale"). It is a growth factor, not a ceiling: a larger
 * live set (a bigger HOT_CACHE_MAX_BYTES) still fits, it is only collected sooner.
 *
 * An operator's own `node --heap-growing-percent=N` wins.
 */
import v8 from 'node:v8';

export const HEAP_GROWING_PERCENT = 50;

/** Apply the growth factor unless the process was started with its own. */
export function tuneHeapGrowth(execArgv: readonly string[] = process.execArgv): boolean {
  if (execArgv.some((a) => /^--heap[-_]growing[-_]percent/.test(a))) return false;
  // Read by V8 each time it sets the next collection's limit, so setting it now takes effect.
  v8.setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  return true;
}
