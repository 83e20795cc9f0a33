// `npm start`: run the production bundle, building it first only when it is missing or older
// than its sources. Building (tsc + esbuild) takes seconds; the bundle alone starts in well
// under one, so a start after the first should not pay for a build nobody needed.
//
// "Older than its sources": the bundle dist/clarity-cache.mjs (the first file the build
// writes) has an older modification time than any file under src/, scripts/bundle.mjs,
// package.json, package-lock.json or a tsconfig*.json. Modification times are what git,
// editors and `npm install` update, so a pull, a checkout or an edit triggers one rebuild; a
// fresh clone has no dist/ and builds once. FORCE_BUILD=1 rebuilds regardless.
//
// The bundle is then imported into this process rather than started as another one, so the
// check costs one directory walk (a few milliseconds) and no second Node start-up.
//
// A production install (`npm ci && npm run build && npm prune --omit=dev`) has no compiler:
// there `npm start` never builds. It runs the bundle it has, or, when there is none, says which
// two commands make one and stops. The image (deploy/Dockerfile) goes further and keeps no
// sources at all: there is nothing to compare the bundle with, so it is started as built, and
// the first line says so.
//
// Whatever goes wrong here is one line on stderr and exit status 1, never a stack trace: this
// is the first thing a newcomer runs.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { bundlePath, hasSources, staleReason } from './build-freshness.mjs';

function stop(message) {
  console.error(`clarity-cache: ${message}`);
  process.exit(1);
}

const root = path.resolve(import.meta.dirname, '..');
const bundle = path.relative(root, bundlePath(root));
let reason;
try {
  reason = staleReason(root);
} catch (err) {
  stop(`could not tell whether ${bundle} is current (${err?.message ?? err}); not starting`);
}
const canBuild = existsSync(path.join(root, 'node_modules', 'typescript', 'package.json'));
if (!hasSources(root)) {
  if (!existsSync(bundlePath(root)))
    stop(`no sources (src/) and no build (${bundle}) here: nothing to start`);
  console.error(`clarity-cache: no sources here (no src/): starting the build as it is, ${bundle}`);
} else if (reason !== undefined && !canBuild) {
  if (!existsSync(bundlePath(root))) {
    stop(
      'no build in dist/ and no build tools installed (a production install): run `npm ci && npm run build` first, then `npm prune --omit=dev` if you like',
    );
  }
  // The bundle may be older than the sources (a checkout after the build): it is what was
  // built for this install, and there is nothing here to rebuild it with.
} else if (reason !== undefined) {
  console.error(`clarity-cache: building (${reason}) ...`);
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const build = spawnSync(npm, ['run', 'build'], { cwd: root, stdio: 'inherit' });
  if (build.status !== 0) stop(`the build failed (${build.status ?? build.signal}); not starting`);
}
try {
  await import(pathToFileURL(bundlePath(root)).href);
} catch (err) {
  // The bundle could not even load (a dependency missing from node_modules, a damaged file):
  // what and where, in one line. Errors once it runs are the gateway's own to report.
  stop(`could not load ${bundle}: ${err?.message ?? err}`);
}
