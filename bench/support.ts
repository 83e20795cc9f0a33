/**
 * Process and HTTP helpers for bench/run.ts: every server and every load generator runs in a
 * child process of its own; this process only orchestrates and, for the latency-only
 * scenarios (bursts, misses, start-up), sends requests itself. Loopback only, every wait bounded.
 */
import { type ChildProcess, execFileSync, fork, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { freePort } from '../test/support/process.js';
import type { FakeNodeCommand } from './fake-node-process.js';
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
