/**
 * A damaged stored entry (a SQLite row whose value is not one valid Clarity value, on a real
 * file; foreign bytes, or a record of its own form holding garbage, under a key of a real redis-server) is a miss: removed, fetched again, counted in clarity_cache_store_corrupt_total,
 * never answered, never blamed on the client.
 */
import path from 'node:path';
import { Cl } from '@stacks/transactions';
import Database from 'better-sqlite3';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { hex, MAINNET_ADDR, SAMPLE_ABI } from '../../support/fixtures.js';
import { request, startGateway, testEnv } from '../../support/gateway.js';
import { metricValue, parseMetrics } from '../../support/prom.js';
import { startRedis } from '../../support/redis-server.js';
import { tmpDir } from '../../unit/cache/tmp-dir.js';

let node: FakeNode;
/** Another sender than the SQLite case's, so that the two never share an entry. */
const OTHER = 'SP2J6ZY48GV1EZ5V2V5RB9MP66SW86PYKKNRV9EJ7';
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

const redis = await startRedis();

describe.skipIf(redis === undefined)('foreign bytes in Redis', () => {
  afterAll(async () => {
    await redis?.stop();
  });

  it('are a miss: removed, fetched again and counted, never a 400, with a second instance on the same Redis', async () => {
    const env = testEnv(node.url, { CACHE_STORE: 'redis', REDIS_URL: `${redis!.url}/3` });
    const url = (base: string) => `${base}/contract-calls/read-only/${MAINNET_ADDR}/demo/get-balance`;
    const body = { functionArgs: [{ type: 'principal', value: OTHER }] };
    const a = await startGateway(env);
    const b = await startGateway(env);
    const admin = new Redis(`${redis!.url}/3`);
    try {
      expect((await request(url(a.url), { body })).body.data).toBe('77');
      const keys = (await admin.keys('cc:k:ro:*')).filter((k) => k.includes('get-balance'));
      expect(keys.length).toBeGreaterThan(0);
      for (const key of keys) await admin.set(key, '\u0000\u00ffnot an entry');

      const calls = node.count('call-read');
      const res = await request(url(b.url), { body });
      expect(res.status).toBe(200);
      expect(res.body.data).toBe('77');
      expect(res.headers.get('cache-status')).not.toContain('hit');
      expect(node.count('call-read')).toBe(calls + 1);
      // Replaced whole: both instances answer it as a hit now.
      expect((await request(url(a.url), { body })).headers.get('cache-status')).toContain('hit');
      const metrics = parseMetrics(await (await fetch(`${b.url}/metrics`)).text());
      expect(metricValue(metrics, 'clarity_cache_store_corrupt_total')).toBe(1);
    } finally {
      admin.disconnect();
      await a.close();
      await b.close();
    }
  });

  // A record of the store's own form (JSON with every field right) whose value is garbage: the
  // record decodes, so only what reads the value can tell, and it must count as every damaged
  // entry does. The read-only result's value is checked when it is rendered; these are the
  // ABI and the remembered 404 of an unknown contract.
  it.each([
    ['an ABI', `/contract-calls/abi/${MAINNET_ADDR}/demo`, 'abi:', 200, 'interface'],
    ['a remembered 404', `/contract-calls/abi/${MAINNET_ADDR}/missing`, 'abi404:', 404, 'interface'],
  ] as const)(
    'a well-formed record holding garbage as %s is a miss: asked again and counted',
    async (_what, path, ns, status, kind) => {
      const env = testEnv(node.url, { CACHE_STORE: 'redis', REDIS_URL: `${redis!.url}/4` });
      const admin = new Redis(`${redis!.url}/4`);
      await admin.flushdb();
      const a = await startGateway(env);
      let aOpen = true;
      try {
        expect((await request(`${a.url}${path}`)).status).toBe(status);
        const keys = await admin.keys(`cc:k:${ns}*`);
        expect(keys).toHaveLength(1);
        const record = JSON.parse((await admin.get(keys[0]!))!) as { v: string };
        await admin.set(keys[0]!, JSON.stringify({ ...record, v: 'garbage' }));
        aOpen = false;
        await a.close();

        // A fresh instance (nothing in its hot tier) reads the record from Redis.
        const b = await startGateway(env);
        try {
          const corrupt = async () =>
            metricValue(
              parseMetrics(await (await fetch(`${b.url}/metrics`)).text()),
              'clarity_cache_store_corrupt_total',
            );
          const before = await corrupt();
          const asked = node.count(kind);
          const res = await request(`${b.url}${path}`);
          expect(res.status).toBe(status);
          expect(res.headers.get('cache-status')).not.toContain('hit');
          expect(node.count(kind)).toBe(asked + 1);
          expect(await corrupt()).toBe(before + 1);
          // Replaced whole in Redis: the node's answer again.
          expect((JSON.parse((await admin.get(keys[0]!))!) as { v: string }).v).toBe(record.v);
        } finally {
          await b.close();
        }
      } finally {
        if (aOpen) await a.close();
        admin.disconnect();
      }
    },
  );
});
