/**
 * known-contracts is answered from the store's key index, a page at a
 * time. With 100k cached ABIs (written straight into the SQLite file, not via upstream) the
 * default answer is one page (not a 12 MB document), the listing is never rebuilt from the
 * whole store, and following the cursors yields every contract once, in order. A small
 * cache still gets the whole listing in one answer, as before.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { abiKey } from '../../../src/cache/keys.js';
import { SqliteStore } from '../../../src/cache/stores/sqlite.js';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { MAINNET_ADDR, SAMPLE_ABI, TESTNET_ADDR } from '../../support/fixtures.js';
import { type RunningGateway, request, startGateway, testEnv } from '../../support/gateway.js';

const COUNT = 100_000;
let node: FakeNode;
let dir: string;
let gw: RunningGateway;

/** The i-th contract: mainnet, one address, names that sort as their index. */
const nameOf = (i: number): string => `c${String(i).padStart(6, '0')}`;

beforeAll(async () => {
  node = await startFakeNode();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'clarity-cache-known-'));
  // Create the file with the store's schema, then fill it in one transaction.
  await SqliteStore.open(dir).close();
  const db = new Database(path.join(dir, 'clarity-cache.db'));
  const insert = db.prepare('INSERT INTO entries (key, value, stored_at) VALUES (?, ?, ?)');
  const json = JSON.stringify(SAMPLE_ABI);
  const now = Date.now();
  db.transaction(() => {
    for (let i = 0; i < COUNT; i++) insert.run(abiKey('mainnet', MAINNET_ADDR, nameOf(i)), json, now);
  })();
  db.close();
  gw = await startGateway(testEnv(node.url, { CACHE_STORE: 'sqlite', DATA_DIR: dir }));
}, 120_000);

afterAll(async () => {
  await gw?.close();
  await node?.close();
  if (dir !== undefined) fs.rmSync(dir, { recursive: true, force: true });
});

const known = (query = '') => request(`${gw.url}/contract-calls/known-contracts${query}`);

describe('known-contracts with 100k cached ABIs', () => {
  it('answers one page by default, with the total and a cursor, without listing the whole store', async () => {
    const list = vi.spyOn(gw.gateway.store, 'list');
    const res = await fetch(`${gw.url}/contract-calls/known-contracts`);
    const text = await res.text();
    expect(list).not.toHaveBeenCalled();
    list.mockRestore();
    expect(res.status).toBe(200);
    // One page of 1000 contracts: about 110 KB, not 12 MB.
    expect(Buffer.byteLength(text)).toBeLessThan(200_000);
    const body = JSON.parse(text);
    expect(body.data.stats).toEqual({ total: COUNT, cached: COUNT });
    expect(body.data.contracts.cached).toHaveLength(1000);
    expect(body.data.contracts.cached[0]).toEqual({
      contractAddress: MAINNET_ADDR,
      contractName: nameOf(0),
      network: 'mainnet',
    });
    expect(body.data.nextCursor).toBe(`mainnet:${MAINNET_ADDR}.${nameOf(999)}`);
    expect(node.total).toBe(0);
  });

  it('follows the cursors through every contract once, in order', async () => {
    const names: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const res = await known(
        `?limit=10000${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`,
      );
      expect(res.status).toBe(200);
      for (const c of res.body.data.contracts.cached) names.push(c.contractName);
      cursor = res.body.data.nextCursor;
      pages++;
    } while (cursor !== undefined && pages < 20);
    expect(pages).toBe(10);
    expect(names).toHaveLength(COUNT);
    expect(names[0]).toBe(nameOf(0));
    expect(names[COUNT - 1]).toBe(nameOf(COUNT - 1));
    expect(names.every((n, i) => n === nameOf(i))).toBe(true);
  });

  it('sees an ABI stored after start-up (the index is the store, kept as ABIs are written)', async () => {
    node.setAbi(MAINNET_ADDR, 'zz-late', SAMPLE_ABI);
    expect((await request(`${gw.url}/contract-calls/abi/${MAINNET_ADDR}/zz-late`)).status).toBe(200);
    const last = await known(
      `?limit=5&cursor=${encodeURIComponent(`mainnet:${MAINNET_ADDR}.${nameOf(COUNT - 2)}`)}`,
    );
    expect(last.body.data.contracts.cached.map((c: { contractName: string }) => c.contractName)).toEqual([
      nameOf(COUNT - 1),
      'zz-late',
    ]);
    expect(last.body.data.nextCursor).toBeUndefined();
  });

  it.each([['0'], ['-1'], ['abc'], ['10001'], ['1.5']])(
    'refuses limit=%s with VALIDATION_ERROR',
    async (limit) => {
      const res = await known(`?limit=${limit}`);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      expect(res.body.error.message).toContain('limit must be a whole number from 1 to 10000');
    },
  );
});

describe('known-contracts on a small cache', () => {
  it('is the whole listing in one answer, without a cursor', async () => {
    const small = await startGateway(testEnv(node.url));
    try {
      node.setAbi(MAINNET_ADDR, 'demo', SAMPLE_ABI);
      node.setAbi(TESTNET_ADDR, 'demo', SAMPLE_ABI);
      for (const [addr, name] of [
        [TESTNET_ADDR, 'demo'],
        [MAINNET_ADDR, 'demo'],
        [MAINNET_ADDR, 'zz-late'],
      ] as const) {
        expect((await request(`${small.url}/contract-calls/abi/${addr}/${name}`)).status).toBe(200);
      }
      const res = await request(`${small.url}/contract-calls/known-contracts`);
      expect(res.body).toEqual({
        success: true,
        data: {
          stats: { total: 3, cached: 3 },
          contracts: {
            cached: [
              { contractAddress: MAINNET_ADDR, contractName: 'demo', network: 'mainnet' },
              { contractAddress: MAINNET_ADDR, contractName: 'zz-late', network: 'mainnet' },
              { contractAddress: TESTNET_ADDR, contractName: 'demo', network: 'testnet' },
            ],
          },
        },
      });
      const paged = await request(`${small.url}/contract-calls/known-contracts?limit=2`);
      expect(paged.body.data.contracts.cached).toHaveLength(2);
      expect(paged.body.data.stats.total).toBe(3);
      expect(paged.body.data.nextCursor).toBe(`mainnet:${MAINNET_ADDR}.zz-late`);
      const rest = await request(
        `${small.url}/contract-calls/known-contracts?limit=2&cursor=${encodeURIComponent(paged.body.data.nextCursor)}`,
      );
      expect(rest.body.data.contracts.cached).toEqual([
        { contractAddress: TESTNET_ADDR, contractName: 'demo', network: 'testnet' },
      ]);
      expect(rest.body.data.nextCursor).toBeUndefined();
    } finally {
      await small.close();
    }
  });
});
