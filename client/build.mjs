// Builds the package clarity-cache-client into dist/: index.mjs (one ES module, fetch only, no
// Node built-ins, so the same file runs in browsers and Node) and the .d.ts files beside it.
// The tools (esbuild, typescript) are the repository's; the package itself has no dependency.
//
//   node build.mjs          (or `npm run build` here; the root `npm run build` runs it too)

import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const here = fileURLToPath(new URL('.', import.meta.url));
rmSync(`${here}/dist`, { recursive: true, force: true });
await build({
  entryPoints: [`${here}/src/index.ts`],
  outfile: `${here}/dist/index.mjs`,
  bundle: true,
  platform: 'neutral',
  target: 'es2022',
  format: 'esm',
  // No source map: it would double the install for little (the code is readable as it is).
  sourcemap: false,
  logLevel: 'warning',
});
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', `${here}/tsconfig.json`], { stdio: 'inherit' });
