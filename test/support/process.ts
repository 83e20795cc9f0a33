/** Runs the real service as a child process (`node --import tsx src/main.ts`), as users do. */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * A DATA_DIR of the child's own unless the test names one: the service's default is ./data of
 * the directory it runs in, the checkout, and a test that left the store at its default (SQLite)
 * wrote the user's cache there. Removed once the child has exited.
 */
function ownDataDir(env: Record<string, string>, exited: Promise<unknown>): Record<string, string> {
  if (env.DATA_DIR !== undefined) return {};
  const dir = mkdtempSync(path.join(os.tmpdir(), 'clarity-cache-service-data-'));
  void exited.then(() => rmSync(dir, { recursive: true, force: true }));
  return { DATA_DIR: dir };
}

/**
 * A port for a process that binds it later. It is drawn from below the kernel's ephemeral
 * range (32768-60999 on Linux), so no `listen(0)` and no outgoing connection of a test running
 * alongside can take it between this probe and the child's bind (a port from `listen(0)` was
 * once taken in that gap under CI's parallel load). It is proven free by listening on it, and
 * never handed out twice by this process.
 */
const handedOut = new Set<number>();
export async function freePort(): Promise<number> {
  for (let tries = 0; tries < 200; tries++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (handedOut.has(port) || port === 20_443) continue;
    if (await canListen(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error('no free port found below the ephemeral range');
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen({ port, host: '127.0.0.1', exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

export interface ServiceProcess {
  readonly child: ChildProcess;
  readonly url: string;
  readonly output: () => string;
  /** Resolves with the exit code once the process has exited. */
  readonly exited: Promise<number | null>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

// biome-ignore lint/suspicious/noExplicitAny: log lines are arbitrary JSON
export type LogLine = Record<string, any>;

/** The JSON lines a service process has logged so far (one object a line; other output skipped). */
export function logLines(svc: Pick<ServiceProcess, 'output'>): LogLine[] {
  return svc
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine);
}

/**
 * Start the service and resolve once it logs that it listens (or reject if it exits first).
 * `entry` runs another build of it, such as the production bundle, instead of the sources.
 */
export async function startService(env: Record<string, string>, entry?: string): Promise<ServiceProcess> {
  const port = env.PORT ?? String(await freePort());
  const args = entry === undefined ? ['--import', 'tsx', 'src/main.ts'] : [entry];
  let onExit: (code: number | null) => void = () => {};
  const exited = new Promise<number | null>((resolve) => {
    onExit = resolve;
  });
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: {
      ...process.env,
      LOG_LEVEL: 'info',
      HOST: '127.0.0.1',
      ...ownDataDir(env, exited),
      ...env,
      PORT: port,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.once('exit', (code) => onExit(code));
  let out = '';
  const url = `http://127.0.0.1:${port}`;
  // With info logs on, the "listening on" line is the event to wait for; with them off there
  // is no such line, so the port is polled until it answers (bounded).
  const quiet = env.LOG_LEVEL !== undefined && !['info', 'debug', 'trace'].includes(env.LOG_LEVEL);
  await new Promise<void>((resolve, reject) => {
    if (quiet) void pollHealth(url, exited).then(resolve, reject);
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('listening on')) resolve();
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    exited.then((code) => reject(new Error(`service exited (${code}) before listening:\n${out}`)));
  });
  return {
    child,
    url,
    output: () => out,
    exited,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** Run the service expecting it to fail at start-up; resolves with its exit code and stderr. */
export async function runExpectingFailure(
  env: Record<string, string>,
): Promise<{ code: number | null; stderr: string }> {
  let onExit: (code: number | null) => void = () => {};
  const exited = new Promise<number | null>((resolve) => {
    onExit = resolve;
  });
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, HOST: '127.0.0.1', PORT: '0', ...ownDataDir(env, exited), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.once('exit', (code) => onExit(code));
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const code = await exited;
  return { code, stderr };
}

async function pollHealth(url: string, exited: Promise<unknown>): Promise<void> {
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  for (let i = 0; i < 500 && !gone; i++) {
    try {
      const res = await fetch(`${url}/health`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`service at ${url} did not answer /health`);
}

/**
 * A node process started with `args` from the repository root, its output collected: `done`
 * resolves with the exit status and both streams, `output()` reads what arrived so far.
 */
export function spawnNode(args: string[], env: Record<string, string> = {}) {
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.once('close', (code) => resolve({ code, stdout, stderr })),
  );
  return { child, done, output: () => stdout + stderr };
}
