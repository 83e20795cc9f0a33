/**
 * A throwaway redis-server for tests: a free port, no persistence, started and awaited
 * (its "Ready to accept connections" line), never a fixed sleep. Tests never rely on a
 * system Redis.
 *
 * Without redis-server on PATH: outside CI, startRedis() warns once and returns undefined
 * (the Redis suites skip); with CI=true it throws, so a CI machine without Redis fails.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export interface RedisServer {
  /** redis://127.0.0.1:{port} */
  readonly url: string;
  readonly port: number;
  /** SIGTERM and wait for the exit. Idempotent. */
  stop(): Promise<void>;
  /** SIGKILL (a crash) and wait for the exit; restart() brings it back on the same port. */
  kill(): Promise<void>;
  /** Start again on the same port (killing the current process first if it runs). Data is lost. */
  restart(): Promise<void>;
}

const READY_LINE = 'Ready to accept connections';
const START_TIMEOUT_MS = 15_000;

function findOnPath(command: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir === '') continue;
    const candidate = path.join(dir, command);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return candidate;
    } catch {
      // Not here.
    }
  }
  return undefined;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        server.close();
        reject(new Error('could not read the bound port'));
        return;
      }
      server.close(() => resolve(address.port));
    });
  });
}

function waitForExit(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** Spawn on port and resolve once it accepts connections; reject with its output if it exits. */
function spawnRedis(binary: string, port: number): Promise<ChildProcess> {
  const child = spawn(
    binary,
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      os.tmpdir(),
      '--daemonize',
      'no',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      fail(new Error(`redis-server on port ${port} not ready after ${START_TIMEOUT_MS} ms:\n${output}`));
    }, START_TIMEOUT_MS);
    const cleanup = (): void => {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.off('exit', onExit);
      child.off('error', onError);
    };
    const fail = (err: Error): void => {
      cleanup();
      reject(err);
    };
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      if (output.includes(READY_LINE)) {
        cleanup();
        // Keep draining so a full pipe never blocks the server.
        child.stdout?.resume();
        resolve(child);
      }
    };
    const onExit = (code: number | null, signal: string | null): void =>
      fail(new Error(`redis-server on port ${port} exited (${code ?? signal}) before ready:\n${output}`));
    const onError = (err: Error): void => fail(err);
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.once('exit', onExit);
    child.once('error', onError);
  });
}

const running = new Set<ChildProcess>();
let exitHookInstalled = false;

function track(child: ChildProcess): void {
  running.add(child);
  child.once('exit', () => running.delete(child));
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    // A test process that dies without afterAll must not leave servers behind.
    process.once('exit', () => {
      for (const c of running) c.kill('SIGKILL');
    });
  }
}

export async function startRedis(): Promise<RedisServer | undefined> {
  const binary = findOnPath('redis-server');
  if (binary === undefined) {
    if (process.env.CI === 'true') {
      throw new Error('redis-server is not installed, and CI=true requires the Redis tests to run');
    }
    console.warn('SKIPPING redis tests: redis-server not installed (apt-get install redis-server)');
    return undefined;
  }

  // The port is free when probed; another process may take it before redis binds, so retry.
  let port = 0;
  let child: ChildProcess | undefined;
  let lastError: unknown;
  for (let attempt = 0; attempt < 5 && child === undefined; attempt++) {
    port = await freePort();
    try {
      child = await spawnRedis(binary, port);
    } catch (err) {
      lastError = err;
    }
  }
  if (child === undefined) throw lastError;
  track(child);

  let current: ChildProcess | undefined = child;
  const terminate = async (signal: NodeJS.Signals): Promise<void> => {
    const c = current;
    current = undefined;
    if (c === undefined) return;
    const exited = waitForExit(c);
    c.kill(signal);
    await exited;
  };
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    stop: () => terminate('SIGTERM'),
    kill: () => terminate('SIGKILL'),
    restart: async () => {
      await terminate('SIGKILL');
      const next = await spawnRedis(binary, port);
      track(next);
      current = next;
    },
  };
}
