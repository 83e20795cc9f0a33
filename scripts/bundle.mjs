// Bundles what the package ships, with esbuild:
// - the production server (src/main.ts) into one ES module, dist/clarity-cache.mjs. Why:
//   resolving and loading a few hundred small CommonJS files was most of the start-up time;
//   one file starts several times faster;
// - the event observer's payload worker (src/chain/observer/payload-worker.ts) into
//   dist/observer-worker.mjs beside the server, which starts it as a worker thread from there
//   (a worker runs a file of its own);
// - the explorer page (src/explorer/page) into dist/explorer/ beside the server, which
//   serves it from there;
// - the typed client (client/src, also its own package clarity-cache-client) into
//   dist/client.mjs, so that `clarity-cache/client` gives the same module, for Node and
//   browsers alike; the command line (src/cli) into dist/cli.mjs (the `bin`).
// The tests run the sources (tsx); the bundle tests run this output.
//
//   node scripts/bundle.mjs                  everything into dist/
//   node scripts/bundle.mjs <file.mjs>       only the server (and its worker and explorer/ beside it)

import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { register } from 'tsx/esm/api';

const root = fileURLToPath(new URL('..', import.meta.url));
const serverOnly = process.argv[2] !== undefined;
const outfile = process.argv[2] ?? `${root}/dist/clarity-cache.mjs`;
const outdir = path.dirname(path.resolve(outfile));

// Bundled CommonJS packages still call require() for Node built-ins.
const requireBanner =
  "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);";

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
  // The explorer's prebuilt files and the observer's worker, relative to the bundle
  // (src/explorer/plugin.ts, src/chain/observer/payload-reader.ts).
  define: {
    __EXPLORER_DIR__: JSON.stringify('./explorer/'),
    __OBSERVER_WORKER__: JSON.stringify('./observer-worker.mjs'),
  },
  banner: { js: requireBanner },
});

await build({
  entryPoints: [`${root}/src/chain/observer/payload-worker.ts`],
  outfile: `${outdir}/observer-worker.mjs`,
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  sourcemap: true,
  logLevel: 'warning',
  banner: { js: requireBanner },
});

// The page builder is TypeScript (the gateway also runs it from its sources): load it through tsx.
const unregister = register();
const { writeExplorerAssets } = await import('../src/explorer/build.ts');
await writeExplorerAssets(path.join(outdir, 'explorer'));
await unregister();

if (!serverOnly) {
  await build({
    entryPoints: [`${root}/client/src/index.ts`],
    outfile: `${outdir}/client.mjs`,
    bundle: true,
    // fetch only, no Node built-ins: the same file runs in browsers.
    platform: 'neutral',
    target: 'es2022',
    format: 'esm',
    sourcemap: true,
    logLevel: 'warning',
  });
  await build({
    entryPoints: [`${root}/src/cli/main.ts`],
    outfile: `${outdir}/cli.mjs`,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    sourcemap: true,
    logLevel: 'warning',
    // `clarity-cache serve` loads the server bundle beside it.
    define: { __SERVER_ENTRY__: JSON.stringify('./clarity-cache.mjs') },
    banner: { js: requireBanner },
  });
}
