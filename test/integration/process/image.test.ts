/**
 * The image deploy/Dockerfile builds, as far as a machine without Docker can make it: the build
 * context is the checkout filtered by .dockerignore (Docker's matching rules), the build
 * stage's `npm run build` runs on exactly that context, and the final stage's file set (its
 * `COPY --from=build` lines, production dependencies only, no sources) is started with the
 * final stage's ENV and CMD, then with `npm start`; /health must answer, and the HEALTHCHECK
 * command must pass. What stands in for Docker: `npm ci` is the checkout's node_modules linked
 * in; `npm prune --omit=dev` is the production dependencies (`npm ls --omit=dev`) linked one by
 * one; the volume /data is a temporary folder; the gateway's upstream is a fake node.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { freePort } from '../../support/process.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');

// --- .dockerignore, as Docker reads it ---------------------------------------------------------

/** The rules of .dockerignore as regular expressions over context-relative paths. */
function dockerignoreRules(text: string): RegExp[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((line) => {
      // Exceptions would need Docker's "last match wins" over parents too; none are used.
      if (line.startsWith('!')) throw new Error(`this test does not model exceptions: ${line}`);
      const pattern = path.posix.normalize(line.replace(/^\/+/, '')).replace(/\/+$/, '');
      let re = '';
      for (let i = 0; i < pattern.length; i++) {
        const c = pattern[i]!;
        if (c === '*' && pattern[i + 1] === '*') {
          // `**/` is any number of folders (none included); a trailing `**` anything below.
          if (pattern[i + 2] === '/') {
            re += '(?:.*/)?';
            i += 2;
          } else {
            re += '.*';
            i += 1;
          }
        } else if (c === '*') re += '[^/]*';
        else if (c === '?') re += '[^/]';
        else re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
      }
      return new RegExp(`^${re}$`);
    });
}

/** Whether Docker leaves `rel` out of the context: a rule matches it or one of its folders. */
function ignored(rules: readonly RegExp[], rel: string): boolean {
  const parts = rel.split('/');
  for (let n = 1; n <= parts.length; n++) {
    const prefix = parts.slice(0, n).join('/');
    if (rules.some((r) => r.test(prefix))) return true;
  }
  return false;
}

/** Every file of the build context (relative paths), ignored folders not even entered. */
function contextFiles(rules: readonly RegExp[]): string[] {
  const files: string[] = [];
  const walk = (rel: string) => {
    for (const entry of readdirSync(path.join(ROOT, rel), { withFileTypes: true })) {
      const child = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (ignored(rules, child)) continue;
      if (entry.isDirectory()) walk(child);
      else files.push(child);
    }
  };
  walk('');
  return files;
}

// --- deploy/Dockerfile, as far as this test builds it ------------------------------------------

interface Stage {
  readonly name: string | undefined;
  readonly instructions: { readonly op: string; readonly args: string }[];
}

function dockerfileStages(text: string): Stage[] {
  const logical = text
    .split('\n')
    .filter((l) => !l.trimStart().startsWith('#'))
    .join('\n')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  const stages: { name: string | undefined; instructions: { op: string; args: string }[] }[] = [];
  for (const line of logical) {
    const [, op, args] = /^(\S+)\s+(.*)$/.exec(line)!;
    if (op!.toUpperCase() === 'FROM') {
      stages.push({ name: /\bAS\s+(\S+)$/i.exec(args!)?.[1], instructions: [] });
    } else {
      stages.at(-1)!.instructions.push({ op: op!.toUpperCase(), args: args!.replace(/\s+/g, ' ') });
    }
  }
  return stages;
}

const dockerfile = dockerfileStages(readFileSync(path.join(ROOT, 'deploy/Dockerfile'), 'utf8'));
const buildStage = dockerfile.find((s) => s.name === 'build')!;
const finalStage = dockerfile.at(-1)!;
const ops = (stage: Stage, op: string) => stage.instructions.filter((i) => i.op === op).map((i) => i.args);

// --- the test's image --------------------------------------------------------------------------

let work: string;
let context: string;
let app: string;
let node: FakeNode;
const rules = dockerignoreRules(
  existsSync(path.join(ROOT, '.dockerignore')) ? readFileSync(path.join(ROOT, '.dockerignore'), 'utf8') : '',
);

/** The final stage's environment, with what a test must change: its port, its volume, its upstream. */
function imageEnv(port: number): Record<string, string> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: work };
  for (const args of ops(finalStage, 'ENV')) {
    for (const pair of args.split(' ')) {
      const at = pair.indexOf('=');
      env[pair.slice(0, at)] = pair.slice(at + 1);
    }
  }
  return {
    ...env,
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: path.join(work, 'volume'),
    STACKS_API_URL_MAINNET: node.url,
    STACKS_API_URL_TESTNET: node.url,
  };
}

interface Started {
  readonly child: ChildProcess;
  readonly output: () => string;
  readonly exited: Promise<number | null>;
}

/** A command in the image's working directory, in a process group of its own (npm starts a child). */
function startInImage(command: string, args: string[], env: Record<string, string>): Started {
  const child = spawn(command, args, { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  child.stdout?.on('data', (c: Buffer) => {
    out += c.toString();
  });
  child.stderr?.on('data', (c: Buffer) => {
    out += c.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

/** Resolves once the gateway logs that it listens; rejects with its output if it exits first. */
function listening(started: Started): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (started.output().includes('listening on')) resolve();
    };
    started.child.stdout?.on('data', check);
    started.child.stderr?.on('data', check);
    check();
    void started.exited.then((code) =>
      reject(new Error(`exited (${code}) before listening:\n${started.output()}`)),
    );
  });
}

async function stopGroup(started: Started): Promise<number | null> {
  if (started.child.exitCode === null && started.child.pid !== undefined)
    process.kill(-started.child.pid, 'SIGTERM');
  return started.exited;
}

beforeAll(async () => {
  work = mkdtempSync(path.join(os.tmpdir(), 'clarity-cache-image-'));
  context = path.join(work, 'build');
  app = path.join(work, 'app');
  mkdirSync(path.join(work, 'volume'));
  node = await startFakeNode();
});

afterAll(async () => {
  await node?.close();
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

describe('the build context (.dockerignore)', () => {
  it('exists and leaves out installs, builds, caches, secrets and the history', () => {
    expect(existsSync(path.join(ROOT, '.dockerignore'))).toBe(true);
    for (const rel of [
      'node_modules',
      'node_modules/fastify/package.json',
      'client/node_modules',
      'dist',
      'dist/clarity-cache.mjs',
      'client/dist',
      'data',
      'data/clarity-cache.db',
      'clarity-cache.db',
      'src/some.db-wal',
      '.demo-data',
      '.bench-tmp',
      'coverage',
      '.env',
      'deploy/.env.production',
      '.git',
      'clarity-cache-client-0.1.0.tgz',
    ]) {
      expect(ignored(rules, rel), rel).toBe(true);
    }
  });

  it('keeps what the build stage needs', () => {
    expect(ops(buildStage, 'RUN').slice(-2)).toEqual(['npm ci', 'npm run build && npm prune --omit=dev']);
    for (const rel of [
      'package.json',
      'package-lock.json',
      'tsconfig.json',
      'tsconfig.build.json',
      'tsconfig.client.json',
      'src/main.ts',
      'client/build.mjs',
      'client/src/index.ts',
      'scripts/bundle.mjs',
      'scripts/start.mjs',
      'scripts/build-freshness.mjs',
    ]) {
      expect(ignored(rules, rel), rel).toBe(false);
    }
  });

  it('is enough for `npm run build`, run on exactly the files Docker would send', () => {
    for (const file of contextFiles(rules)) {
      mkdirSync(path.dirname(path.join(context, file)), { recursive: true });
      copyFileSync(path.join(ROOT, file), path.join(context, file));
    }
    // RUN npm ci
    symlinkSync(path.join(ROOT, 'node_modules'), path.join(context, 'node_modules'), 'dir');
    // RUN npm run build
    execFileSync('npm', ['run', 'build'], { cwd: context, stdio: 'pipe' });
    for (const file of ['dist/clarity-cache.mjs', 'dist/observer-worker.mjs', 'dist/explorer/manifest.json'])
      expect(existsSync(path.join(context, file)), file).toBe(true);
  }, 240_000);
});

describe('the image', () => {
  beforeAll(() => {
    if (!existsSync(path.join(context, 'dist/clarity-cache.mjs')))
      throw new Error('the build stage did not run');
    // The final stage: its COPY --from=build lines, relative to its WORKDIR.
    const workdir = ops(finalStage, 'WORKDIR').at(-1)!;
    const buildWorkdir = ops(buildStage, 'WORKDIR').at(-1)!;
    const copies = ops(finalStage, 'COPY').filter((a) => a.startsWith('--from=build '));
    expect(copies.length).toBeGreaterThan(0);
    for (const copy of copies) {
      const parts = copy.split(' ').slice(1);
      const destArg = parts.at(-1)!;
      const dest = path.join(app, path.posix.relative(workdir, path.posix.resolve(workdir, destArg)));
      const sources = parts.slice(0, -1);
      for (const source of sources) {
        const rel = path.posix.relative(buildWorkdir, source);
        // RUN npm prune --omit=dev: the production dependencies only, each linked from the
        // checkout (a folder's contents go into the destination, as COPY does).
        if (rel === 'node_modules') {
          const listed = execFileSync('npm', ['ls', '--omit=dev', '--all', '--parseable'], {
            cwd: ROOT,
            encoding: 'utf8',
          });
          for (const dir of listed.split('\n')) {
            const name = path.relative(ROOT, dir).split(path.sep).join('/');
            const pkg = /^node_modules\/((?:@[^/]+\/)?[^/]+)$/.exec(name)?.[1];
            if (pkg === undefined) continue;
            mkdirSync(path.dirname(path.join(dest, pkg)), { recursive: true });
            symlinkSync(dir, path.join(dest, pkg), 'dir');
          }
          continue;
        }
        const from = path.join(context, rel);
        const into =
          !statSync(from).isDirectory() && (destArg.endsWith('/') || sources.length > 1)
            ? path.join(dest, path.basename(rel))
            : dest;
        mkdirSync(path.dirname(into), { recursive: true });
        cpSync(from, into, { recursive: true });
      }
    }
  });

  it('holds the build and production dependencies only: no sources, no compiler', () => {
    expect(existsSync(path.join(app, 'dist/clarity-cache.mjs'))).toBe(true);
    expect(existsSync(path.join(app, 'scripts/start.mjs'))).toBe(true);
    expect(existsSync(path.join(app, 'node_modules/fastify'))).toBe(true);
    expect(existsSync(path.join(app, 'src'))).toBe(false);
    expect(existsSync(path.join(app, 'node_modules/typescript'))).toBe(false);
    expect(existsSync(path.join(app, 'node_modules/tsx'))).toBe(false);
  });

  it("starts with the image's CMD, answers /health, passes its HEALTHCHECK, and stops on SIGTERM", async () => {
    const cmd = JSON.parse(ops(finalStage, 'CMD').at(-1)!) as string[];
    const port = await freePort();
    const env = imageEnv(port);
    const started = startInImage(cmd[0] === 'node' ? process.execPath : cmd[0]!, cmd.slice(1), env);
    try {
      await listening(started);
      const health = await fetch(`http://127.0.0.1:${port}/health`);
      expect(health.status).toBe(200);
      // The explorer's prebuilt files and the docs' assets come from dist/ and node_modules.
      expect((await fetch(`http://127.0.0.1:${port}/explorer`)).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${port}/docs/`)).status).toBe(200);
      const check = /^(?:--\S+\s+)*CMD (.*)$/.exec(ops(finalStage, 'HEALTHCHECK').at(-1)!)![1]!;
      const checked = spawn('sh', ['-c', check], { env, stdio: 'ignore' });
      expect(await new Promise((resolve) => checked.once('exit', resolve))).toBe(0);
    } finally {
      expect(await stopGroup(started)).toBe(0);
    }
    expect(started.output()).not.toMatch(/^\s+at /m);
    expect(existsSync(path.join(work, 'volume', 'clarity-cache.db'))).toBe(true);
  });

  it('starts with `npm start`, saying that it runs the build as it is', async () => {
    const port = await freePort();
    const started = startInImage('npm', ['start'], imageEnv(port));
    try {
      await listening(started);
      expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200);
    } finally {
      await stopGroup(started);
    }
    expect(started.output()).toContain(
      'clarity-cache: no sources here (no src/): starting the build as it is, dist/clarity-cache.mjs',
    );
    expect(started.output()).not.toMatch(/^\s+at /m);
    expect(started.output()).not.toContain('building');
  });
});
