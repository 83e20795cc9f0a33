/**
 * The subscriptions API over real HTTP (docs/watch.md), with the fake node as the upstream:
 * what POST /subscriptions refuses (and then stores nothing), who owns a subscription, the
 * event stream's credential (its id: no key needed even when keys are required), the stream
 * limits, DELETE ending open streams, and the API key quota applying to these routes.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Cl } from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { hex, MAINNET_ADDR, SAMPLE_ABI, TESTNET_ADDR } from '../../support/fixtures.js';
import { type RunningGateway, request, startGateway, testEnv } from '../../support/gateway.js';
import { metricValue, parseMetrics } from '../../support/prom.js';
import { openSse } from '../../support/sse.js';
import { tmpDir } from '../../unit/cache/tmp-dir.js';

const ALICE = 'k-alice-0123456789abcdef';
const BOB = 'k-bob-0123456789abcdef';
const TIGHT = 'k-tight-0123456789abcdef';

let node: FakeNode;
let gw: RunningGateway;

const read = (addr = MAINNET_ADDR, fn = 'get-balance', extra: object = {}) => ({
  contractAddress: addr,
  contractName: 'demo',
  functionName: fn,
  functionArgs: fn === 'get-balance' ? [{ type: 'principal', value: addr }] : [],
  ...extra,
});

beforeAll(async () => {
  node = await startFakeNode();
  node.setAbi(MAINNET_ADDR, 'demo', SAMPLE_ABI);
  node.setAbi(TESTNET_ADDR, 'demo', SAMPLE_ABI);
  node.setReadOnly(MAINNET_ADDR, 'demo', 'get-balance', { okay: true, result: hex(Cl.ok(Cl.uint(7))) });
  const { dir } = tmpDir('watch-api');
  const keysFile = path.join(dir, 'keys.json');
  writeFileSync(
    keysFile,
    JSON.stringify([
      { name: 'alice', key: ALICE },
      { name: 'bob', key: BOB },
      { name: 'tight', key: TIGHT, requestsPerMinute: 2 },
    ]),
  );
  gw = await startGateway(
    testEnv(node.url, {
      API_KEYS_FILE: keysFile,
      API_KEYS_REQUIRED: 'true',
      WATCH_MAX_READS: '3',
      WATCH_MAX_STREAMS_PER_KEY: '2',
      CHAIN_TIP_MAX_AGE_MS: '60000',
    }),
  );
}, 30_000);

afterAll(async () => {
  await gw?.close();
  await node?.close();
});

const as = (key: string) => ({ 'x-api-key': key });
const subscribe = (reads: unknown, key = ALICE) =>
  request(`${gw.url}/subscriptions`, { body: { reads }, headers: as(key) });

describe('POST /subscriptions', () => {
  it('refuses what is not a list of 1 to WATCH_MAX_READS reads, of one network, at the latest state', async () => {
    const before = node.count('interface');
    for (const reads of [undefined, 'x', [], [read(), read(), read(), read()]]) {
      const res = await subscribe(reads);
      expect(res.status, JSON.stringify(reads)).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
    }
    const mixed = await subscribe([read(), read(TESTNET_ADDR)]);
    expect(mixed.status).toBe(400);
    expect(mixed.body.error.details.networks).toEqual(['mainnet', 'testnet']);
    for (const member of [{ tip: 'latest' }, { cacheControl: {} }, { tip: null }]) {
      const res = await subscribe([read(), read(MAINNET_ADDR, 'get-balance', member)]);
      expect(res.status).toBe(400);
      expect(res.body.error.details).toMatchObject({ index: 1, field: Object.keys(member)[0] });
    }
    const malformed = await subscribe([read(), { ...read(), functionArgs: 'no' }]);
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.details.index).toBe(1);
    // None of these reached the node.
    expect(node.count('interface')).toBe(before);
  });

  it('a read that fails the ABI check gets the read-only endpoint’s error with its index, and nothing is stored', async () => {
    const res = await subscribe([read(), read(MAINNET_ADDR, 'no-such-fn')]);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INVALID_FUNCTION');
    expect(res.body.error.details.index).toBe(1);
    const args = await subscribe([{ ...read(), functionArgs: [{ type: 'uint', value: '1' }] }]);
    expect(args.status).toBe(400);
    expect(args.body.error.code).toBe('INVALID_ARGUMENTS');
    expect(args.body.error.details.index).toBe(0);
  });

  it('identical calls get identical keys; contractAddress may be addr.name', async () => {
    const res = await subscribe([
      read(),
      { ...read(), contractAddress: `${MAINNET_ADDR}.demo`, contractName: undefined },
      read(MAINNET_ADDR, 'get-info'),
    ]);
    expect(res.status).toBe(201);
    const keys = res.body.data.reads.map((r: { key: string }) => r.key);
    expect(keys[0]).toBe(keys[1]);
    expect(keys[2]).not.toBe(keys[0]);
    expect(res.body.data.id.length).toBeGreaterThanOrEqual(22);
  });

  it('needs a key when keys are required', async () => {
    const res = await request(`${gw.url}/subscriptions`, { body: { reads: [read()] } });
    expect(res.status).toBe(401);
  });
});

describe('who may stream and delete', () => {
  it('the id alone opens the stream; with a key only the owner’s; another key’s is NOT_FOUND', async () => {
    const { id, events } = (await subscribe([read()])).body.data;
    const open = await openSse(`${gw.url}${events}`);
    expect(open.status).toBe(200);
    const first = await open.next((e) => e.event === 'values');
    // The value is decoded as the read-only endpoint decodes the same call.
    const direct = await request(`${gw.url}/contract-calls/read-only/${MAINNET_ADDR}/demo/get-balance`, {
      body: { functionArgs: read().functionArgs },
      headers: as(ALICE),
    });
    expect(first.json.values[0].value).toEqual(direct.body.data);
    expect(first.json.values[0].raw).toBe(hex(Cl.ok(Cl.uint(7))));
    open.close();

    const bobs = await openSse(`${gw.url}${events}`, as(BOB));
    expect(bobs.status).toBe(404);
    expect(JSON.parse(await bobs.text).error.code).toBe('NOT_FOUND');
    const owner = await openSse(`${gw.url}${events}`, as(ALICE));
    expect(owner.status).toBe(200);
    owner.close();
    // A page on another origin reads the stream: its answer carries CORS as every answer does.
    const page = await openSse(`${gw.url}${events}`, { origin: 'https://app.example' });
    expect(page.headers['access-control-allow-origin']).toBe('*');
    expect(page.headers['access-control-expose-headers']).toContain('X-Canonical-Stacks-Tip-Height');
    page.close();

    const del = await request(`${gw.url}/subscriptions/${id}`, { method: 'DELETE', headers: as(BOB) });
    expect(del.status).toBe(404);
    expect(del.body.error.code).toBe('NOT_FOUND');
    const unknown = await openSse(`${gw.url}/subscriptions/AAAAAAAAAAAAAAAAAAAAAAAA/events`);
    expect(unknown.status).toBe(404);
  });

  it('DELETE answers 200 and ends the open streams with a last NOT_FOUND error event', async () => {
    const { id, events } = (await subscribe([read()])).body.data;
    const a = await openSse(`${gw.url}${events}`);
    const b = await openSse(`${gw.url}${events}`);
    await a.next((e) => e.event === 'values');
    const del = await request(`${gw.url}/subscriptions/${id}`, { method: 'DELETE', headers: as(ALICE) });
    expect(del.status).toBe(200);
    for (const s of [a, b]) {
      const end = await s.next((e) => e.event === 'error');
      expect(end.json).toEqual({ code: 'NOT_FOUND' });
      await s.ended;
    }
    const again = await openSse(`${gw.url}${events}`);
    expect(again.status).toBe(404);
    const text = await (await fetch(`${gw.url}/metrics`)).text();
    expect(
      metricValue(parseMetrics(text), 'clarity_cache_watch_streams_dropped_total', { reason: 'deleted' }),
    ).toBe(2);
  });

  it('streams count against the owner: one more than WATCH_MAX_STREAMS_PER_KEY is 429 scope streams', async () => {
    const { events } = (await subscribe([read()], BOB)).body.data;
    const one = await openSse(`${gw.url}${events}`);
    const two = await openSse(`${gw.url}${events}`);
    expect([one.status, two.status]).toEqual([200, 200]);
    const three = await openSse(`${gw.url}${events}`);
    expect(three.status).toBe(429);
    const refusal = JSON.parse(await three.text);
    expect(refusal.error.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(refusal.error.details.scope).toBe('streams');
    expect(three.headers['retry-after']).toBeDefined();
    // A closed stream frees its place.
    one.close();
    await waitForOpenStreams(1);
    const four = await openSse(`${gw.url}${events}`);
    expect(four.status).toBe(200);
    two.close();
    four.close();
  });

  it('the key’s request quota applies to creating and opening', async () => {
    const created = await subscribe([read()], TIGHT);
    expect(created.status).toBe(201);
    const s = await openSse(`${gw.url}${created.body.data.events}`, as(TIGHT));
    expect(s.status).toBe(200);
    s.close();
    const over = await subscribe([read()], TIGHT);
    expect(over.status).toBe(429);
    expect(over.body.error.details.scope).toBe('key');
  });
});

async function waitForOpenStreams(n: number): Promise<void> {
  const { vi } = await import('vitest');
  await vi.waitFor(async () => {
    const text = await (await fetch(`${gw.url}/metrics`)).text();
    expect(metricValue(parseMetrics(text), 'clarity_cache_watch_streams')).toBe(n);
  });
}
