/**
 * What the package ships, built as `npm run build` builds it (scripts/bundle.mjs into dist/):
 * `import { createClient } from 'clarity-cache/client'` through package.json "exports", the
 * `clarity-cache` command built into dist/cli.mjs, and `clarity-cache serve` serving the explorer page
 * from the prebuilt files in dist/explorer/.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Cl } from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { hex, MAINNET_ADDR, SAMPLE_ABI } from '../../support/fixtures.js';
import { type RunningGateway, request, startGateway, testEnv } from '../../support/gateway.js';
import { freePort, spawnNode } from '../../support/process.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
let node: FakeNode;
let gw: RunningGateway;

/** A node process from the repository root, its output collected. */
const runNode = spawnNode;

beforeAll(async () => {
  execFileSync(process.execPath, ['scripts/bundle.mjs'], { cwd: ROOT });
  node = await startFakeNode();
  node.setAbi(MAINNET_ADDR, 'demo', SAMPLE_ABI);
  node.setReadOnly(MAINNET_ADDR, 'demo', 'get-balance', { okay: true, result: hex(Cl.ok(Cl.uint(5))) });
  gw = await startGateway(testEnv(node.url));
}, 120_000);

afterAll(async () => {
  await gw?.close();
  await node?.close();
});

describe('the built package', () => {
  it('exports the typed client at clarity-cache/client', async () => {
    expect(pkg.exports['./client'].default).toBe('./dist/client.mjs');
    expect(pkg.exports['./client'].types).toBe('./dist/types/client/index.d.ts');
    const script = `
      import { createClient, ContractError } from 'clarity-cache/client';
      const client = createClient({ baseUrl: process.env.GATEWAY });
      const value = await client.readOnly('${MAINNET_ADDR}.demo', 'get-balance', [{ type: 'principal', value: '${MAINNET_ADDR}' }]);
      const err = await client.readOnly('${MAINNET_ADDR}.demo', 'nope', []).catch((e) => e);
      console.log(JSON.stringify({ value, code: err.code, typed: err instanceof Error && err.name }));
    `;
    const r = await runNode(['--input-type=module', '-e', script], { GATEWAY: gw.url }).done;
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual({
      value: '5',
      code: 'INVALID_FUNCTION',
      typed: 'InvalidFunctionError',
    });
  });

  it('has the clarity-cache bin, whose built program is dist/cli.mjs', async () => {
    // The bin is a committed launcher (it runs dist/cli.mjs where there are no sources to run;
    // test/cli/fresh-clone.test.ts): a bin that only the build writes is missing in a fresh clone.
    expect(pkg.bin).toEqual({ 'clarity-cache': 'bin/clarity-cache.mjs' });
    const r = await runNode(
      ['dist/cli.mjs', 'call', `${MAINNET_ADDR}.demo`, 'get-balance', `'${MAINNET_ADDR}`],
      {
        CLARITY_CACHE_URL: gw.url,
      },
    ).done;
    expect(r).toEqual({ code: 0, stdout: '"5"\n', stderr: '' });
  });

  it('serves the prebuilt explorer page from `clarity-cache serve`', async () => {
    const port = await freePort();
    const svc = runNode(['dist/cli.mjs', 'serve', '--port', String(port), '--host', '127.0.0.1'], {
      CACHE_STORE: 'memory',
      LOG_LEVEL: 'info',
      STACKS_API_URL_MAINNET: node.url,
    });
    try {
      await new Promise<void>((resolve, reject) => {
        svc.child.stdout.on('data', () => {
          if (svc.output().includes('listening on')) resolve();
        });
        void svc.done.then(() => reject(new Error(`serve exited:\n${svc.output()}`)));
      });
      const manifest = JSON.parse(readFileSync(path.join(ROOT, 'dist/explorer/manifest.json'), 'utf8'));
      const page = await request(`http://127.0.0.1:${port}/explorer`);
      expect(page.status).toBe(200);
      expect(page.body).toBe(manifest.html);
      for (const name of Object.keys(manifest.types)) {
        const res = await fetch(`http://127.0.0.1:${port}/explorer/assets/${name}`);
        expect(res.status).toBe(200);
        expect(Buffer.from(await res.arrayBuffer())).toEqual(
          readFileSync(path.join(ROOT, 'dist/explorer/assets', name)),
        );
      }
    } finally {
      svc.child.kill('SIGTERM');
      await svc.done;
    }
  });
});
