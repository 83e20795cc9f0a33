/**
 * Process, HTTP and record helpers for the cases (bench/cases/*.ts) and bench/run.ts: every
 * server and every load generator runs in a child process of its own; this process only
 * orchestrates and, for the latency-only scenarios (bursts, misses, start-up), sends requests
 * itself. Loopback only, every wait bounded.
 */
import { type ChildProcess, execFileSync, fork, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseClarityValue, toHex } from '../src/clarity/index.js';
import { MAINNET_ADDR } from '../test/support/fixtures.js';
import { freePort } from '../test/support/process.js';
import { CONTRACT, type FakeNodeCommand, RESULT_HEX } from './fake-node-process.js';
import { generateLoad, type LoadResult, type LoadSpec } from './load.js';

export const ROOT = path.resolve(import.meta.dirname, '..');
export { freePort };

/** Every child this run started, so that a failure still ends them (by pid, nothing else). */
const children = new Set<ChildProcess>();

export function killChildren(): void {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  children.clear();
}

/** The environment of a child: ours, minus NODE_OPTIONS (the servers run with exactly the flags given). */
function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  delete env.NODE_OPTIONS;
  return env;
}

export interface Proc {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly exited: Promise<number | null>;
  /** The last 64 KiB of stdout+stderr. */
  output(): string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves on exit. */
  stop(graceMs?: number): Promise<number | null>;
}

function track(child: ChildProcess): Proc {
  children.add(child);
  let out = '';
  const keep = (chunk: Buffer): void => {
    out = (out + chunk.toString()).slice(-65_536);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      children.delete(child);
      resolve(code);
    }),
  );
  return {
    child,
    pid: child.pid ?? -1,
    exited,
    output: () => out,
    stop: async (graceMs = 10_000) => {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

export function spawnNode(args: string[], env: Record<string, string> = {}): Proc {
  return track(
    spawn(process.execPath, args, { cwd: ROOT, env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] }),
  );
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export interface HttpAnswer {
  readonly status: number;
  readonly body: string;
}

/** One HTTP request; `agent` false = a connection of its own. */
export function httpRequest(
  url: string,
  opts: { method?: string; body?: string; agent?: http.Agent | false; timeoutMs?: number } = {},
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: opts.method ?? (opts.body === undefined ? 'GET' : 'POST'),
        agent: opts.agent ?? false,
        headers: opts.body === undefined ? {} : { 'content-type': 'application/json' },
        timeout: opts.timeoutMs ?? 30_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`timeout: ${url}`)));
    req.on('error', reject);
    req.end(opts.body);
  });
}

/** Poll until `url` answers 200 (every 20 ms, at most `timeoutMs`), or fail if `proc` exits first. */
export async function waitForHttp(url: string, proc: Proc, opts: { body?: string; timeoutMs?: number } = {}) {
  const deadline = performance.now() + (opts.timeoutMs ?? 30_000);
  let exited = false;
  proc.exited.then(() => {
    exited = true;
  });
  let last = '';
  while (performance.now() < deadline) {
    if (exited) throw new Error(`process ${proc.pid} exited before answering ${url}:\n${proc.output()}`);
    try {
      const res = await httpRequest(url, {
        ...(opts.body === undefined ? {} : { body: opts.body }),
        timeoutMs: 2000,
      });
      if (res.status === 200) return;
      last = `HTTP ${res.status} ${res.body.slice(0, 200)}`;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    await sleep(20);
  }
  throw new Error(`${url} did not answer 200 in time (last: ${last}):\n${proc.output()}`);
}

/**
 * Spawn-to-first-200 time of a server: a request is retried at once (setImmediate) on every
 * connection error, so the figure is not rounded up to a polling period. Bounded by timeoutMs.
 */
export function timeToFirstAnswer(
  start: () => Proc,
  url: string,
  body: string,
  timeoutMs = 15_000,
): Promise<{ ms: number; proc: Proc; attempts: number }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const proc = start();
    let attempts = 0;
    let done = false;
    proc.exited.then((code) => {
      if (!done) {
        done = true;
        reject(new Error(`server exited (${code}) before answering:\n${proc.output()}`));
      }
    });
    const attempt = (): void => {
      if (done) return;
      if (performance.now() - t0 > timeoutMs) {
        done = true;
        reject(new Error(`no answer from ${url} within ${timeoutMs} ms:\n${proc.output()}`));
        return;
      }
      attempts += 1;
      httpRequest(url, { body, timeoutMs: 5000 }).then(
        (res) => {
          if (res.status === 200) {
            if (!done) {
              done = true;
              resolve({ ms: performance.now() - t0, proc, attempts });
            }
          } else setImmediate(attempt);
        },
        () => setImmediate(attempt),
      );
    };
    attempt();
  });
}

/** Time from spawn to exit of `node args` (the start-up reference). */
export async function timeToExit(args: string[]): Promise<number> {
  const t0 = performance.now();
  const proc = spawnNode(args);
  const code = await proc.exited;
  if (code !== 0) throw new Error(`node ${args.join(' ')} exited ${code}: ${proc.output()}`);
  return performance.now() - t0;
}

// --- the fake node in its own process ---

export interface FakeNodeProc {
  readonly url: string;
  readonly proc: Proc;
  call(command: FakeNodeCommand): Promise<unknown>;
  count(kind?: 'call-read' | 'interface'): Promise<number>;
  stop(): Promise<void>;
}

export async function startFakeNodeProcess(): Promise<FakeNodeProc> {
  const child = fork(path.join(ROOT, 'bench/fake-node-process.ts'), [], {
    cwd: ROOT,
    env: childEnv({}),
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  const proc = track(child);
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let nextId = 1;
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`fake node did not start:\n${proc.output()}`)), 30_000);
    child.on('message', (msg: { ready?: string; id?: number; result?: unknown; error?: string }) => {
      if (msg.ready !== undefined) {
        clearTimeout(timer);
        resolve(msg.ready);
        return;
      }
      const waiter = msg.id === undefined ? undefined : pending.get(msg.id);
      if (waiter === undefined) return;
      pending.delete(msg.id!);
      if (msg.error !== undefined) waiter.reject(new Error(msg.error));
      else waiter.resolve(msg.result);
    });
    proc.exited.then((code) => reject(new Error(`fake node exited (${code}):\n${proc.output()}`)));
  });
  const call = (command: FakeNodeCommand): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve, reject });
      child.send({ id, ...command });
    });
  return {
    url,
    proc,
    call,
    count: async (kind) =>
      (await call(kind === undefined ? { cmd: 'count' } : { cmd: 'count', kind })) as number,
    stop: async () => {
      if (child.connected) child.disconnect();
      await proc.stop(5000);
    },
  };
}

// --- the gateway and the reference server ---

export interface Server {
  readonly url: string;
  readonly proc: Proc;
}

export interface GatewayOptions {
  readonly entry: string;
  readonly upstream: string;
  readonly dataDir: string;
  readonly env?: Record<string, string>;
  /** Extra node flags (e.g. --cpu-prof). */
  readonly nodeFlags?: string[];
}

export function gatewayEnv(o: GatewayOptions, port: number): Record<string, string> {
  return {
    PORT: String(port),
    HOST: '127.0.0.1',
    CACHE_STORE: 'sqlite',
    DATA_DIR: o.dataDir,
    LOG_LEVEL: 'warn',
    STACKS_API_URL_MAINNET: o.upstream,
    STACKS_API_URL_TESTNET: o.upstream,
    UPSTREAM_RATE_LIMIT_PER_MINUTE: '1000000',
    ...o.env,
  };
}

export async function startGateway(o: GatewayOptions): Promise<Server> {
  const port = await freePort();
  const proc = spawnNode([...(o.nodeFlags ?? []), o.entry], gatewayEnv(o, port));
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/contract-calls/known-contracts`, proc);
  return { url, proc };
}

/** A reference server (bench/reference-server.ts, or `script`) answering `responses` by path. */
export async function startReference(
  responses: Record<string, string>,
  dir: string,
  script = 'bench/reference-server.ts',
  nodeFlags: string[] = [],
): Promise<Server> {
  const port = await freePort();
  const file = path.join(dir, 'reference-responses.json');
  fs.writeFileSync(file, JSON.stringify(responses));
  const proc = spawnNode([...nodeFlags, '--import', 'tsx', script], {
    PORT: String(port),
    REFERENCE_RESPONSES: file,
  });
  const url = `http://127.0.0.1:${port}`;
  const [probe] = Object.keys(responses);
  await waitForHttp(`${url}${probe}`, proc, { body: '{}' });
  return { url, proc };
}

// --- the load generator (wrk, a process of its own) ---

export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const result = await generateLoad(spec, clockTicksPerSecond());
  if (result.ok === 0)
    throw new Error(`load generator got no successful answer from ${spec.url}: ${JSON.stringify(result)}`);
  return result;
}

// --- measurements ---

export interface Memory {
  /** Resident set size now, MiB. */
  readonly rssMiB: number;
  /** Peak resident set size, MiB. */
  readonly hwmMiB: number;
}

export function memoryOf(pid: number): Memory {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string): number => {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
    if (m === null) throw new Error(`no ${field} in /proc/${pid}/status`);
    return Number(m[1]);
  };
  const mib = (k: number): number => Math.round((k / 1024) * 10) / 10;
  return { rssMiB: mib(kb('VmRSS')), hwmMiB: mib(kb('VmHWM')) };
}

let clockTicks: number | undefined;

/** The kernel's clock ticks per second (the unit of /proc/<pid>/stat's CPU times). */
export function clockTicksPerSecond(): number {
  clockTicks ??= Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
  return clockTicks;
}

/** CPU time (user + system, every thread) a process has used so far, ms, from /proc/<pid>/stat. */
export function cpuMsOf(pid: number): number {
  const ticks = clockTicksPerSecond();
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) / ticks) * 1000;
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

/**
 * Format files written under bench/ the way `biome check` wants them (it covers bench/**, JSON
 * and Markdown included), so that a run leaves the lint clean. A failure only warns.
 */
export function formatWithBiome(files: string[]): void {
  try {
    execFileSync(path.join(ROOT, 'node_modules/.bin/biome'), ['format', '--write', ...files], {
      cwd: ROOT,
      stdio: 'ignore',
    });
  } catch (err) {
    process.stderr.write(
      `warning: biome format failed: ${err instanceof Error ? err.message : String(err)}\n`,
    );
  }
}

export const round = (v: number, digits = 2): number => {
  const f = 10 ** digits;
  return Math.round(v * f) / f;
};

// --- the record of a case (bench/results/<case>.json), read back by bench/report.ts ---

/** One figure of a case: what BENCHMARKS.md's table shows. */
export interface Row {
  readonly figure: string;
  readonly value: string;
  readonly reference: string;
  readonly ratio: string;
  readonly target: string;
  /** MET, MISSED, `n/a (…)`, or `—` (reported, no target). */
  readonly status: string;
  /** wrk's own CPU, % of one core, in the gateway's runs / the reference's runs (medians); `—` without wrk. */
  readonly loadCpu?: string;
}

/** What a case's `run()` returns. */
export interface CaseOutput {
  /** The settings the figures depend on (connections, durations, rounds, …). */
  readonly settings: Record<string, unknown>;
  /** The figures with their goals and MET / MISSED. */
  readonly rows: Row[];
  /** How the figures are taken, Markdown lines (BENCHMARKS.md's "How each figure is taken"). */
  readonly notes: string[];
  /** The raw figures. */
  readonly results: unknown;
}

/** bench/results/<case>.json. */
export interface CaseRecord extends CaseOutput {
  readonly case: string;
  /** The case's one-line title (its scenario column). */
  readonly title: string;
  readonly startedAt: string;
  readonly elapsedS: number;
  readonly command: string;
  readonly gatewayEntry: string;
  readonly commit: string;
  readonly machine: Machine;
  /** MET when every row with a goal is MET, MISSED when one is MISSED, else `—`. */
  readonly status: string;
}

export interface BenchCase {
  readonly title: string;
  run(): Promise<CaseOutput>;
}

export const RESULTS_DIR = path.join(ROOT, 'bench/results');

/** `QUICK=1` (or `run.ts --quick`): short runs, for trying the harness out. */
export const QUICK = process.env.QUICK === '1';

const T0 = performance.now();
export const log = (msg: string): void => {
  process.stderr.write(`[bench ${((performance.now() - T0) / 1000).toFixed(1).padStart(6)} s] ${msg}\n`);
};

/** The gateway file run: `GATEWAY=<file>`, else what `npm start` runs (package.json "main"). */
export function gatewayEntry(): string {
  if (process.env.GATEWAY !== undefined) return path.resolve(process.env.GATEWAY);
  const main = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { main?: string })
    .main;
  return path.join(ROOT, main ?? UNBUNDLED);
}
/** The tsc output, unbundled. */
export const UNBUNDLED = 'dist/src/main.js';

export function requireGatewayEntry(): string {
  const entry = gatewayEntry();
  if (!fs.existsSync(entry)) throw new Error(`${entry} does not exist: run \`npm run build\` first`);
  return entry;
}

let tmpRoot: string | undefined;
let dirs = 0;
/** A fresh directory under this run's temporary root (removed by `cleanup()`). */
export function freshDir(name: string): string {
  tmpRoot ??= fs.mkdtempSync(path.join(os.tmpdir(), 'clarity-bench-'));
  const dir = path.join(tmpRoot, `${++dirs}-${name}`);
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

/** Ends every child this run started and removes its temporary files. */
export function cleanup(): void {
  killChildren();
  if (tmpRoot !== undefined) fs.rmSync(tmpRoot, { recursive: true, force: true });
  tmpRoot = undefined;
}

export function gitCommit(): string {
  try {
    const sha = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT }).toString().trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src'], { cwd: ROOT })
      .toString()
      .trim();
    return dirty === '' ? sha : `${sha} (src/ has uncommitted changes)`;
  } catch {
    return 'unknown';
  }
}

export interface Machine {
  readonly nproc: number;
  readonly cpu: string;
  readonly memoryGiB: number;
  readonly node: string;
  readonly os: string;
  readonly loadAverageAtStart: number[];
}

export function machine(): Machine {
  const cpuinfo = fs.readFileSync('/proc/cpuinfo', 'utf8');
  const meminfo = fs.readFileSync('/proc/meminfo', 'utf8');
  const memKb = Number(/^MemTotal:\s+(\d+)/m.exec(meminfo)?.[1] ?? 0);
  return {
    nproc: os.availableParallelism(),
    cpu: /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1]?.trim() ?? 'unknown',
    memoryGiB: round(memKb / 1024 / 1024, 1),
    node: process.version,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    loadAverageAtStart: os.loadavg().map((v) => round(v, 2)),
  };
}

/** MET / MISSED over the rows that have a goal. */
export function overallStatus(rows: readonly Row[]): string {
  const judged = rows.filter((r) => r.status === 'MET' || r.status === 'MISSED');
  if (judged.length === 0) return '—';
  return judged.every((r) => r.status === 'MET') ? 'MET' : 'MISSED';
}

/** Run one case and write its record to bench/results/<name>.json. */
export async function runCase(name: string, c: BenchCase): Promise<CaseRecord> {
  const startedAt = new Date().toISOString();
  const machineInfo = machine();
  const t0 = performance.now();
  log(`case ${name}: ${c.title}`);
  const out = await c.run();
  const record: CaseRecord = {
    case: name,
    title: c.title,
    startedAt,
    elapsedS: round((performance.now() - t0) / 1000, 1),
    command: `node --import tsx bench/run.ts ${name}`,
    gatewayEntry: path.relative(ROOT, gatewayEntry()),
    commit: gitCommit(),
    machine: machineInfo,
    status: overallStatus(out.rows),
    ...out,
    settings: QUICK ? { ...out.settings, quick: true } : out.settings,
  };
  fs.mkdirSync(RESULTS_DIR, { recursive: true });
  const file = path.join(RESULTS_DIR, `${name}.json`);
  fs.writeFileSync(file, `${JSON.stringify(record, null, 2)}\n`);
  formatWithBiome([path.relative(ROOT, file)]);
  for (const r of record.rows) {
    process.stdout.write(
      `${name.padEnd(20)} ${r.status.padEnd(7)} ${r.figure.slice(0, 60).padEnd(60)} ${r.value.padStart(14)}  ref ${r.reference.padStart(14)}  ${r.ratio.padStart(7)}  ${r.target}\n`,
    );
  }
  log(`case ${name}: ${record.status} in ${record.elapsedS} s, raw figures in ${path.relative(ROOT, file)}`);
  return record;
}

/** `node --import tsx bench/cases/<name>.ts`: run that case alone (as bench/run.ts <name> does). */
export function runStandalone(moduleFile: string, c: BenchCase): void {
  if (process.argv[1] === undefined || path.resolve(process.argv[1]) !== moduleFile) return;
  const name = path.basename(moduleFile, '.ts');
  process.on('SIGINT', () => {
    cleanup();
    process.exit(130);
  });
  runCase(name, c).then(
    () => {
      cleanup();
      process.exit(0);
    },
    (err: unknown) => {
      process.stderr.write(
        `bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
      );
      cleanup();
      process.exit(1);
    },
  );
}

// --- formatting of figures ---

export const int = (n: number): string => Math.round(n).toLocaleString('en-US');
export const ms = (n: number, digits = 2): string => `${n.toFixed(digits)} ms`;
export const x = (n: number, digits = 2): string => `${n.toFixed(digits)}×`;
export const mark = (ok: boolean): string => (ok ? 'MET' : 'MISSED');

// --- the demo contract of the fake node (bench/fake-node-process.ts) ---

export const RO_PATH = `/contract-calls/read-only/${MAINNET_ADDR}/${CONTRACT}/get-info`;
export const RO_BODY = '{"functionArgs":[]}';
export const ENTRY_PATH = `/contract-calls/read-only/${MAINNET_ADDR}/${CONTRACT}/get-entry`;
export const entryBody = (id: number | bigint): string =>
  `{"functionArgs":[{"type":"uint","value":"${id}"}]}`;
export const DECODE_PATH = '/contract-calls/decode-clarity-value';
export const DECODE_BODY = JSON.stringify({ clarityValue: RESULT_HEX });
export const ABI_PATH = `/contract-calls/abi/${MAINNET_ADDR}/${CONTRACT}`;

/** Load settings shared by the wrk cases: `-t1 -c64`, 2 s warm-up then 8 s (quick: 1 s then 3 s). */
export const CONNECTIONS = 64;
export const WARMUP_S = QUICK ? 1 : 2;
export const DURATION_S = QUICK ? 3 : 8;

export async function expectOk(url: string, body?: string): Promise<string> {
  const res = await httpRequest(url, body === undefined ? {} : { body });
  if (res.status !== 200) throw new Error(`${url}: HTTP ${res.status} ${res.body.slice(0, 300)}`);
  return res.body;
}

/** The gateway under test (`gatewayEntry()`), SQLite store, on `upstream`. */
export const gateway = (
  upstream: string,
  dataDir: string,
  env: Record<string, string> = {},
  nodeFlags: string[] = [],
): Promise<Server> => startGateway({ entry: requireGatewayEntry(), upstream, dataDir, env, nodeFlags });

export const load = (url: string, body: string, extra: Partial<LoadSpec> = {}): LoadSpec => ({
  url,
  method: 'POST',
  body,
  connections: CONNECTIONS,
  warmupSeconds: WARMUP_S,
  durationSeconds: DURATION_S,
  ...extra,
});

/** A measured run plus what the server spent on it. */
export interface Measured extends LoadResult {
  /** Server CPU time (user + system, all threads) per answered request over the measured run, µs. */
  readonly serverCpuUsPerRequest: number;
  /** Server CPU over the measured run, % of one core. */
  readonly serverCpuPct: number;
}

/**
 * Load `url` from a load-generator process: a warm-up run first (a process of its own, not
 * measured), then the measured run, with the server's CPU time read from /proc around it.
 */
export async function measure(
  server: Server,
  url: string,
  body: string,
  extra: Partial<LoadSpec> = {},
): Promise<Measured> {
  const spec = load(url, body, extra);
  const check = (r: LoadResult): LoadResult => {
    if (r.non2xx > 0 || r.errors > 0) {
      throw new Error(`${url}: ${r.non2xx} non-2xx answers and ${r.errors} errors under load`);
    }
    return r;
  };
  if (spec.warmupSeconds > 0) {
    check(await runLoad({ ...spec, durationSeconds: spec.warmupSeconds, warmupSeconds: 0 }));
  }
  const cpu0 = cpuMsOf(server.proc.pid);
  const result = check(await runLoad({ ...spec, warmupSeconds: 0 }));
  const cpuMs = cpuMsOf(server.proc.pid) - cpu0;
  return {
    ...result,
    serverCpuUsPerRequest: round((cpuMs * 1000) / Math.max(1, result.ok + result.non2xx), 1),
    serverCpuPct: Math.round((cpuMs / (result.durationSeconds * 1000)) * 100),
  };
}

export interface HitFigures {
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  readonly cpuUsPerRequest: number;
  readonly rounds: Measured[];
}

/** Each figure is the median of its rounds. */
export function medianRound(rounds: Measured[]): HitFigures {
  return {
    rps: median(rounds.map((r) => r.rps)),
    p50: median(rounds.map((r) => r.latencyMs.p50)),
    p99: median(rounds.map((r) => r.latencyMs.p99)),
    cpuUsPerRequest: median(rounds.map((r) => r.serverCpuUsPerRequest)),
    rounds,
  };
}

/** Median wrk CPU of some measured runs, "%". */
export const cpuOf = (f: { rounds: readonly { loadGeneratorCpuPct: number }[] } | undefined): string => {
  if (f === undefined || f.rounds.length === 0) return '—';
  const v = f.rounds.map((r) => r.loadGeneratorCpuPct).sort((a, b) => a - b);
  return `${v[v.length >> 1]} %`;
};

/** A miss (fresh `get-entry` argument) through a gateway, one keep-alive connection: its time in ms. */
export async function timedMiss(gwUrl: string, id: bigint, agent: http.Agent): Promise<number> {
  const t = performance.now();
  const res = await httpRequest(`${gwUrl}${ENTRY_PATH}`, { body: entryBody(id), agent });
  const ms_ = performance.now() - t;
  if (res.status !== 200) throw new Error(`miss: HTTP ${res.status} ${res.body.slice(0, 300)}`);
  return ms_;
}

/** The same call-read sent straight to a fake node. */
export async function timedDirect(nodeUrl: string, id: bigint, agent: http.Agent): Promise<number> {
  const body = JSON.stringify({
    sender: MAINNET_ADDR,
    arguments: [toHex(parseClarityValue({ type: 'uint', value: String(id) }))],
  });
  const t = performance.now();
  const res = await httpRequest(`${nodeUrl}/v2/contracts/call-read/${MAINNET_ADDR}/${CONTRACT}/get-entry`, {
    body,
    agent,
  });
  const ms_ = performance.now() - t;
  if (res.status !== 200) throw new Error(`direct: HTTP ${res.status} ${res.body.slice(0, 300)}`);
  return ms_;
}

/** Rotate who goes first: [a, b, c], [b, c, a], [c, a, b], … */
export const rotate = <T>(items: readonly T[], i: number): T[] =>
  items.map((_, k) => items[(k + i) % items.length]!);

/**
 * Sequential misses against direct calls: `count` misses (a fresh `get-entry` argument each)
 * through the gateway and as many call-reads straight to the node, one at a time on two
 * keep-alive connections, taking turns at going first, after `warm` unmeasured of each.
 * Their times in ms, in order.
 */
export async function sequentialMisses(
  gwUrl: string,
  nodeUrl: string,
  count: number,
  warm: number,
): Promise<{ viaGateway: number[]; direct: number[] }> {
  const agents = [0, 1].map(() => new http.Agent({ keepAlive: true, maxSockets: 1 }));
  const viaGateway: number[] = [];
  const direct: number[] = [];
  try {
    for (let i = 0; i < count + warm; i++) {
      const id = 7_000_000_000n + BigInt(i);
      let g = 0;
      let d = 0;
      const steps = [
        async () => {
          g = await timedMiss(gwUrl, id, agents[0]!);
        },
        async () => {
          d = await timedDirect(nodeUrl, id, agents[1]!);
        },
      ];
      for (const step of rotate(steps, i)) await step();
      if (i >= warm) {
        viaGateway.push(g);
        direct.push(d);
      }
    }
  } finally {
    for (const a of agents) a.destroy();
  }
  return { viaGateway, direct };
}

/** A figure's rounds, as measured (HitFigures). */
export interface Rounds {
  readonly rounds: readonly {
    rps: number;
    latencyMs: { p50: number; p99: number };
    serverCpuUsPerRequest: number;
  }[];
}
export type PickFigure = (round: Rounds['rounds'][number]) => number;

/**
 * The ratio of a figure to its reference: the median of the per-round ratios, each round's run
 * against the reference run measured next to it. On a shared machine a disturbed stretch hits
 * one round of one side; pairing keeps it from skewing the ratio as a ratio of medians would.
 */
export function pairedRatio(g: Rounds, r: Rounds, pick: PickFigure, scale = 1): number {
  const n = Math.min(g.rounds.length, r.rounds.length);
  const ratios: number[] = [];
  for (let i = 0; i < n; i++) ratios.push((pick(g.rounds[i]!) * scale) / pick(r.rounds[i]!));
  return median(ratios);
}

/** Start a gateway on an upstream list, or say why this gateway has no upstream lists. */
export async function tryGateway(
  upstreams: string,
  dir: string,
  env: Record<string, string> = {},
): Promise<Server | { absent: string }> {
  try {
    return await gateway(upstreams, dir, env);
  } catch (err) {
    // The gateway's own words when it refused to start (the line naming the variable), if any.
    const lines = (err instanceof Error ? err.message : String(err)).split('\n');
    const said = lines.find((l) => l.includes('STACKS_API_URL')) ?? lines.find((l) => /\S/.test(l)) ?? '?';
    return { absent: `a comma-separated STACKS_API_URL_MAINNET is refused: ${said.trim().slice(0, 200)}` };
  }
}
