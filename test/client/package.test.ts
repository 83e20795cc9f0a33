/**
 * The client as its own package, clarity-cache-client, the way a dApp gets it: built as the
 * root `npm run build` builds it, packed with `npm pack`, installed into an empty folder with
 * no registry (one package, no dependencies, no install scripts), and used from there against
 * a running gateway, from JavaScript and from TypeScript through its .d.ts files.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Cl } from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../support/fake-node.js';
import { hex, MAINNET_ADDR, SAMPLE_ABI } from '../support/fixtures.js';
import { type RunningGateway, startGateway, testEnv } from '../support/gateway.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const CLIENT = path.join(ROOT, 'client');
const rootPkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
const clientPkg = JSON.parse(readFileSync(path.join(CLIENT, 'package.json'), 'utf8'));

let node: FakeNode;
let gw: RunningGateway;
let work: string;
let app: string;
let files: string[];

/** npm, quietly and without the registry. */
function npm(args: string[], cwd: string): string {
  return execFileSync('npm', [...args, '--offline', '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, npm_config_update_notifier: 'false' },
  });
}

const run = promisify(execFile);

/** tsc's report (empty when the program type-checks). */
function tscOutput(args: string[]): string {
  try {
    return execFileSync(process.execPath, args, { cwd: app, encoding: 'utf8' });
  } catch (err) {
    return String((err as { stdout?: string }).stdout ?? err);
  }
}

beforeAll(async () => {
  execFileSync(process.execPath, ['client/build.mjs'], { cwd: ROOT });
  work = mkdtempSync(path.join(os.tmpdir(), 'clarity-cache-client-'));
  const packed = JSON.parse(npm(['pack', '--json', '--pack-destination', work], CLIENT)) as Array<{
    filename: string;
    files: Array<{ path: string }>;
  }>;
  files = packed[0]!.files.map((f) => f.path).sort();
  app = path.join(work, 'dapp');
  execFileSync('mkdir', [app]);
  npm(['install', path.join(work, packed[0]!.filename)], app);

  node = await startFakeNode();
  node.setAbi(MAINNET_ADDR, 'demo', SAMPLE_ABI);
  node.setReadOnly(MAINNET_ADDR, 'demo', 'get-balance', { okay: true, result: hex(Cl.ok(Cl.uint(5))) });
  gw = await startGateway(testEnv(node.url));
}, 120_000);

afterAll(async () => {
  await gw?.close();
  await node?.close();
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

describe('the package clarity-cache-client', () => {
  it("has the server's version, no dependencies and no install scripts", () => {
    expect(clientPkg.name).toBe('clarity-cache-client');
    expect(clientPkg.version).toBe(rootPkg.version);
    expect(clientPkg.dependencies ?? {}).toEqual({});
    expect(clientPkg.peerDependencies ?? {}).toEqual({});
    for (const hook of ['preinstall', 'install', 'postinstall', 'prepare', 'prepack'])
      expect(clientPkg.scripts?.[hook]).toBeUndefined();
  });

  it('packs its module and its .d.ts files, nothing of the server', () => {
    expect(files).toContain('dist/index.mjs');
    expect(files).toContain('dist/index.d.ts');
    expect(files).toContain('dist/types.d.ts');
    expect(
      files.every((f) => ['package.json', 'README.md', 'LICENSE'].includes(f) || f.startsWith('dist/')),
    ).toBe(true);
    const code = readFileSync(path.join(CLIENT, 'dist/index.mjs'), 'utf8');
    // fetch only: no Node built-in and no import of anything at all.
    expect(code).not.toMatch(/\bfrom\s*["']|\bimport\s*\(|\brequire\s*\(/);
    for (const dts of files.filter((f) => f.endsWith('.d.ts'))) {
      const text = readFileSync(path.join(CLIENT, dts), 'utf8');
      for (const m of text.matchAll(/^(?:import|export)\b.*\bfrom\s+'([^']+)'/gm))
        expect(m[1]).toMatch(/^\.\/[a-z-]+\.js$/);
    }
  });

  it('ships the README and the licence its package.json declares', () => {
    // Every entry of "files" names something that is packed (a missing README was silently left out).
    for (const entry of clientPkg.files as string[]) {
      const pattern = new RegExp(`^${entry.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}$`);
      expect(
        files.some((f) => pattern.test(f)),
        entry,
      ).toBe(true);
    }
    expect(files).toContain('README.md');
    expect(readFileSync(path.join(CLIENT, 'README.md'), 'utf8')).toContain('# clarity-cache-client');
    // The licence it declares, as text: MIT asks for its notice to travel with the copies.
    expect(clientPkg.license).toBe('MIT');
    expect(files).toContain('LICENSE');
    expect(readFileSync(path.join(CLIENT, 'LICENSE'), 'utf8')).toMatch(/^MIT License\n\nCopyright \(c\) /);
  });

  it('installs as one package into an empty folder', () => {
    const installed = readdirSync(path.join(app, 'node_modules')).filter((n) => !n.startsWith('.'));
    expect(installed).toEqual(['clarity-cache-client']);
    const lock = JSON.parse(readFileSync(path.join(app, 'package-lock.json'), 'utf8'));
    expect(Object.keys(lock.packages).filter((k) => k !== '')).toEqual(['node_modules/clarity-cache-client']);
  });

  it('calls the gateway from the installed package', async () => {
    const script = `
      import { createClient, InvalidFunctionError } from 'clarity-cache-client';
      const client = createClient({ baseUrl: process.env.GATEWAY });
      const value = await client.readOnly('${MAINNET_ADDR}.demo', 'get-balance', [{ type: 'principal', value: '${MAINNET_ADDR}' }]);
      const err = await client.readOnly('${MAINNET_ADDR}.demo', 'nope', []).catch((e) => e);
      const known = await client.knownContracts();
      console.log(JSON.stringify({ value, typed: err instanceof InvalidFunctionError, code: err.code, known: known.stats.cached }));
    `;
    writeFileSync(path.join(app, 'use.mjs'), script);
    // Asynchronously: the gateway answers from this very process.
    const { stdout } = await run(process.execPath, ['use.mjs'], {
      cwd: app,
      env: { ...process.env, GATEWAY: gw.url },
    });
    expect(JSON.parse(stdout)).toEqual({ value: '5', typed: true, code: 'INVALID_FUNCTION', known: 1 });
  });

  it('type-checks a TypeScript caller against its .d.ts files', () => {
    writeFileSync(
      path.join(app, 'use.ts'),
      `import { createClient, type ContractAbi, ContractError } from 'clarity-cache-client';
const client = createClient({ baseUrl: 'http://localhost:3000', retries: 1 });
export async function f(): Promise<string[]> {
  const abi: ContractAbi = await client.abi('SP3K8BC0PPEVCV7NZ6QSRWPQ2JE9E5B6N3PA0KBR9.demo');
  try { await client.readOnly('a.b', 'c', [{ type: 'uint', value: '1' }]); } catch (e) { if (e instanceof ContractError) return [e.code]; }
  return abi.functions.map((fn) => fn.name);
}
// @ts-expect-error: baseUrl is required
createClient({});
`,
    );
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    writeFileSync(
      path.join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          lib: ['es2022', 'dom'],
          types: [],
        },
        files: ['use.ts'],
      }),
    );
    const out = tscOutput([tsc, '-p', 'tsconfig.json']);
    expect(out).toBe('');
  });
});
