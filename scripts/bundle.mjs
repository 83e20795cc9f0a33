// Bundles the production server (src/main.ts) into one ES module, dist/clarity-cache.mjs.
// Why: resolving and loading a few hundred small CommonJS files was most of the start-up
// time; one file starts several times faster. The tests run the sources (tsx); the
// production-bundle test runs this output.

import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const outfile = process.argv[2] ?? `${root}/dist/clarity-cache.mjs`;

await build({
  entryPoints: [`${root}/src/main.ts`],
  outfile,
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  sourcemap: true,
  logLevel: 'warning',
  // Native addon, and a package that serves its own static files from its install directory.
  external: ['better-sqlite3', '@fastify/swagger-ui'],
  // Bundled CommonJS packages still call require() for Node built-ins.
  banner: {
    js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
  },
});
