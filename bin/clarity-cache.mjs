#!/usr/bin/env node
// The `clarity-cache` command (package.json "bin"). It is a committed file, not the build's
// dist/cli.mjs, because npm links a bin only when its file exists: in a fresh clone, before any
// build, `npx clarity-cache` found nothing to run, and npx keeps the install it made then, so
// the command stayed "not found" even after a build.
//
// Which program it runs:
// - a checkout with its development tools (src/ and tsx present): the command line's sources,
//   which are current by definition, so an edit never runs against an older build;
// - otherwise (a production install, pruned of tsx): the build, dist/cli.mjs;
// - neither: one line saying which commands make one, exit 1.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const root = path.resolve(import.meta.dirname, '..');
const sources = path.join(root, 'src', 'cli', 'main.ts');
const built = path.join(root, 'dist', 'cli.mjs');

/** tsx's ESM loader API, or undefined when tsx is not installed (a production install). */
async function tsxApi() {
  try {
    return await import('tsx/esm/api');
  } catch (err) {
    if (err?.code === 'ERR_MODULE_NOT_FOUND') return undefined;
    throw err;
  }
}

const tsx = existsSync(sources) ? await tsxApi() : undefined;
if (tsx !== undefined) {
  tsx.register();
  await import(pathToFileURL(sources).href);
} else if (existsSync(built)) {
  await import(pathToFileURL(built).href);
} else {
  process.stderr.write(
    'clarity-cache: no build in dist/ and no development tools to run the sources: run `npm ci` (then `npm run build` for a production install)\n',
  );
  process.exitCode = 1;
}
