/**
 * The admin API over the whole cache: DELETE /admin/cache removes node route answers (and their
 * remembered 404s) as it removes read-only results and ABIs, and GET /admin/cache/stats counts
 * node route answers by cache class, walking the endpoint table's key prefixes. Checked at the
 * node: an entry that is gone is asked again.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { hex, INFO_VALUE, MAINNET_ADDR, SAMPLE_ABI } from '../../support/fixtures.js';
import { type RunningGateway, request, startGateway, testEnv } from '../../support/gateway.js';

const TOKEN = 'node-routes-admin-token';
const auth = { authorization: `Bearer ${TOKEN}` };
const JSON_TYPE = { 'content-type': 'application/json' };

const SOURCE = `/v2/contracts/source/${MAINNET_ADDR}/demo`;
const DATA_VAR = `/v2/data_var/${MAINNET_ADDR}/demo/counter`;
const MISSING_VAR = `/v2/data_var/${MAINNET_ADDR}/demo/missing`;
const ACCOUNT = `/v2/accounts/${MAINNET_ADDR}`;
const POX = '/v2/pox';
const FEE = '/v2/fees/transfer';

let node: FakeNode;
let gw: RunningGateway;

const hits = (path: string) => node.requests.filter((r) => r.path === path).length;

async function get(path: string): Promise<{ status: number; cacheStatus: string | null }> {
  const res = await fetch(`${gw.url}${path}`);
  await res.text();
  return { status: res.status, cacheStatus: res.headers.get('cache-status') };
}

/** One answer of each cached class, a remembered 404, a read-only result and its ABI. */
async function fill(): Promise<void> {
  for (const path of [SOURCE, DATA_VAR, ACCOUNT, POX, FEE]) expect((await get(path)).status).toBe(200);
  expect((await get(MISSING_VAR)).status).toBe(404);
  const call = await request(`${gw.url}/contract-calls/read-only/${MAINNET_ADDR}/demo/get-info`, {
    body: { functionArgs: [] },
  });
  expect(call.status).toBe(200);
}

beforeAll(async () => {
  node = await startFakeNode();
  node.setAbi(MAINNET_ADDR, 'demo', SAMPLE_ABI);
  node.setSource(MAINNET_ADDR, 'demo', '(define-data-var counter uint u1)');
  node.setReadOnly(MAINNET_ADDR, 'demo', 'get-info', { okay: true, result: hex(INFO_VALUE) });
  const json = (body: unknown) => ({ status: 200, body: JSON.stringify(body), headers: JSON_TYPE });
  node.setRoute('GET', DATA_VAR, json({ data: '0x0100000000000000000000000000000001', proof: '' }));
  node.setRoute('GET', ACCOUNT, json({ balance: '0x0', locked: '0x0', nonce: 3 }));
  node.setRoute('GET', POX, json({ contract_id: 'SP000000000000000000002Q6VF78.pox-4' }));
  node.setRoute('GET', FEE, json(1));
  gw = await startGateway(testEnv(node.url, { ADMIN_TOKEN: TOKEN, UPSTREAM_RETRIES: '0' }));
});

afterAll(async () => {
  await gw?.close();
  await node?.close();
});

beforeEach(async () => {
  await request(`${gw.url}/admin/cache`, { method: 'DELETE', headers: auth });
  node.resetStats();
});

describe('GET /admin/cache/stats', () => {
  it('counts node route answers by cache class, apart from read-only results and ABIs', async () => {
    await fill();
    const stats = await request(`${gw.url}/admin/cache/stats`, { headers: auth });
    expect(stats.status).toBe(200);
    // Never-cached routes (fees) hold nothing; a remembered 404 is not an answer.
    expect(stats.body.data.entries).toEqual({
      abis: 1,
      readOnlyResults: 1,
      nodeRoutes: { immutable: 1, latest: 1, account: 1, timed: 1 },
    });
  });
});

describe('DELETE /admin/cache', () => {
  it('removes node route answers and their remembered 404s too', async () => {
    await fill();
    expect((await get(SOURCE)).cacheStatus).toMatch(/^clarity-cache; hit/);
    const all = await request(`${gw.url}/admin/cache`, { method: 'DELETE', headers: auth });
    // Counted: the read-only result, the ABI and the four node route answers.
    expect(all.body).toEqual({ success: true, data: { deleted: 6 } });
    const stats = await request(`${gw.url}/admin/cache/stats`, { headers: auth });
    expect(stats.body.data.entries).toEqual({
      abis: 0,
      readOnlyResults: 0,
      nodeRoutes: { immutable: 0, latest: 0, account: 0, timed: 0 },
    });

    node.resetStats();
    for (const path of [SOURCE, DATA_VAR, ACCOUNT, POX]) {
      expect((await get(path)).cacheStatus, path).toMatch(/fwd=miss; stored/);
      expect(hits(path), path).toBe(1);
    }
    // The remembered 404 went with them: the node is asked again.
    expect((await get(MISSING_VAR)).cacheStatus).toMatch(/fwd=miss; stored; ttl=30/);
    expect(hits(MISSING_VAR)).toBe(1);
  });
});
