/**
 * The load generator: wrk (Debian package `wrk`, /usr/bin/wrk), a C event loop that needs a
 * fraction of a core where a Node load generator saturates its own core before a bare Node server
 * does (autocannon used ~80 % of a core against bare node:http, which understated the gap to the
 * Node ceiling). One thread (`-t1`), N connections, closed loop (each connection sends its next
 * request as soon as the answer arrived).
 *
 * A Lua script (written per run) sets the POST body, or builds one body per request when the load
 * is spread over many cache keys, and its `done()` prints one line of JSON: counts, latency
 * percentiles (wrk keeps them in microseconds, full resolution) and wrk's own CPU time, read from
 * /proc/self/stat after its threads have finished (a process's utime/stime include its ended
 * threads), so the load generator's cost is measured by the process itself, over the run only.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const WRK = process.env.WRK ?? '/usr/bin/wrk';

export interface LoadSpec {
  /** Full URL, path included. */
  readonly url: string;
  readonly method: 'GET' | 'POST';
  /** A fixed body (every request identical). */
  readonly body?: string;
  /**
   * Spread the requests over `count` distinct bodies: `${prefix}${id}${suffix}` with `id` uniform
   * in [0, count). Each body is built per request by the Lua script (the same way at every size).
   */
  readonly spread?: { readonly count: number; readonly prefix: string; readonly suffix: string };
  /**
   * Every request a fresh random value of a fixed number of hex digits: `${prefix}${hex}${suffix}`,
   * e.g. a Clarity uint (`0x01` and 32 digits) that must keep its width to be valid. The digits
   * come 4 at a time from 16-bit random numbers, which every Lua's string.format prints exactly
   * (wider numbers are not safe in %x on every wrk build). Seeded per run from `seed`, so that two
   * runs started within the same second do not send the same values.
   */
  readonly spreadHex?: {
    readonly prefix: string;
    readonly suffix: string;
    readonly digits: number;
    readonly seed?: number;
  };
  /**
   * Cycle through these bodies, one per request in turn (each wrk connection's requests come from
   * one Lua state, so the rotation is per thread: -t1, one rotation).
   */
  readonly bodies?: readonly string[];
  /** Extra request headers (e.g. an API key). */
  readonly headers?: Readonly<Record<string, string>>;
  readonly connections: number;
  /** Unmeasured run first (a wrk run of its own), same connections and requests. */
  readonly warmupSeconds: number;
  /** Whole seconds (wrk's -d). */
  readonly durationSeconds: number;
  /** Run wrk on these CPUs only (taskset's list, e.g. "0"), away from the servers it loads. */
  readonly cpus?: string;
}

export interface LoadResult {
  /** Successful responses per second over the measured run. */
  readonly rps: number;
  readonly ok: number;
  /** Answers with a status ≥ 400 (wrk's "status" errors). */
  readonly non2xx: number;
  /** Connect, read and write errors. */
  readonly errors: number;
  readonly timeouts: number;
  readonly durationSeconds: number;
  /** CPU used by wrk over the measured run, % of one core: near 100 = it is the bottleneck. */
  readonly loadGeneratorCpuPct: number;
  /** Response times, ms (wrk's histogram has microsecond resolution). */
  readonly latencyMs: {
    readonly p50: number;
    readonly p90: number;
    readonly p99: number;
    readonly p999: number;
    readonly max: number;
    readonly mean: number;
  };
}

/** A Lua string literal for any text (long brackets would break on `]]` in a body). */
const luaString = (s: string): string =>
  `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n').replace(/\r/g, '\\r')}"`;

export function luaScript(spec: LoadSpec, clockTicks: number): string {
  const lines = [
    `wrk.method = ${luaString(spec.method)}`,
    `wrk.headers["Content-Type"] = "application/json"`,
    ...Object.entries(spec.headers ?? {}).map(([k, v]) => `wrk.headers[${luaString(k)}] = ${luaString(v)}`),
  ];
  if (
    spec.body !== undefined &&
    spec.spread === undefined &&
    spec.spreadHex === undefined &&
    spec.bodies === undefined
  )
    lines.push(`wrk.body = ${luaString(spec.body)}`);
  if (spec.bodies !== undefined) {
    lines.push(
      `local bodies = { ${spec.bodies.map(luaString).join(', ')} }`,
      `local turn = 0`,
      `function request() turn = turn % #bodies + 1 return wrk.format(nil, nil, nil, bodies[turn]) end`,
    );
  }
  if (spec.spread !== undefined) {
    const { count, prefix, suffix } = spec.spread;
    lines.push(
      `local prefix, suffix, count = ${luaString(prefix)}, ${luaString(suffix)}, ${Math.floor(count)}`,
      // Each wrk thread has a Lua state of its own, seeded in init().
      `function init(args) math.randomseed(os.time()) end`,
      `function request() return wrk.format(nil, nil, nil, prefix .. math.random(0, count - 1) .. suffix) end`,
    );
  }
  if (spec.spreadHex !== undefined) {
    const { prefix, suffix, digits } = spec.spreadHex;
    if (!Number.isInteger(digits) || digits < 4 || digits % 4 !== 0)
      throw new Error(`spreadHex: digits must be a multiple of 4, got ${digits}`);
    const seed = spec.spreadHex.seed ?? Math.floor(Math.random() * 2 ** 31);
    lines.push(
      `local prefix, suffix, groups = ${luaString(prefix)}, ${luaString(suffix)}, ${digits / 4}`,
      `local parts = {}`,
      `function init(args) math.randomseed(${seed}) end`,
      `function request()`,
      `  for i = 1, groups do parts[i] = string.format("%04x", math.random(0, 65535)) end`,
      `  return wrk.format(nil, nil, nil, prefix .. table.concat(parts) .. suffix)`,
      `end`,
    );
  }
  lines.push(
    `function done(summary, latency, requests)`,
    `  local f = io.open("/proc/self/stat", "r")`,
    `  local stat = f:read("*a")`,
    `  f:close()`,
    // Fields after the command name (which may hold spaces): utime is the 12th, stime the 13th.
    `  local rest = stat:sub(stat:match(".*()%)") + 2)`,
    `  local fields = {}`,
    `  for v in rest:gmatch("%S+") do fields[#fields + 1] = v end`,
    `  local cpuMs = (tonumber(fields[12]) + tonumber(fields[13])) * 1000 / ${clockTicks}`,
    `  local e = summary.errors`,
    `  io.write(string.format('{"requests":%d,"durationUs":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"cpuMs":%.1f,"p50":%d,"p90":%d,"p99":%d,"p999":%d,"max":%d,"mean":%.1f}\\n',`,
    `    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout, cpuMs,`,
    `    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency:percentile(99.9),`,
    `    latency.max, latency.mean))`,
    `end`,
  );
  return `${lines.join('\n')}\n`;
}

interface WrkDone {
  requests: number;
  durationUs: number;
  connect: number;
  read: number;
  write: number;
  status: number;
  timeout: number;
  cpuMs: number;
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
  mean: number;
}

/** Called with wrk's pid once it is spawned (the caller may sample /proc/<pid> meanwhile). */
export type OnSpawn = (pid: number) => void;

function runWrk(spec: LoadSpec, seconds: number, clockTicks: number, onSpawn?: OnSpawn): Promise<WrkDone> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'clarity-wrk-'));
  const script = path.join(dir, 'load.lua');
  fs.writeFileSync(script, luaScript(spec, clockTicks));
  const args = [
    '-t1',
    `-c${spec.connections}`,
    `-d${Math.max(1, Math.round(seconds))}s`,
    '--timeout',
    '10s',
    '-s',
    script,
    spec.url,
  ];
  const [command, argv] =
    spec.cpus === undefined ? [WRK, args] : ['taskset', ['-c', spec.cpus, WRK, ...args]];
  return new Promise((resolve, reject) => {
    const child = execFile(
      command,
      argv,
      { timeout: (seconds + 60) * 1000, maxBuffer: 1 << 20 },
      (err, stdout, stderr) => {
        fs.rmSync(dir, { recursive: true, force: true });
        const line = stdout.split('\n').find((l) => l.startsWith('{"requests"'));
        if (err !== null || line === undefined) {
          reject(
            new Error(`wrk ${args.join(' ')} failed: ${err?.message ?? 'no summary'}\n${stdout}\n${stderr}`),
          );
          return;
        }
        resolve(JSON.parse(line) as WrkDone);
      },
    );
    if (child.pid !== undefined) onSpawn?.(child.pid);
  });
}

export async function generateLoad(
  spec: LoadSpec,
  clockTicks: number,
  onSpawn?: OnSpawn,
): Promise<LoadResult> {
  if (spec.warmupSeconds > 0) await runWrk(spec, spec.warmupSeconds, clockTicks);
  const d = await runWrk(spec, spec.durationSeconds, clockTicks, onSpawn);
  const seconds = d.durationUs / 1e6;
  const ok = d.requests - d.status;
  const ms3 = (us: number): number => Math.round(us) / 1000;
  return {
    rps: Math.round(ok / seconds),
    ok,
    non2xx: d.status,
    errors: d.connect + d.read + d.write,
    timeouts: d.timeout,
    durationSeconds: Math.round(seconds * 1000) / 1000,
    loadGeneratorCpuPct: Math.round(d.cpuMs / 10 / seconds),
    latencyMs: {
      p50: ms3(d.p50),
      p90: ms3(d.p90),
      p99: ms3(d.p99),
      p999: ms3(d.p999),
      max: ms3(d.max),
      mean: ms3(d.mean),
    },
  };
}
