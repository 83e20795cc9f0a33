/**
 * The node routes of the endpoint table over real HTTP, against the fault-injecting stand-in:
 * answers equal the node's byte for byte (status, content type, body), each cache class is seen
 * by counting upstream requests, the network follows the address, the prefix or the default,
 * and nothing outside the table is ever forwarded.
 */

import { EventEmitter } from 'node:events';
import { Cl, serializeCV } from '@stacks/transactions';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createGateway } from '../../../src/app.js';
import { nodeKey } from '../../../src/cache/keys.js';
import { loadConfig } from '../../../src/config/index.js';
import { NODE_ENDPOINTS } from '../../../src/upstream/endpoints.js';
import { type FakeNode, type FakeRequest, startFakeNode } from '../../support/fake-node.js';
import { MAINNET_ADDR, TESTNET_ADDR } from '../../support/fixtures.js';
import { type RunningGateway, startGateway, testEnv } from '../../support/gateway.js';
import { metricValue, parseMetrics } from '../../support/prom.js';

let mainnet: FakeNode;
let testnet: FakeNode;
let gw: RunningGateway;
const arrived = new EventEmitter();

/** Resolves once `n` requests for `url` have reached their handler. */
function inside(url: string, n: number): Promise<void> {
  return new Promise((resolve) => {
    let seen = 0;
    const on = (u: string) => {
      if (u === url && ++seen === n) {
        arrived.off('request', on);
        resolve();
      }
    };
    arrived.on('request', on);
  });
}

const JSON_TYPE = 'application/json';
const dataVarPath = (name: string, address = MAINNET_ADDR) => `/v2/data_var/${address}/demo/${name}`;
const hits = (node: FakeNode, path: string) => node.requests.filter((r) => r.path === path).length;

async function call(
  path: string,
  init: {
    method?: string;
    body?: string | Uint8Array;
    contentType?: string;
    headers?: Record<string, string>;
  } = {},
): Promise<{ status: number; headers: Headers; text: string }> {
  const res = await fetch(`${gw.url}${path}`, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: {
      ...(init.body === undefined ? {} : { 'content-type': init.contentType ?? JSON_TYPE }),
      ...init.headers,
    },
    ...(init.body === undefined ? {} : { body: init.body }),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** A data var whose value is the node's current height, so a refetch shows. */
function dataVar(node: FakeNode, name: string, address = MAINNET_ADDR): void {
  node.setRoute('GET', dataVarPath(name, address), () => ({
    status: 200,
    body: JSON.stringify({ data: serializeCV(Cl.uint(node.tipHeight)), proof: '' }),
    headers: { 'content-type': JSON_TYPE },
  }));
}

beforeAll(async () => {
  mainnet = await startFakeNode({ tipHeight: 100 });
  testnet = await startFakeNode({ tipHeight: 500 });
  const config = loadConfig(
    testEnv(mainnet.url, {
      STACKS_API_URL_TESTNET: testnet.url,
      CHAIN_TIP_MAX_AGE_MS: '60000',
      UPSTREAM_RETRIES: '1',
    }),
  );
  const gateway = await createGateway(config);
  // Told of each request as its handler starts, so that a burst is known to be inside the
  // gateway before the node is let go (event-based, no sleeping).
  gateway.app.addHook('preHandler', async (request) => {
    arrived.emit('request', request.url);
  });
  const url = await gateway.app.listen({ port: 0, host: '127.0.0.1' });
  gw = { url, gateway, close: () => gateway.close() };
});

afterAll(async () => {
  await gw?.close();
  await mainnet?.close();
  await testnet?.close();
});

beforeEach(() => {
  mainnet.clearFaults();
  mainnet.resetStats();
  testnet.clearFaults();
  testnet.resetStats();
});

describe('answers are the node’s own', () => {
  it('passes status, content type and body bytes through, with the cache headers', async () => {
    const body = '{"source":"(define-read-only (f) u1)\\n","publish_height":7,"proof":""}';
    mainnet.setRoute('GET', `/v2/contracts/source/${MAINNET_ADDR}/exact`, {
      status: 200,
      body,
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });
    const miss = await call(`/v2/contracts/source/${MAINNET_ADDR}/exact`);
    expect(miss.status).toBe(200);
    expect(miss.text).toBe(body);
    expect(miss.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(miss.headers.get('cache-status')).toMatch(/fwd=miss; stored/);
    const hit = await call(`/v2/contracts/source/${MAINNET_ADDR}/exact`);
    expect(hit.text).toBe(body);
    expect(hit.headers.get('cache-status')).toMatch(/^clarity-cache; hit/);
    expect(hit.headers.get('age')).toMatch(/^\d+$/);
  });

  it('passes a node 404 through as the node wrote it, and remembers it for CACHE_NEGATIVE_TTL_S', async () => {
    const path = dataVarPath('missing');
    const statuses: (string | null)[] = [];
    for (let i = 0; i < 2; i++) {
      const res = await call(path);
      expect(res.status).toBe(404);
      expect(res.text).toBe('Not found');
      expect(res.headers.get('content-type')).toBe('text/plain');
      statuses.push(res.headers.get('cache-status'));
    }
    // The second one is the remembered 404 (the default window is 30 s): one node request.
    expect(statuses[0]).toMatch(/fwd=miss; stored; ttl=30/);
    expect(statuses[1]).toMatch(/^clarity-cache; hit/);
    expect(hits(mainnet, path)).toBe(1);
    // A read pinned to a block the node does not know is a 404 that is never remembered.
    const pinned = `${path}?tip=${'ab'.repeat(32)}`;
    mainnet.setRoute('GET', path, {
      status: 404,
      body: 'Not found',
      headers: { 'content-type': 'text/plain' },
    });
    for (let i = 0; i < 2; i++) expect((await call(pinned)).status).toBe(404);
    expect(mainnet.requests.filter((r) => r.path === path && r.query['tip'] !== undefined).length).toBe(2);
  });

  it('answers its own envelope when every attempt failed transiently', async () => {
    dataVar(mainnet, 'down');
    mainnet.status5xx(503);
    const res = await call(dataVarPath('down'));
    expect(res.status).toBe(502);
    expect(JSON.parse(res.text).error.code).toBe('UPSTREAM_API_ERROR');
    expect(hits(mainnet, dataVarPath('down'))).toBe(2); // the first attempt and one retry
  });

  it('never forwards the client’s Authorization header', async () => {
    dataVar(mainnet, 'auth');
    await call(dataVarPath('auth'), { headers: { authorization: 'Bearer client-secret' } });
    const sent = mainnet.requests.find((r) => r.path === dataVarPath('auth')) as FakeRequest;
    expect(sent.headers.authorization).toBeUndefined();
  });
});

describe('cache classes, counted at the node', () => {
  it('immutable: the source, a constant and a trait check are asked once', async () => {
    const routes = [
      `/v2/constant_val/${MAINNET_ADDR}/demo/max-supply`,
      `/v2/traits/${MAINNET_ADDR}/demo/${MAINNET_ADDR}/sip-010/sip-010-trait`,
    ];
    for (const path of routes) {
      mainnet.setRoute('GET', path, {
        status: 200,
        body: '{"data":"0x0100"}',
        headers: { 'content-type': JSON_TYPE },
      });
      await call(path);
      mainnet.mine();
      const again = await call(path);
      expect(again.headers.get('cache-status')).toMatch(/hit/);
      expect(again.headers.get('x-canonical-stacks-tip-height')).toBeNull();
      expect(hits(mainnet, path)).toBe(1);
    }
  });

  it('latest state: one read per block, refetched once the tip moved', async () => {
    dataVar(mainnet, 'counter');
    const first = await call(dataVarPath('counter'));
    const tip = mainnet.tipHeight;
    expect(JSON.parse(first.text).data).toBe(serializeCV(Cl.uint(tip)));
    expect(first.headers.get('x-canonical-stacks-tip-height')).toBe(String(tip));
    const same = await call(dataVarPath('counter'));
    expect(same.headers.get('cache-status')).toMatch(/hit/);
    expect(hits(mainnet, dataVarPath('counter'))).toBe(1);

    // Another answer reports the new tip: the entry read one block ago no longer serves.
    mainnet.mine();
    dataVar(mainnet, 'other');
    await call(dataVarPath('other'));
    const after = await call(dataVarPath('counter'));
    expect(after.headers.get('cache-status')).toMatch(/fwd=stale/);
    expect(JSON.parse(after.text).data).toBe(serializeCV(Cl.uint(tip + 1)));
    expect(after.headers.get('x-canonical-stacks-tip-height')).toBe(String(tip + 1));
    expect(hits(mainnet, dataVarPath('counter'))).toBe(2);
  });

  it('latest state with ?tip=: cached indefinitely, keyed by the block, the tip checked strictly', async () => {
    dataVar(mainnet, 'pinned');
    const block = mainnet.block(mainnet.tipHeight - 1).indexBlockHash;
    const path = `${dataVarPath('pinned')}?tip=${block.toUpperCase()}`;
    await call(path);
    mainnet.mine(2);
    const again = await call(path);
    expect(again.headers.get('cache-status')).toMatch(/hit/);
    expect(hits(mainnet, dataVarPath('pinned'))).toBe(1);
    expect(mainnet.requests.find((r) => r.path === dataVarPath('pinned'))?.query['tip']).toBe(
      block.toLowerCase(),
    );

    const bad = await call(`${dataVarPath('pinned')}?tip=not-a-block`);
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.text).error.code).toBe('VALIDATION_ERROR');
    expect(hits(mainnet, dataVarPath('pinned'))).toBe(1);
  });

  it('map entries are keyed by their body', async () => {
    const path = `/v2/map_entry/${MAINNET_ADDR}/demo/balances`;
    mainnet.setRoute('POST', path, (req) => ({
      status: 200,
      body: JSON.stringify({ data: req.rawBody.includes('01') ? '0x0a0100' : '0x09', proof: '' }),
      headers: { 'content-type': JSON_TYPE },
    }));
    const one = await call(path, { body: JSON.stringify(serializeCV(Cl.uint(1))) });
    const two = await call(path, { body: JSON.stringify(serializeCV(Cl.uint(2))) });
    const oneAgain = await call(path, { body: JSON.stringify(serializeCV(Cl.uint(1))) });
    expect(one.text).toBe(oneAgain.text);
    expect(oneAgain.headers.get('cache-status')).toMatch(/hit/);
    expect(two.headers.get('cache-status')).toMatch(/miss/);
    expect(hits(mainnet, path)).toBe(2);
    expect(mainnet.requests.find((r) => r.path === path)?.rawBody).toBe(
      JSON.stringify(serializeCV(Cl.uint(1))),
    );
  });

  it('accounts are read at the current tip whatever NODE_MAX_BLOCKS says', async () => {
    const lenient = await startGateway(
      testEnv(mainnet.url, { NODE_MAX_BLOCKS: '10', STACKS_API_URL_TESTNET: testnet.url }),
    );
    try {
      const path = `/v2/accounts/${MAINNET_ADDR}`;
      mainnet.setRoute('GET', path, () => ({
        status: 200,
        body: JSON.stringify({ balance: '0x0', nonce: mainnet.tipHeight }),
        headers: { 'content-type': JSON_TYPE },
      }));
      dataVar(mainnet, 'lenient');
      await fetch(`${lenient.url}${path}`);
      await fetch(`${lenient.url}${dataVarPath('lenient')}`);
      mainnet.mine();
      mainnet.setRoute('GET', dataVarPath('teach'), {
        status: 200,
        body: '{}',
        headers: { 'content-type': JSON_TYPE },
      });
      await fetch(`${lenient.url}${dataVarPath('teach')}`);
      const account = await fetch(`${lenient.url}${path}`);
      expect(((await account.json()) as { nonce: number }).nonce).toBe(mainnet.tipHeight);
      // The data var tolerates ten blocks: still answered from the cache.
      const lenientVar = await fetch(`${lenient.url}${dataVarPath('lenient')}`);
      expect(lenientVar.headers.get('cache-status')).toMatch(/hit/);
      expect(hits(mainnet, path)).toBe(2);
    } finally {
      await lenient.close();
    }
  });

  it('timed: /v2/pox is served for CHAIN_TIP_MAX_AGE_MS', async () => {
    mainnet.setRoute('GET', '/v2/pox', {
      status: 200,
      body: '{"contract_id":"SP000000000000000000002Q6VF78.pox-4"}',
      headers: { 'content-type': JSON_TYPE },
    });
    await call('/v2/pox');
    const again = await call('/v2/pox');
    expect(again.headers.get('cache-status')).toMatch(/hit; ttl=\d+/);
    expect(hits(mainnet, '/v2/pox')).toBe(1);
  });

  it('never cached: fees and transaction lookups are asked every time, identical ones in flight once', async () => {
    mainnet.setRoute('GET', '/v2/fees/transfer', {
      status: 200,
      body: '1',
      headers: { 'content-type': JSON_TYPE },
    });
    await call('/v2/fees/transfer');
    const second = await call('/v2/fees/transfer');
    expect(second.text).toBe('1');
    expect(second.headers.get('cache-status')).toBeNull();
    expect(hits(mainnet, '/v2/fees/transfer')).toBe(2);

    mainnet.resetStats();
    mainnet.gate();
    const allInside = inside('/v2/fees/transfer', 5);
    const together = Promise.all(Array.from({ length: 5 }, () => call('/v2/fees/transfer')));
    await allInside;
    mainnet.release();
    const answers = await together;
    expect(answers.every((a) => a.text === '1')).toBe(true);
    expect(hits(mainnet, '/v2/fees/transfer')).toBe(1);
  });

  it('identical latest-state reads in flight share one upstream request', async () => {
    dataVar(mainnet, 'burst');
    mainnet.gate();
    const allInside = inside(dataVarPath('burst'), 8);
    const together = Promise.all(Array.from({ length: 8 }, () => call(dataVarPath('burst'))));
    await allInside;
    mainnet.release();
    const answers = await together;
    expect(new Set(answers.map((a) => a.text)).size).toBe(1);
    expect(hits(mainnet, dataVarPath('burst'))).toBe(1);
  });
});

describe('broadcast', () => {
  // A testnet STX transfer's first bytes: version 0x80 names the network.
  const tx = Uint8Array.from([0x80, 0x80, 0, 0, 0, 0x04, 0x00, 1, 2, 3]);

  it('is forwarded once with its bytes and content type, and never cached', async () => {
    testnet.setRoute('POST', '/v2/transactions', (req) => ({
      status: 200,
      body: JSON.stringify(`0x${Buffer.from(req.rawBody, 'latin1').length.toString(16).padStart(64, '0')}`),
      headers: { 'content-type': JSON_TYPE },
    }));
    for (let i = 0; i < 2; i++) {
      const res = await call('/v2/transactions', { body: tx, contentType: 'application/octet-stream' });
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-status')).toBeNull();
    }
    expect(hits(testnet, '/v2/transactions')).toBe(2);
    expect(hits(mainnet, '/v2/transactions')).toBe(0);
    expect(testnet.lastRequest()?.headers['content-type']).toBe('application/octet-stream');
  });

  it('is not resent after a failure once its body went out', async () => {
    testnet.status5xx(503);
    const res = await call('/v2/transactions', {
      body: JSON.stringify({ tx: Buffer.from(tx).toString('hex') }),
    });
    expect(res.status).toBe(502);
    expect(hits(testnet, '/v2/transactions')).toBe(1);
  });

  it('refuses a body that is not a transaction before anything is sent', async () => {
    const res = await call('/v2/transactions', { body: '{"tx":"zz"}' });
    expect(res.status).toBe(400);
    expect(testnet.total + mainnet.total).toBe(0);
  });
});

describe('which network', () => {
  it('follows the address, the /mainnet or /testnet prefix, else NODE_DEFAULT_NETWORK', async () => {
    dataVar(testnet, 'net', TESTNET_ADDR);
    for (const node of [mainnet, testnet]) {
      node.setRoute('GET', '/v2/pox', { status: 200, body: '{}', headers: { 'content-type': JSON_TYPE } });
    }
    await call(dataVarPath('net', TESTNET_ADDR));
    expect(hits(testnet, dataVarPath('net', TESTNET_ADDR))).toBe(1);
    await call('/testnet/v2/pox');
    expect(hits(testnet, '/v2/pox') + hits(mainnet, '/v2/pox')).toBeLessThanOrEqual(1);
    const prefixed = await call(`/testnet${dataVarPath('net', TESTNET_ADDR)}`);
    expect(prefixed.headers.get('cache-status')).toMatch(/hit/);
  });

  it('refuses a prefix that contradicts the address, asking nobody', async () => {
    const res = await call(`/testnet${dataVarPath('x', MAINNET_ADDR)}`);
    expect(res.status).toBe(400);
    expect(JSON.parse(res.text).error.code).toBe('VALIDATION_ERROR');
    expect(mainnet.total + testnet.total).toBe(0);
  });

  it('checks every path parameter before asking', async () => {
    for (const path of [
      '/v2/data_var/not-an-address/demo/x',
      `/v2/data_var/${MAINNET_ADDR}/1bad/x`,
      '/v2/accounts/nobody',
      '/v3/transaction/xyz',
    ]) {
      const res = await call(path);
      expect(res.status, path).toBe(400);
    }
    expect(mainnet.total + testnet.total).toBe(0);
  });
});

describe('one table', () => {
  it("documents every descriptor as its route, call-read's and the interface's included, from the descriptor alone", async () => {
    interface Operation {
      summary: string;
      description: string;
      parameters?: { in: string; name: string; example?: unknown }[];
      requestBody?: { content: Record<string, { example?: unknown }> };
    }
    const spec = (await (await fetch(`${gw.url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, Operation>>;
    };
    for (const endpoint of NODE_ENDPOINTS) {
      const path = endpoint.path.replace(/:([A-Za-z]+)/g, '{$1}');
      const op = spec.paths[path]?.[endpoint.method.toLowerCase()];
      expect(op, endpoint.name).toBeDefined();
      expect(op!.summary).toBe(endpoint.summary);
      if (endpoint.description !== undefined) expect(op!.description).toBe(endpoint.description);
      const inPath = (op!.parameters ?? []).filter((p) => p.in === 'path');
      expect(inPath.map((p) => p.name)).toEqual(Object.keys(endpoint.params));
      for (const p of inPath)
        expect(p.example, `${endpoint.name} ${p.name}`).toBe(endpoint.example.params?.[p.name]);
      const inQuery = (op!.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name);
      expect(inQuery, endpoint.name).toEqual([...endpoint.query]);
      const body = op!.requestBody?.content['application/json']?.example;
      expect(body, endpoint.name).toEqual(endpoint.example.body);
    }
  });
});

describe('nothing outside the table is forwarded', () => {
  it('answers 404 for any other /v2 or /v3 path, method, content type or body', async () => {
    const attempts: Array<[string, Parameters<typeof call>[1]]> = [
      ['/v2/nonexistent', {}],
      ['/v2/info', { method: 'POST', body: '{}' }],
      ['/v2/data_var/x', { method: 'DELETE' }],
      ['/v3/block_proposal', { body: Uint8Array.from([1, 2, 3]), contentType: 'application/octet-stream' }],
      ['/v2/blocks/upload/abc', { body: 'garbage', contentType: 'application/x-whatever' }],
      ['/v3/stackerdb/SP000000000000000000002Q6VF78/x/chunks', { method: 'PUT', body: '{not json' }],
      ['/testnet/v2/neighbors', {}],
    ];
    for (const [path, init] of attempts) {
      const res = await call(path, init);
      expect(res.status, path).toBe(404);
      expect(JSON.parse(res.text).error.code).toBe('NOT_FOUND');
    }
    expect(mainnet.total + testnet.total).toBe(0);
  });
});

describe('stored answers that are damaged', () => {
  it('are a miss: removed, refetched and counted', async () => {
    dataVar(mainnet, 'damaged');
    await call(dataVarPath('damaged'));
    const key = nodeKey('mainnet', 'data-var', [MAINNET_ADDR, 'demo', 'damaged'], '', undefined);
    const entry = await gw.gateway.store.get(key);
    expect(entry).toBeDefined();
    await gw.gateway.store.set(key, '\u0000foreign bytes', undefined, { tipHeight: entry!.tipHeight });
    const before = metricValue(
      parseMetrics(await (await fetch(`${gw.url}/metrics`)).text()),
      'clarity_cache_store_corrupt_total',
    );
    const res = await call(dataVarPath('damaged'));
    expect(res.status).toBe(200);
    expect(JSON.parse(res.text).data).toBe(serializeCV(Cl.uint(mainnet.tipHeight)));
    const after = metricValue(
      parseMetrics(await (await fetch(`${gw.url}/metrics`)).text()),
      'clarity_cache_store_corrupt_total',
    );
    expect(after).toBe(before + 1);
    expect(hits(mainnet, dataVarPath('damaged'))).toBe(2);
  });
});
