/**
 * `npm start` (scripts/start.mjs): builds only when the bundle is missing or older than its
 * sources, then runs the bundle. Run in a throwaway project beside the real start script, whose
 * `npm run build` writes a tiny bundle and counts its runs: a real build of this repository
 * takes tens of seconds and would race the bundle test for dist/.
 */
import { spawn } from 'node:child_process';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../../..');
let project: string;

function builds(): number {
  try {
    return readFileSync(path.join(project, 'builds.txt'), 'utf8').length;
  } catch {
    return 0;
  }
}

function npmStart(env: Record<string, string> = {}): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(project, 'scripts/start.mjs')], {
      cwd: project,
      env: { ...process.env, ...env },
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

/** Set a file's modification time `seconds` from now (no waiting for the clock to move). */
function touch(file: string, seconds: number): void {
  const t = new Date(Date.now() + seconds * 1000);
  utimesSync(path.join(project, file), t, t);
}

beforeAll(() => {
  project = mkdtempSync(path.join(os.tmpdir(), 'clarity-cache-start-'));
  mkdirSync(path.join(project, 'scripts'));
  mkdirSync(path.join(project, 'src'));
  for (const f of ['start.mjs', 'build-freshness.mjs']) {
    copyFileSync(path.join(ROOT, 'scripts', f), path.join(project, 'scripts', f));
  }
  writeFileSync(path.join(project, 'scripts/bundle.mjs'), '// stands in for the real bundler\n');
  writeFileSync(path.join(project, 'src/main.ts'), 'export {};\n');
  writeFileSync(path.join(project, 'tsconfig.json'), '{}\n');
  // A development install: the compiler is there (a production install has none).
  mkdirSync(path.join(project, 'node_modules/typescript'), { recursive: true });
  writeFileSync(path.join(project, 'node_modules/typescript/package.json'), '{"name":"typescript"}\n');
  // The build: fails when FAIL_BUILD is set, else counts itself and writes a bundle that says it ran.
  writeFileSync(
    path.join(project, 'build.mjs'),
    `import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
if (process.env.FAIL_BUILD) process.exit(3);
appendFileSync('builds.txt', 'x');
mkdirSync('dist', { recursive: true });
writeFileSync('dist/clarity-cache.mjs', "console.log('bundle ran');\\n");
`,
  );
  writeFileSync(
    path.join(project, 'package.json'),
    JSON.stringify({
      name: 'start-test',
      private: true,
      type: 'module',
      scripts: { build: 'node build.mjs' },
    }),
  );
});

afterAll(() => {
  rmSync(project, { recursive: true, force: true });
});

describe('npm start', () => {
  it('builds once when there is no bundle, then starts from it without building', async () => {
    const first = await npmStart();
    expect(first.code).toBe(0);
    expect(first.out).toContain('building (dist/clarity-cache.mjs does not exist yet)');
    expect(first.out).toContain('bundle ran');
    expect(builds()).toBe(1);

    const second = await npmStart();
    expect(second.code).toBe(0);
    expect(second.out).not.toContain('building');
    expect(second.out).toContain('bundle ran');
    expect(builds()).toBe(1);
  });

  it('rebuilds when a source, the lockfile or a tsconfig is newer than the bundle', async () => {
    for (const [i, file] of ['src/main.ts', 'package.json', 'tsconfig.json'].entries()) {
      touch(file, 10 * (i + 1));
      const res = await npmStart();
      expect(res.out).toContain(`building (${file} changed since the last build)`);
      expect(res.out).toContain('bundle ran');
      expect(builds()).toBe(2 + i);
      // The touched file lies in the future: date the bundle after it, as a build then would.
      touch('dist/clarity-cache.mjs', 10 * (i + 1) + 5);
      expect((await npmStart()).out).not.toContain('building');
    }
  });

  it('rebuilds on FORCE_BUILD=1, and does not start when the build fails', async () => {
    const before = builds();
    expect((await npmStart({ FORCE_BUILD: '1' })).out).toContain('building (FORCE_BUILD=1)');
    expect(builds()).toBe(before + 1);
    const failed = await npmStart({ FORCE_BUILD: '1', FAIL_BUILD: '1' });
    expect(failed.code).toBe(1);
    expect(failed.out).toContain('the build failed (3); not starting');
    expect(failed.out).not.toContain('bundle ran');
  });

  it('never builds in a production install: runs the bundle it has, or says how to make one', async () => {
    rmSync(path.join(project, 'node_modules'), { recursive: true, force: true });
    try {
      const before = builds();
      touch('src/main.ts', 60);
      const stale = await npmStart();
      expect(stale.code).toBe(0);
      expect(stale.out).toContain('bundle ran');
      expect(builds()).toBe(before);
      rmSync(path.join(project, 'dist'), { recursive: true, force: true });
      const none = await npmStart();
      expect(none.code).toBe(1);
      expect(none.out).toContain('npm run build');
      expect(none.out).not.toContain('bundle ran');
      expect(builds()).toBe(before);
    } finally {
      mkdirSync(path.join(project, 'node_modules/typescript'), { recursive: true });
      writeFileSync(path.join(project, 'node_modules/typescript/package.json'), '{"name":"typescript"}\n');
    }
  });
});

describe('npm start without sources (the image keeps only the build)', () => {
  it('starts the bundle as built and says so; with no bundle either, one line and exit 1', async () => {
    const src = path.join(project, 'src');
    rmSync(src, { recursive: true, force: true });
    rmSync(path.join(project, 'node_modules'), { recursive: true, force: true });
    try {
      // The image's layout: a bundle, no sources, no compiler.
      mkdirSync(path.join(project, 'dist'), { recursive: true });
      writeFileSync(path.join(project, 'dist/clarity-cache.mjs'), "console.log('bundle ran');\n");
      const before = builds();
      const started = await npmStart();
      expect(started.code).toBe(0);
      expect(started.out).toBe(
        'clarity-cache: no sources here (no src/): starting the build as it is, dist/clarity-cache.mjs\nbundle ran\n',
      );
      expect(builds()).toBe(before);

      rmSync(path.join(project, 'dist'), { recursive: true, force: true });
      const none = await npmStart();
      expect(none.code).toBe(1);
      // One line, no stack trace (no "    at ..." frame, no scandir of the missing folder).
      expect(none.out).toBe(
        'clarity-cache: no sources (src/) and no build (dist/clarity-cache.mjs) here: nothing to start\n',
      );
    } finally {
      mkdirSync(src, { recursive: true });
      writeFileSync(path.join(src, 'main.ts'), 'export {};\n');
    }
  });
});
