/**
 * The test suite leaves the checkout as it found it: a service the tests start with the default
 * store (SQLite in DATA_DIR, whose default is ./data of the repository it runs in) gets a data
 * directory of its own, removed when it exits, and the checkout's ./data is not touched.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { Cl } from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { hex, MAINNET_ADDR, SAMPLE_ABI } from '../../support/fixtures.js';
import { request } from '../../support/gateway.js';
import { startService } from '../../support/process.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const CHECKOUT_DATA = path.join(ROOT, 'data');

/** What ./data holds, with each file's modification time (undefined when there is no ./data). */
function checkoutData(): [string, number][] | undefined {
  return existsSync(CHECKOUT_DATA)
    ? readdirSync(CHECKOUT_DATA).map((f) => [f, statSync(path.join(CHECKOUT_DATA, f)).mtimeMs])
    : undefined;
}

let node: FakeNode;

beforeAll(async () => {
  node = await startFakeNode();
  node.setAbi(MAINNET_ADDR, 'demo', SAMPLE_ABI);
  node.setReadOnly(MAINNET_ADDR, 'demo', 'get-balance', { okay: true, result: hex(Cl.ok(Cl.uint(3))) });
});

afterAll(async () => {
  await node?.close();
});

describe('a service started by the tests with the default store', () => {
  it("keeps its SQLite file in a directory of its own, never the checkout's ./data", async () => {
    const before = checkoutData();
    const svc = await startService({ STACKS_API_URL_MAINNET: node.url, STACKS_API_URL_TESTNET: node.url });
    let dir: string | undefined;
    try {
      dir = /store sqlite in (\S+?)(?:;|"|\s|$)/.exec(svc.output())?.[1];
      expect(dir, svc.output()).toBeDefined();
      expect(path.relative(ROOT, dir!).startsWith('..')).toBe(true);
      // A stored answer: the file is written, and it is written there.
      const res = await request(`${svc.url}/contract-calls/read-only/${MAINNET_ADDR}/demo/get-balance`, {
        body: { functionArgs: [{ type: 'principal', value: MAINNET_ADDR }] },
      });
      expect(res.status).toBe(200);
      expect(existsSync(path.join(dir!, 'clarity-cache.db'))).toBe(true);
    } finally {
      await svc.stop();
    }
    expect(checkoutData()).toEqual(before);
    expect(existsSync(dir!)).toBe(false);
  });
});
