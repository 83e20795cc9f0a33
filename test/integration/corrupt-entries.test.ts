/**
 * A damaged stored entry (here: a SQLite row whose value is not one valid Clarity value, on a
 * real file) is a miss: removed, fetched again, counted in clarity_cache_store_corrupt_total,
 * never answered, never blamed on the client.
 */
import path from 'node:path';
import { Cl } from '@stacks/transactions';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../support/fake-node.js';
import { hex, MAINNET_ADDR, SAMPLE_ABI } from '../support/fixtures.js';
import { request, startGateway, testEnv } from '../support/gateway.js';
import { metricValue, parseMetrics } from '../support/prom.js';
import { tmpDir } from '../unit/cache/tmp-dir.js';

let node: FakeNode;
beforeAll(async () => {
  node = await startFakeNode();
  node.setAbi(MAINNET_ADDR, 'demo', SAMPLE_ABI);
  node.setReadOnly(MAINNET_ADDR, 'demo', 'get-balance', { okay: true, result: hex(Cl.ok(Cl.uint(77))) });
});
afterAll(async () => {
  await node?.close();
});

describe('a damaged SQLite row', () => {
  it('is a miss: removed, fetched again and counted, never a 400', async () => {
    const { dir, remove } = tmpDir('corrupt');
    const env = testEnv(node.url, { CACHE_STORE: 'sqlite', DATA_DIR: dir });
    const url = (base: string) => `${base}/contract-calls/read-only/${MAINNET_ADDR}/demo/get-balance`;
    const body = { functionArgs: [{ type: 'principal', value: MAINNET_ADDR }] };
    try {
      const first = await startGateway(env);
      expect((await request(url(first.url), { body })).body.data).toBe('77');
      await first.close();

      // Damage every stored result of the function (the ABI rows stay as they are).
      const db = new Database(path.join(dir, 'clarity-cache.db'));
      const damaged = db
        .prepare("UPDATE entries SET value = '0x0c0000ffff' WHERE key LIKE '%get-balance%'")
        .run().changes;
      db.close();
      expect(damaged).toBeGreaterThan(0);

      const second = await startGateway(env);
      try {
        const calls = node.count('call-read');
        const res = await request(url(second.url), { body });
        expect(res.status).toBe(200);
        expect(res.body.data).toBe('77');
        expect(res.headers.get('cache-status')).not.toContain('hit');
        expect(node.count('call-read')).toBe(calls + 1);
        // Stored again, whole: the next answer is a hit.
        expect((await request(url(second.url), { body })).headers.get('cache-status')).toContain('hit');
        const metrics = parseMetrics(await (await fetch(`${second.url}/metrics`)).text());
        expect(metricValue(metrics, 'clarity_cache_store_corrupt_total')).toBe(1);
      } finally {
        await second.close();
      }
    } finally {
      remove();
    }
  });
});
