/**
 * The load generator, run by bench/run.ts in a process of its own (never in a server's
 * process): autocannon's engine, driven through its programmatic API so that
 *
 * - every response time is kept at full resolution (autocannon's own latency histogram, and so
 *   its CLI's `--json`, rounds to whole milliseconds, which is too coarse for hit latencies of
 *   one or two milliseconds), and
 * - request bodies can be spread over many cache keys (`spread`), which the CLI cannot do.
 *
 * Usage: node --import tsx bench/load.ts '<LoadSpec as JSON>'
 * Prints one line of JSON (a LoadResult) on stdout.
 */
import autocannon, { type Request, type Result } from 'autocannon';

export interface LoadSpec {
  /** Full URL, path included. */
  readonly url: string;
  readonly method: 'GET' | 'POST';
  /** A fixed body (every request identical). */
  readonly body?: string;
  /**
   * Spread the requests over `count` distinct bodies: `${prefix}${id}${suffix}` with `id` uniform
   * in [0, count). Each body is built per request (the same way at every size).
   */
  readonly spread?: { readonly count: number; readonly prefix: string; readonly suffix: string };
  readonly connections: number;
  /** A fixed request rate over all connections (req/s); unset = closed loop, as fast as answered. */
  readonly rate?: number;
  /** Unmeasured run first, same connections and requests. */
  readonly warmupSeconds: number;
  readonly durationSeconds: number;
}

export interface LoadResult {
  /** Successful (2xx) responses per second over the measured run. */
  readonly rps: number;
  readonly ok: number;
  readonly non2xx: number;
  readonly errors: number;
  readonly timeouts: number;
  readonly durationSeconds: number;
  /** CPU used by this load generator over the measured run, % of one core: near 100 = it is the bottleneck. */
  readonly loadGeneratorCpuPct: number;
  /** Response times of the 2xx responses, ms. */
  readonly latencyMs: {
    readonly p50: number;
    readonly p90: number;
    readonly p99: number;
    readonly p999: number;
    readonly max: number;
    readonly mean: number;
  };
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

function run(spec: LoadSpec, seconds: number, record: ((ms: number) => void) | undefined): Promise<Result> {
  const headers = { 'content-type': 'application/json' };
  let requests: Request[] | undefined;
  if (spec.spread !== undefined) {
    const { count, prefix, suffix } = spec.spread;
    requests = [
      {
        method: spec.method,
        headers,
        setupRequest: (req) => ({ ...req, body: `${prefix}${Math.floor(Math.random() * count)}${suffix}` }),
      },
    ];
  }
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: spec.url,
        connections: spec.connections,
        duration: seconds,
        timeout: 10,
        method: spec.method,
        headers,
        ...(spec.body === undefined ? {} : { body: spec.body }),
        ...(requests === undefined ? {} : { requests }),
        ...(spec.rate === undefined ? {} : { overallRate: spec.rate }),
      },
      (err, result) => (err === null ? resolve(result) : reject(err)),
    );
    if (record !== undefined) {
      instance.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
        if (status >= 200 && status < 300) record(ms);
      });
    }
  });
}

export async function generateLoad(spec: LoadSpec): Promise<LoadResult> {
  if (spec.warmupSeconds > 0) await run(spec, spec.warmupSeconds, undefined);
  let samples = new Float64Array(1 << 20);
  let n = 0;
  const record = (ms: number): void => {
    if (n === samples.length) {
      const bigger = new Float64Array(samples.length * 2);
      bigger.set(samples);
      samples = bigger;
    }
    samples[n++] = ms;
  };
  const cpu0 = process.cpuUsage();
  const result = await run(spec, spec.durationSeconds, record);
  const cpu = process.cpuUsage(cpu0);
  const sorted = samples.slice(0, n).sort();
  let sum = 0;
  for (const v of sorted) sum += v;
  const round = (v: number): number => Math.round(v * 1000) / 1000;
  return {
    rps: Math.round(result['2xx'] / result.duration),
    ok: result['2xx'],
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    durationSeconds: round(result.duration),
    loadGeneratorCpuPct: Math.round((cpu.user + cpu.system) / 10 / (result.duration * 1000)),
    latencyMs: {
      p50: round(percentile(sorted, 50)),
      p90: round(percentile(sorted, 90)),
      p99: round(percentile(sorted, 99)),
      p999: round(percentile(sorted, 99.9)),
      max: round(n === 0 ? Number.NaN : sorted[n - 1]!),
      mean: round(n === 0 ? Number.NaN : sum / n),
    },
  };
}

if (process.argv[1] !== undefined && import.meta.filename === process.argv[1]) {
  const spec = JSON.parse(process.argv[2] ?? '') as LoadSpec;
  generateLoad(spec).then(
    (result) => process.stdout.write(`${JSON.stringify(result)}\n`),
    (err: unknown) => {
      process.stderr.write(`load: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exit(1);
    },
  );
}
