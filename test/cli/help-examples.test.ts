/**
 * Every line of `clarity-cache --help`'s Examples section, run as written against
 * `npm run demo` (scripts/demo.ts as a real process: the devnet's real Clarity VM and the
 * gateway): each exits 0 and prints JSON; `serve` starts a gateway that answers /health;
 * `watch` prints a JSON line, and Ctrl-C (SIGINT to its process group, as a terminal sends it)
 * ends it with 0.
 * The demo runs on free ports here, so `localhost:3000` in a line (and the default URL, through
 * CLARITY_CACHE_URL) is replaced by where this demo listens; nothing else is changed.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXAMPLES, HELP } from '../../src/cli/help.js';
import { freePort } from '../support/process.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const CLI = `${JSON.stringify(process.execPath)} --import tsx src/cli/main.ts`;

let demo: ChildProcess;
let demoOutput = '';
let gatewayUrl: string;
let devnetUrl: string;
/** Its own cache directory: the demo's default one is shared with the demo's own test. */
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'clarity-cache-help-'));

beforeAll(async () => {
  const port = await freePort();
  gatewayUrl = `http://127.0.0.1:${port}`;
  demo = spawn(process.execPath, ['--import', 'tsx', 'scripts/demo.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      PORT: String(port),
      DEVNET_PORT: String(await freePort()),
      EVENT_OBSERVER_PORT: String(await freePort()),
      DATA_DIR: dataDir,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      demoOutput += chunk.toString();
      if (demoOutput.includes('Explorer (')) resolve();
    };
    demo.stdout?.on('data', onData);
    demo.stderr?.on('data', onData);
    demo.once('exit', (code) => reject(new Error(`the demo exited (${code}):\n${demoOutput}`)));
  });
  devnetUrl = /devnet (http:\/\/\S+)/.exec(demoOutput)?.[1] ?? '';
  expect(devnetUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
}, 120_000);

afterAll(async () => {
  if (demo !== undefined && demo.exitCode === null) {
    const exited = new Promise((resolve) => demo.once('exit', resolve));
    demo.kill('SIGTERM');
    await exited;
  }
  rmSync(dataDir, { recursive: true, force: true });
});

/** Run one example line with bash, `clarity-cache` being the command line's sources. */
function runLine(
  line: string,
  env: Record<string, string>,
  onStdout?: (text: string, child: ChildProcess) => void,
  detached = false,
) {
  const command = line
    .replaceAll('localhost:3000', gatewayUrl.replace('http://', ''))
    .replace(/(^|\s)clarity-cache(?=\s)/, `$1${CLI}`);
  const child = spawn('bash', ['-c', command], {
    cwd: ROOT,
    env: { ...process.env, CLARITY_CACHE_URL: gatewayUrl, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached,
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (c: Buffer) => {
    stdout += c.toString();
    onStdout?.(stdout, child);
  });
  child.stderr?.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.once('close', (code) => resolve({ code, stdout, stderr })),
  );
}

describe('the examples of clarity-cache --help', () => {
  it('are the Examples section of the help, each a complete command', () => {
    const section = HELP.split(/^Examples.*:$/m)[1]!
      .trim()
      .split('\n')
      .map((l) => l.trim());
    expect(section).toEqual([...EXAMPLES]);
    for (const line of EXAMPLES) expect(line).not.toMatch(/…|<[a-z.]+>|\.\.\.|\bSP\b/);
  });

  it.each(EXAMPLES.filter((l) => !/ (serve|watch)\b/.test(l)))('%s', async (line) => {
    const r = await runLine(line, {});
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(() => JSON.parse(r.stdout)).not.toThrow();
  });

  it.each(EXAMPLES.filter((l) => / watch\b/.test(l)))('%s: prints JSON lines until Ctrl-C', async (line) => {
    let interrupted = false;
    const r = await runLine(
      line,
      {},
      (out, child) => {
        if (!interrupted && out.includes('\n')) {
          interrupted = true;
          // The whole group, bash and the command line in it, as Ctrl-C in a terminal.
          process.kill(-child.pid!, 'SIGINT');
        }
      },
      true,
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines.length).toBeGreaterThanOrEqual(1);
    for (const text of lines) {
      expect(JSON.parse(text)).toEqual({
        tipHeight: expect.any(Number),
        indexBlockHash: expect.stringMatching(/^[0-9a-f]{64}$/),
        value: expect.anything(),
      });
    }
  });

  it.each(EXAMPLES.filter((l) => / serve\b/.test(l)))('%s: starts and answers /health', async (line) => {
    const port = await freePort();
    let healthy: Promise<number> | undefined;
    const r = await runLine(
      line,
      {
        PORT: String(port),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'info',
        CACHE_STORE: 'memory',
        STACKS_API_URL_MAINNET: devnetUrl,
        STACKS_API_URL_TESTNET: devnetUrl,
      },
      (out, child) => {
        if (healthy === undefined && out.includes('listening on')) {
          healthy = fetch(`http://127.0.0.1:${port}/health`).then((res) => {
            // bash forwards the signal to the gateway, which drains and exits.
            child.kill('SIGTERM');
            return res.status;
          });
        }
      },
    );
    expect(r.stdout).toContain('listening on');
    expect(await healthy).toBe(200);
  });
});
