/**
 * Storage faults over real HTTP: a full database, a lock
 * held by another connection, 8 MB ABIs against the parsed-ABI memo's byte bound, and (with
 * the service as a real process) a deleted and a corrupted database file and an unusable
 * DATA_DIR. Real SQLite files; the only stand-in is the fake Stacks node.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Cl } from '@stacks/transactions';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../../src/cache/stores/sqlite.js';
import { TieredStore } from '../../../src/cache/stores/tiered.js';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { hex, MAINNET_ADDR, SAMPLE_ABI } from '../../support/fixtures.js';
import { type RunningGateway, request, startGateway, testEnv } from '../../support/gateway.js';
import { runExpectingFailure, startService } from '../../support/process.js';
import { tmpDir } from '../../unit/cache/tmp-dir.js';

const TOKEN = 'storage-faults-token';
const admin = { authorization: `Bearer ${TOKEN}` };
const body = { functionArgs: [{ type: 'principal', value: MAINNET_ADDR }] };
const bust = { ...body, cacheControl: { bustCache: true } };
const callUrl = (base: string) => `${base}/contract-calls/read-only/${MAINNET_ADDR}/demo/get-balance`;

let node: FakeNode;
/** The node answers a new value on every call, so a stale answer is visible. */
let calls = 0;

beforeAll(async () => {
  node = await startFakeNode();
  node.setAbi(MAINNET_ADDR, 'demo', SAMPLE_ABI);
  // Each answer differs, and from the second on it is larger (20 kB): rewriting the entry
  // then needs new pages, which a full database cannot give.
  node.setReadOnly(MAINNET_ADDR, 'demo', 'get-balance', () => {
    calls++;
    return {
      okay: true,
      result: hex(Cl.ok(Cl.stringAscii(`${calls}:`.padEnd(calls === 1 ? 8 : 20_000, 'x')))),
    };
  });
});

afterAll(async () => {
  await node?.close();
});

let tmp: ReturnType<typeof tmpDir>;
const running: { close(): Promise<unknown> }[] = [];
beforeEach(() => {
  tmp = tmpDir('storage-faults');
});
afterEach(async () => {
  for (const r of running.splice(0).reverse()) await r.close();
  tmp.remove();
});

async function storeErrors(base: string, op: string): Promise<number> {
  const text = (await request(`${base}/metrics`)).body as string;
  const line = text.split('\n').find((l) => l.startsWith(`clarity_cache_store_errors_total{op="${op}"}`));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}

describe('a full database (disk full)', () => {
  it('a bustCache whose write fails does not claim stored, is counted, turns /ready degraded, and the older value never comes back', async () => {
    const cold = SqliteStore.open(tmp.dir, 'clarity-cache.db', { sweepIntervalMs: 0, maxBytes: 96 * 1024 });
    const first: RunningGateway = await startGateway(testEnv(node.url, { ADMIN_TOKEN: TOKEN }), {
      store: new TieredStore({ maxEntries: 100 }, cold),
    });
    running.push(first);
    const miss = await request(callUrl(first.url), { body });
    expect(miss.headers.get('cache-status')).toBe('clarity-cache; fwd=miss; stored');
    const old = miss.body.data;

    // Something else fills the database (as other files fill a disk).
    let full = false;
    for (let i = 0; i < 100 && !full; i++) {
      await cold.set(`filler:${i}`, 'x'.repeat(8 * 1024)).catch(() => {
        full = true;
      });
    }
    expect(full).toBe(true);

    const busted = await request(callUrl(first.url), { body: bust });
    expect(busted.status).toBe(200);
    expect(busted.body.data).not.toBe(old);
    expect(busted.headers.get('cache-status')).toBe('clarity-cache; fwd=request');
    expect(await storeErrors(first.url, 'set')).toBeGreaterThanOrEqual(1);
    const ready = await request(`${first.url}/ready`);
    expect(ready.body.data.status).toBe('degraded');
    expect(ready.body.data.checks.store).toMatchObject({ ok: false, kind: 'sqlite' });
    expect(ready.body.data.checks.store.error).toContain(cold.file);
    // This process keeps answering the new value (its hot copy), never the older one.
    expect((await request(callUrl(first.url), { body })).body.data).toBe(busted.body.data);
    await first.close();

    // After a restart on the same file, the older value must not come back either.
    const second = await startGateway(
      testEnv(node.url, { CACHE_STORE: 'sqlite', DATA_DIR: tmp.dir, ADMIN_TOKEN: TOKEN }),
    );
    running.push(second);
    const after = await request(callUrl(second.url), { body });
    expect(after.body.data).not.toBe(old);
    expect(after.headers.get('cache-status')).toBe('clarity-cache; fwd=miss; stored');
  });
});

describe('a lock held by another connection on the SQLite file', () => {
  it('a write gives up at once and is reported; hits keep being answered; admin answers an envelope; all recover when released', async () => {
    const gw = await startGateway(
      testEnv(node.url, { CACHE_STORE: 'sqlite', DATA_DIR: tmp.dir, ADMIN_TOKEN: TOKEN }),
    );
    running.push(gw);
    const file = path.join(tmp.dir, 'clarity-cache.db');
    await request(callUrl(gw.url), { body });
    // The call cached the contract's ABI on the way: a hit from now on.
    const abi = `${gw.url}/contract-calls/abi/${MAINNET_ADDR}/demo`;
    expect((await request(abi)).headers.get('cache-status')).toBe('clarity-cache; hit');

    const other = new Database(file);
    running.push({ close: async () => other.close() });
    other.exec('BEGIN EXCLUSIVE');
    try {
      const [busted, hit] = await Promise.all([request(callUrl(gw.url), { body: bust }), request(abi)]);
      expect(busted.status).toBe(200);
      expect(busted.headers.get('cache-status')).toBe('clarity-cache; fwd=request');
      expect(hit.status).toBe(200);
      expect(hit.headers.get('cache-status')).toBe('clarity-cache; hit');

      const ready = await request(`${gw.url}/ready`);
      expect(ready.body.data.status).toBe('degraded');
      expect(ready.body.data.checks.store.error).toMatch(/locked|busy/i);
      expect(ready.body.data.checks.store.error).toContain(file);
      expect(await storeErrors(gw.url, 'set')).toBeGreaterThanOrEqual(1);

      const removed = await request(`${gw.url}/admin/cache`, { method: 'DELETE', headers: admin });
      expect(removed.status).toBe(503);
      expect(removed.body).toMatchObject({ success: false, error: { code: 'SERVICE_UNAVAILABLE' } });
      expect(removed.body.error.message).toMatch(/locked|busy/i);
      expect(await storeErrors(gw.url, 'delete')).toBeGreaterThanOrEqual(1);
    } finally {
      other.exec('ROLLBACK');
    }

    const again = await request(callUrl(gw.url), { body: bust });
    expect(again.headers.get('cache-status')).toBe('clarity-cache; fwd=request; stored');
    expect((await request(`${gw.url}/ready`)).body.data.status).toBe('ready');
    const removed = await request(`${gw.url}/admin/cache`, { method: 'DELETE', headers: admin });
    expect(removed.status).toBe(200);
  });
});

/** An ABI document of about `bytes` bytes of JSON (many small functions). */
function bigAbi(bytes: number): unknown {
  const fn = (i: number) => ({
    name: `function-number-${i}`,
    access: 'read_only',
    args: [
      { name: 'who', type: 'principal' },
      { name: 'amount', type: 'uint128' },
    ],
    outputs: { type: { response: { ok: 'uint128', error: 'uint128' } } },
  });
  const each = JSON.stringify(fn(0)).length + 1;
  const functions = Array.from({ length: Math.ceil(bytes / each) }, (_, i) => fn(i));
  return { ...SAMPLE_ABI, functions };
}

describe('the parsed-ABI memo', () => {
  it('stays under ABI_MEMO_MAX_BYTES with 8 MB ABIs', async () => {
    const limit = 40 * 1024 * 1024;
    const abi = bigAbi(8 * 1024 * 1024);
    const names = ['big-a', 'big-b', 'big-c', 'big-d', 'big-e'];
    for (const name of names) node.setAbi(MAINNET_ADDR, name, abi);
    const gw = await startGateway(
      testEnv(node.url, {
        ADMIN_TOKEN: TOKEN,
        ABI_MEMO_MAX_BYTES: String(limit),
        BODY_LIMIT_BYTES: '1048576',
      }),
    );
    running.push(gw);
    for (const name of names) {
      const res = await fetch(`${gw.url}/contract-calls/abi/${MAINNET_ADDR}/${name}`);
      expect(res.status).toBe(200);
      expect((await res.text()).length).toBeGreaterThan(8 * 1024 * 1024);
      const stats = await request(`${gw.url}/admin/cache/stats`, { headers: admin });
      expect(stats.body.data.abiMemoBytes).toBeGreaterThan(8 * 1024 * 1024);
      expect(stats.body.data.abiMemoBytes).toBeLessThanOrEqual(limit);
    }
    for (const name of names) node.deleteAbi(MAINNET_ADDR, name);
  });
});

describe('the service process with a damaged DATA_DIR', () => {
  const env = () => ({
    CACHE_STORE: 'sqlite',
    DATA_DIR: tmp.dir,
    STACKS_API_URL_MAINNET: node.url,
    STACKS_API_URL_TESTNET: node.url,
    UPSTREAM_RETRY_BASE_MS: '1',
  });

  it('reports a deleted database file by path: no "stored", /ready degraded, counted, logged', async () => {
    const svc = await startService(env());
    running.push({ close: () => svc.stop() });
    const file = path.join(tmp.dir, 'clarity-cache.db');
    expect((await request(callUrl(svc.url), { body })).headers.get('cache-status')).toBe(
      'clarity-cache; fwd=miss; stored',
    );
    for (const f of [file, `${file}-wal`, `${file}-shm`]) fs.rmSync(f, { force: true });

    const busted = await request(callUrl(svc.url), { body: bust });
    expect(busted.status).toBe(200);
    expect(busted.headers.get('cache-status')).toBe('clarity-cache; fwd=request');
    const ready = await request(`${svc.url}/ready`);
    expect(ready.body.data.status).toBe('degraded');
    expect(ready.body.data.checks.store.error).toBe(
      `the cache database ${file} was deleted while open: writes are lost; restart the gateway to recreate it`,
    );
    expect(await storeErrors(svc.url, 'set')).toBeGreaterThanOrEqual(1);
    expect(svc.output()).toContain(`${file} was deleted while open`);
    expect(await svc.stop()).toBe(0);
  });

  it('refuses to start on a corrupted database file with one line naming it and what to do', async () => {
    const file = path.join(tmp.dir, 'clarity-cache.db');
    fs.writeFileSync(file, Buffer.alloc(64 * 1024, 0x5a));
    const { code, stderr } = await runExpectingFailure({ ...env(), LOG_LEVEL: 'silent' });
    expect(code).toBe(1);
    const lines = stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`the cache database ${file} is corrupted`);
    expect(lines[0]).toContain('move it away or delete it, then start again');
  });

  it('names DATA_DIR when it is not a usable directory', async () => {
    const notADir = path.join(tmp.dir, 'a-file');
    fs.writeFileSync(notADir, 'x');
    const { code, stderr } = await runExpectingFailure({ ...env(), DATA_DIR: notADir, LOG_LEVEL: 'silent' });
    expect(code).toBe(1);
    const lines = stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`DATA_DIR ${notADir}`);
  });
});
