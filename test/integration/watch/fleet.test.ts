/**
 * Watched reads in a fleet: three gateways in-process on one real redis-server
 * (CACHE_STORE=redis), only A with the event observer, streams over real HTTP on all three.
 * A block posted to A drives every instance's streams (B and C learn it through Redis, not
 * from their node), each distinct read is read from the node once per block for the whole
 * fleet, subscriptions are the fleet's (made on one instance, streamed, resumed and deleted
 * on others), and the stream limit counts the streams of every instance.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { type RunningGateway, request, startGateway, testEnv } from '../../support/gateway.js';
import { startRedis } from '../../support/redis-server.js';
import { openSse, type SseConnection } from '../../support/sse.js';
import { tmpDir } from '../../unit/cache/tmp-dir.js';
import {
  ChainValues,
  COUNTER,
  callReadsAt,
  contractSource,
  counterRead,
  DELIVERED,
  installContracts,
  metricValue,
  nextValues,
  OTHER,
  postNextBlock,
  rawUint,
  seenKey,
  subscribe,
} from './helpers.js';

const KEY = 'k-watch-fleet-0123456789abcdef';
const keyed = { 'x-api-key': KEY };

const redis = await startRedis();
let node: FakeNode;
let a: RunningGateway;
let b: RunningGateway;
let c: RunningGateway;
const values = new ChainValues();
const opened: SseConnection[] = [];
const { dir, remove } = tmpDir('watch-fleet');

/** get-n and get-seen(5): two distinct reads, each shared by several subscriptions. */
const N = counterRead('get-n');
const SEEN = counterRead('get-seen', 5);

beforeAll(async () => {
  if (redis === undefined) return;
  node = await startFakeNode({ tipHeight: 100 });
  values.set('get-n', 0, 1);
  values.set(seenKey(5), 0, 50);
  installContracts(node, values);
  const keysFile = path.join(dir, 'keys.json');
  writeFileSync(keysFile, JSON.stringify([{ name: 'fleet', key: KEY }]));
  const env = {
    CACHE_STORE: 'redis',
    REDIS_URL: redis.url,
    API_KEYS_FILE: keysFile,
    WATCH_MAX_STREAMS_PER_KEY: '2',
    // Every stream comes from 127.0.0.1: room for the keyless ones of these tests.
    WATCH_MAX_STREAMS_ANONYMOUS: '20',
    // B and C would otherwise learn tips by polling their node while a stream is open: a
    // minute keeps them to what A's observer announces, which is what is under test.
    CHAIN_TIP_MAX_AGE_MS: '60000',
  };
  a = await startGateway(
    testEnv(node.url, { ...env, EVENT_OBSERVER_PORT: '0', EVENT_OBSERVER_NETWORK: 'testnet' }),
    { contractSource },
  );
  // The other instances analyse what functions reach too (the fake node serves no sources).
  b = await startGateway(testEnv(node.url, env), { contractSource });
  c = await startGateway(testEnv(node.url, env), { contractSource });
});

afterAll(async () => {
  for (const s of opened) s.close();
  for (const g of [c, b, a]) await g?.close();
  await node?.close();
  await redis?.stop();
  remove();
});

async function stream(gw: RunningGateway, events: string, headers: Record<string, string> = {}) {
  const sse = await openSse(`${gw.url}${events}`, headers);
  opened.push(sse);
  return sse;
}

const observer = () => a.gateway.observer!;

describe.runIf(redis !== undefined)('watched reads across three instances on one Redis', () => {
  let subA: Awaited<ReturnType<typeof subscribe>>;
  let streamA: SseConnection;
  let streamB: SseConnection;
  let streamC: SseConnection;

  it('a block posted to one instance’s observer drives the streams of all three, one read per distinct read', async () => {
    subA = await subscribe(a.url, [N, SEEN]);
    const subB = await subscribe(b.url, [N]);
    const subC = await subscribe(c.url, [SEEN, N]);
    // The same call is the same read wherever it was subscribed to.
    expect(subB.reads[0]!.key).toBe(subA.reads[0]!.key);
    expect(subC.reads).toEqual([
      { index: 0, key: subA.reads[1]!.key },
      { index: 1, key: subA.reads[0]!.key },
    ]);
    streamA = await stream(a, subA.events);
    streamB = await stream(b, subB.events);
    streamC = await stream(c, subC.events);
    const tip = node.block(100);
    const [firstA, firstB, firstC] = await Promise.all([streamA, streamB, streamC].map((s) => nextValues(s)));
    for (const e of [firstA!, firstB!, firstC!]) expect(e.id).toBe(`100:${tip.indexBlockHash}`);
    expect(firstA!.json.values).toEqual([
      { index: 0, value: '1', raw: rawUint(1) },
      { index: 1, value: '50', raw: rawUint(50) },
    ]);
    expect(firstB!.json.values).toEqual([{ index: 0, value: '1', raw: rawUint(1) }]);
    expect(firstC!.json.values).toEqual([
      { index: 0, value: '50', raw: rawUint(50) },
      { index: 1, value: '1', raw: rawUint(1) },
    ]);
    // Three instances connecting at one block: each read once, the others found it in Redis.
    expect(callReadsAt(node, tip.indexBlockHash, 'get-n')).toBe(1);
    expect(callReadsAt(node, tip.indexBlockHash, 'get-seen')).toBe(1);

    // B and C hear of A's blocks on Redis's observer-tip channel: both are listening first.
    const probe = new Redis(redis!.url);
    try {
      await vi.waitFor(
        async () => {
          const [, listening] = (await probe.pubsub('NUMSUB', 'cc:observer:tip')) as [string, number];
          expect(listening).toBeGreaterThanOrEqual(3);
        },
        { timeout: 10_000, interval: 20 },
      );
    } finally {
      probe.disconnect();
    }

    values.set('get-n', 101, 2);
    values.set(seenKey(5), 101, 51);
    const infos = node.count('info');
    const block = await postNextBlock(node, observer(), COUNTER);
    const [nextA, nextB, nextC] = await Promise.all([streamA, streamB, streamC].map((s) => nextValues(s)));
    for (const e of [nextA!, nextB!, nextC!]) {
      expect(e.id).toBe(`101:${block.indexBlockHash}`);
      expect(e.json).toMatchObject({ tipHeight: 101, indexBlockHash: block.indexBlockHash });
    }
    expect(nextA!.json.values).toEqual([
      { index: 0, value: '2', raw: rawUint(2) },
      { index: 1, value: '51', raw: rawUint(51) },
    ]);
    expect(nextB!.json.values).toEqual([{ index: 0, value: '2', raw: rawUint(2) }]);
    expect(nextC!.json.values).toEqual([
      { index: 0, value: '51', raw: rawUint(51) },
      { index: 1, value: '2', raw: rawUint(2) },
    ]);
    // Each distinct read, once for the fleet, pinned to the block.
    expect(callReadsAt(node, block.indexBlockHash, 'get-n')).toBe(1);
    expect(callReadsAt(node, block.indexBlockHash, 'get-seen')).toBe(1);
    // B and C did not learn the block from their node.
    expect(node.count('info')).toBe(infos);
  });

  it('a block that changes one read sends that read alone, still once for the fleet', async () => {
    values.set('get-n', 102, 3);
    const block = await postNextBlock(node, observer(), COUNTER);
    const [nextA, nextB, nextC] = await Promise.all([streamA, streamB, streamC].map((s) => nextValues(s)));
    for (const e of [nextA!, nextB!, nextC!]) expect(e.id).toBe(`102:${block.indexBlockHash}`);
    expect(nextA!.json.values).toEqual([{ index: 0, value: '3', raw: rawUint(3) }]);
    expect(nextB!.json.values).toEqual([{ index: 0, value: '3', raw: rawUint(3) }]);
    expect(nextC!.json.values).toEqual([{ index: 1, value: '3', raw: rawUint(3) }]);
    expect(callReadsAt(node, block.indexBlockHash, 'get-n')).toBe(1);
    expect(callReadsAt(node, block.indexBlockHash, 'get-seen')).toBe(1);
  });

  it('a stream of a subscription made on A resumes on C with Last-Event-ID', async () => {
    const at101 = node.block(101).indexBlockHash;
    const at102 = node.block(102).indexBlockHash;
    const reads101 = callReadsAt(node, at101);
    const resumed = await stream(c, subA.events, { 'last-event-id': `101:${at101}` });
    expect(resumed.status).toBe(200);
    const first = await resumed.next();
    // Only what changed since the block the client last heard of.
    expect(first.event).toBe('values');
    expect(first.id).toBe(`102:${at102}`);
    expect(first.json.values).toEqual([{ index: 0, value: '3', raw: rawUint(3) }]);
    // The reads at 101 that the comparison needed were the fleet's cached pinned answers.
    expect(callReadsAt(node, at101)).toBe(reads101);

    const unknown = await stream(b, subA.events, { 'last-event-id': `7:${'ab'.repeat(32)}` });
    const reset = await unknown.next();
    expect(reset).toMatchObject({ event: 'reset', json: { reason: 'unknown' } });
    const all = await unknown.next();
    expect(all.event).toBe('values');
    expect(all.json.values.map((v: { index: number }) => v.index)).toEqual([0, 1]);
  });

  it('a subscription made on A, streamed from B and deleted from C: the B stream ends with NOT_FOUND', async () => {
    const sub = await subscribe(a.url, [N]);
    const onB = await stream(b, sub.events);
    expect(onB.status).toBe(200);
    const first = await nextValues(onB);
    expect(first.json.tipHeight).toBe(102);
    const deleted = await request(`${c.url}/subscriptions/${sub.id}`, { method: 'DELETE' });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ success: true, data: sub.id });
    const last = await onB.next((e) => e.event !== 'values');
    expect(last.event).toBe('error');
    expect(last.json).toEqual({ code: 'NOT_FOUND' });
    await onB.ended;
    // Gone for the fleet.
    for (const gw of [a, b, c]) {
      const again = await stream(gw, sub.events);
      expect(again.status).toBe(404);
      expect(JSON.parse(await again.text).error.code).toBe('NOT_FOUND');
    }
    expect((await request(`${a.url}/subscriptions/${sub.id}`, { method: 'DELETE' })).status).toBe(404);
  });

  it('the stream limit of a key counts the streams of every instance', async () => {
    const sub = await subscribe(c.url, [N], keyed);
    const onA = await stream(a, sub.events, keyed);
    const onB = await stream(b, sub.events, keyed);
    expect([onA.status, onB.status]).toEqual([200, 200]);
    const third = await stream(c, sub.events, keyed);
    expect(third.status).toBe(429);
    const refusal = JSON.parse(await third.text);
    expect(refusal.error.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(refusal.error.details).toMatchObject({ scope: 'streams', limit: 2 });
    // Closing the one on A frees its place for the fleet: C then opens one.
    onA.close();
    await vi.waitFor(
      async () => {
        const retried = await stream(c, sub.events, keyed);
        expect(retried.status).toBe(200);
      },
      { timeout: 10_000, interval: 50 },
    );
  });

  // The other instances follow the observer's applied blocks (what each touched) in ledgers of
  // their own, so they prove what the observer's instance proves.
  it('a block touching only another contract costs the fleet no call-read', async () => {
    const delivered = await Promise.all([a, b, c].map((gw) => metricValue(gw.url, DELIVERED)));
    const block = await postNextBlock(node, observer(), OTHER);
    // Every instance has brought its reads to the block (and written what changed: nothing).
    await vi.waitFor(
      async () => {
        const now = await Promise.all([a, b, c].map((gw) => metricValue(gw.url, DELIVERED)));
        for (const [i, n] of now.entries()) expect(n).toBeGreaterThan(delivered[i]!);
      },
      { timeout: 10_000, interval: 20 },
    );
    expect(callReadsAt(node, block.indexBlockHash)).toBe(0);
  });
});
