/**
 * The production bundle (`npm run build` -> dist/clarity-cache.mjs, what `npm start` runs) is
 * built here from the sources and exercised as a process: bundling must not lose anything
 * the sources do (native SQLite addon, OpenAPI/Swagger UI assets, the lazily loaded modules).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Cl } from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { hex, MAINNET_ADDR, SAMPLE_ABI } from '../../support/fixtures.js';
import { request } from '../../support/gateway.js';
import { startService } from '../../support/process.js';

let node: FakeNode;
let dir: string;
let bundle: string;

beforeAll(async () => {
  node = await startFakeNode();
  node.setAbi(MAINNET_ADDR, 'demo', SAMPLE_ABI);
  node.setReadOnly(MAINNET_ADDR, 'demo', 'get-balance', { okay: true, result: hex(Cl.ok(Cl.uint(5))) });
  dir = mkdtempSync(path.join(os.tmpdir(), 'clarity-cache-bundle-'));
  // Inside the repository, so that its external packages resolve from node_modules.
  bundle = path.resolve(import.meta.dirname, '../../../dist', `bundle-test-${process.pid}.mjs`);
  execFileSync(process.execPath, ['scripts/bundle.mjs', bundle], {
    cwd: path.resolve(import.meta.dirname, '../../..'),
  });
});

afterAll(async () => {
  await node?.close();
  rmSync(dir, { recursive: true, force: true });
  rmSync(bundle, { force: true });
  rmSync(`${bundle}.map`, { force: true });
});

describe('the production bundle', () => {
  it('serves calls from SQLite, the OpenAPI document and the docs page', async () => {
    const svc = await startService(
      { CACHE_STORE: 'sqlite', DATA_DIR: dir, STACKS_API_URL_MAINNET: node.url, ADMIN_TOKEN: 'bundle-token' },
      bundle,
    );
    try {
      const body = { functionArgs: [{ type: 'principal', value: MAINNET_ADDR }] };
      const url = `${svc.url}/contract-calls/read-only/${MAINNET_ADDR}/demo/get-balance`;
      expect((await request(url, { body })).body).toEqual({ success: true, data: '5' });
      const hit = await request(url, { body });
      expect(hit.headers.get('cache-status')).toBe('clarity-cache; hit');
      const spec = await request(`${svc.url}/openapi.json`);
      expect(spec.body.openapi).toBe('3.1.0');
      const docs = await fetch(`${svc.url}/docs/static/index.html`);
      expect(docs.status).toBe(200);
      expect((await request(`${svc.url}/metrics`)).body).toContain('clarity_cache_cache_requests_total');
    } finally {
      expect(await svc.stop()).toBe(0);
    }
  });
});
