/**
 * `npx clarity-cache` as the README shows it, in a fresh clone: the checkout's files (what git
 * tracks or would, nothing it ignores: no dist/, no data/) and the installed dependencies, with
 * no build. npx runs a project's own bin by linking it into its cache, and it links only a file
 * that exists, so a bin that only a build writes made the README's first command "not found".
 * npx's cache lives in the test's own folder, so nothing is left in the user's.
 */
import { execFileSync, spawn } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const VERSION = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version as string;
let work: string;
let clone: string;

function npx(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('npx', args, {
      cwd: clone,
      env: {
        ...process.env,
        npm_config_cache: path.join(work, 'npm-cache'),
        npm_config_offline: 'true',
        npm_config_update_notifier: 'false',
        CLARITY_CACHE_URL: 'http://127.0.0.1:9',
      },
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
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

beforeAll(() => {
  work = mkdtempSync(path.join(os.tmpdir(), 'clarity-cache-clone-'));
  clone = path.join(work, 'clarity-cache');
  const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z'], {
    cwd: ROOT,
    encoding: 'utf8',
  })
    .split('\0')
    .filter((f) => f !== '' && existsSync(path.join(ROOT, f)));
  for (const file of files) {
    mkdirSync(path.dirname(path.join(clone, file)), { recursive: true });
    copyFileSync(path.join(ROOT, file), path.join(clone, file));
  }
  // `npm ci`, as the README's set-up says (linked rather than installed again: minutes, and the registry).
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(clone, 'node_modules'), 'dir');
});

afterAll(() => {
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

describe('npx clarity-cache in a fresh clone, before any build', () => {
  it('has no build to lean on', () => {
    expect(existsSync(path.join(clone, 'dist'))).toBe(false);
    expect(existsSync(path.join(clone, 'package.json'))).toBe(true);
  });

  it('--version prints the version', async () => {
    const r = await npx(['clarity-cache', '--version']);
    expect(r).toMatchObject({ code: 0, stdout: `${VERSION}\n` });
  });

  it('--help prints the help', async () => {
    const r = await npx(['clarity-cache', '--help']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Examples.*:$/m);
  });

  it('a command that needs the gateway reaches for it (and says it is not there)', async () => {
    const r = await npx(['clarity-cache', 'known']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^clarity-cache: /);
    expect(r.stderr).toContain('127.0.0.1:9');
  });
});

describe('the bin without development tools (a production install)', () => {
  function runBin(project: string) {
    return new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn(process.execPath, [path.join(project, 'bin/clarity-cache.mjs'), '--version'], {
        cwd: project,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (c: Buffer) => {
        out += c.toString();
      });
      child.stderr.on('data', (c: Buffer) => {
        out += c.toString();
      });
      child.once('close', (code) => resolve({ code, out }));
    });
  }

  it('runs the build, or says how to make one', async () => {
    // The sources are there, tsx is not (pruned): the build is what this install can run.
    const project = path.join(work, 'production');
    for (const dir of ['bin', 'src/cli', 'dist']) mkdirSync(path.join(project, dir), { recursive: true });
    copyFileSync(path.join(ROOT, 'bin/clarity-cache.mjs'), path.join(project, 'bin/clarity-cache.mjs'));
    writeFileSync(path.join(project, 'package.json'), '{"type":"module"}\n');
    writeFileSync(path.join(project, 'src/cli/main.ts'), "console.log('sources ran');\n");
    writeFileSync(path.join(project, 'dist/cli.mjs'), "console.log('build ran', process.argv.slice(2));\n");
    expect(await runBin(project)).toEqual({ code: 0, out: "build ran [ '--version' ]\n" });
    rmSync(path.join(project, 'dist'), { recursive: true });
    const none = await runBin(project);
    expect(none.code).toBe(1);
    expect(none.out).toMatch(/^clarity-cache: no build in dist\/.*npm run build.*\n$/);
  });
});
