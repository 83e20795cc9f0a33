#!/usr/bin/env node
/**
 * The `clarity-cache` command (package.json "bin"): process plumbing around run.ts.
 * `serve` loads the gateway's own entry point in this process; in the bundle that is the
 * sibling dist/clarity-cache.mjs (scripts/bundle.mjs defines __SERVER_ENTRY__), from the
 * sources src/main.ts.
 */
import { run } from './run.js';

declare const __SERVER_ENTRY__: string | undefined;
const serverEntry = typeof __SERVER_ENTRY__ === 'string' ? __SERVER_ENTRY__ : '../main.js';

const code = await run(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
  serve: async () => {
    await import(new URL(serverEntry, import.meta.url).href);
  },
  interrupts: () => {
    const controller = new AbortController();
    const stop = () => controller.abort();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    // A reader that went away (`| head -n 3`) ends a watch as Ctrl-C does, rather than with
    // an EPIPE stack trace.
    process.stdout.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE') throw err;
      stop();
    });
    return controller.signal;
  },
});
// exitCode, not exit(): output still buffered for a pipe is written before the process ends,
// and after `serve` the gateway keeps running.
process.exitCode = code;
