/**
 * Watched reads cost per block, not per subscriber: 1,000 subscriptions of the same read, each
 * with its stream open over real HTTP, in front of the fake node, with the gateway's event
 * observer fed the fake node's own blocks. The upstream sees exactly what one subscriber would
 * cost: one call-read pinned to each block that touches the read's contract, and none for a
 * block that touches only another contract (the observer's ledger proves the read unchanged).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { type RunningGateway, startGateway, testEnv } from '../../support/gateway.js';
import { openSse, type SseConnection } from '../../support/sse.js';
import {
  ChainValues,
  COUNTER,
  callReadsAt,
  contractSource,
  counterRead,
  DELIVERED,
  evaluations,
  installContracts,
  metricValue,
  nextValues,
  OTHER,
  postNextBlock,
  rawUint,
  subscribe,
  valuesEvents,
} from './helpers.js';

const SUBSCRIBERS = 1000;
/** How many subscriptions or streams are opened at once (a browser fleet, not one burst). */
const CHUNK = 100;

let node: FakeNode;
let gw: RunningGateway;
const values = new ChainValues();
const streams: SseConnection[] = [];

beforeAll(async () => {
  node = await startFakeNode({ tipHeight: 100 });
  values.set('get-n', 0, 1);
  installContracts(node, values);
  gw = await startGateway(
    testEnv(node.url, {
      EVENT_OBSERVER_PORT: '0',
      EVENT_OBSERVER_NETWORK: 'testnet',
      // Every stream comes from 127.0.0.1: the anonymous limit must let all of them in (and the
      // last test's one more).
      WATCH_MAX_STREAMS_ANONYMOUS: String(SUBSCRIBERS + 1),
    }),
    { contractSource },
  );
});

afterAll(async () => {
  for (const s of streams) s.close();
  await gw?.close();
  await node?.close();
});

async function inChunks<T, R>(items: readonly T[], fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += CHUNK)
    out.push(...(await Promise.all(items.slice(i, i + CHUNK).map(fn))));
  return out;
}

const observer = () => gw.gateway.observer!;

/** Posts the next block and waits until the hub has written its events (or found none). */
async function block(touch: string): Promise<{ height: number; indexBlockHash: string }> {
  const delivered = await metricValue(gw.url, DELIVERED);
  const posted = await postNextBlock(node, observer(), touch);
  await vi.waitFor(async () => expect(await metricValue(gw.url, DELIVERED)).toBeGreaterThan(delivered), {
    timeout: 15_000,
    interval: 20,
  });
  return posted;
}

describe('1,000 subscribers of one read', () => {
  it('open with the read at the current block, read once for all of them', async () => {
    const created = await inChunks([...Array(SUBSCRIBERS).keys()], () => subscribe(gw.url, [counterRead()]));
    expect(new Set(created.map((c) => c.id)).size).toBe(SUBSCRIBERS);
    // Identical calls, identical keys: one read for all of them.
    expect(new Set(created.map((c) => c.reads[0]!.key)).size).toBe(1);
    streams.push(...(await inChunks(created, (c) => openSse(`${gw.url}${c.events}`))));
    expect(streams.every((s) => s.status === 200)).toBe(true);

    const tip = node.block(100);
    const first = await Promise.all(streams.map((s) => nextValues(s)));
    for (const e of first) {
      expect(e.id).toBe(`100:${tip.indexBlockHash}`);
      expect(e.json).toMatchObject({ tipHeight: 100, indexBlockHash: tip.indexBlockHash });
      expect(e.json.values).toEqual([{ index: 0, value: '1', raw: rawUint(1) }]);
    }
    expect(callReadsAt(node, tip.indexBlockHash)).toBe(1);
    expect(node.count('call-read')).toBe(1);
  }, 120_000);

  it('a block touching the contract: one call-read pinned to it, and every stream gets the new value', async () => {
    values.set('get-n', 101, 2);
    const touched = await block(COUNTER);
    expect(touched.height).toBe(101);
    const changed = await Promise.all(streams.map((s) => nextValues(s)));
    for (const e of changed) {
      expect(e.id).toBe(`101:${touched.indexBlockHash}`);
      expect(e.json).toMatchObject({ tipHeight: 101, indexBlockHash: touched.indexBlockHash });
      expect(e.json.values).toEqual([{ index: 0, value: '2', raw: rawUint(2) }]);
    }
    expect(callReadsAt(node, touched.indexBlockHash)).toBe(1);
    expect(node.count('call-read')).toBe(2);
  });

  it('a block touching only another contract: no call-read, no event', async () => {
    const proven = await metricValue(gw.url, evaluations('proven'));
    const other = await block(OTHER);
    expect(other.height).toBe(102);
    expect(callReadsAt(node, other.indexBlockHash)).toBe(0);
    expect(node.count('call-read')).toBe(2);
    // The one read was carried to the block by the observer's proof, not read.
    expect(await metricValue(gw.url, evaluations('proven'))).toBe(proven + 1);
    // Nothing was written for it: the next test shows that nothing came later either.
    expect(streams.every((s) => valuesEvents(s).length === 2)).toBe(true);
  });

  it('a block touching the contract but leaving the value: one call-read, no event', async () => {
    const same = await block(COUNTER);
    expect(same.height).toBe(103);
    expect(callReadsAt(node, same.indexBlockHash)).toBe(1);
    values.set('get-n', 104, 3);
    const next = await block(COUNTER);
    const changed = await Promise.all(streams.map((s) => nextValues(s)));
    for (const e of changed) {
      // The event after 101's is 104's: neither 102 nor 103 sent anything.
      expect(e.id).toBe(`104:${next.indexBlockHash}`);
      expect(e.json.values).toEqual([{ index: 0, value: '3', raw: rawUint(3) }]);
    }
    expect(callReadsAt(node, next.indexBlockHash)).toBe(1);
    // 100 (connecting), 101, 103, 104: one each, whatever the number of streams.
    expect(node.count('call-read')).toBe(4);
    expect(streams.every((s) => valuesEvents(s).length === 3)).toBe(true);
  });

  // The analysis of what its function reaches starts when the read is first watched, so the
  // very next block can already be proven not to touch it.
  it('a read first watched since the last block is proven unchanged by a block touching another contract', async () => {
    const sub = await subscribe(gw.url, [counterRead('get-seen', 7)]);
    const sse = await openSse(`${gw.url}${sub.events}`);
    streams.push(sse);
    expect(sse.status).toBe(200);
    const first = await nextValues(sse);
    expect(first.json.tipHeight).toBe(104);
    expect(callReadsAt(node, node.block(104).indexBlockHash, 'get-seen')).toBe(1);
    const other = await block(OTHER);
    expect(callReadsAt(node, other.indexBlockHash, 'get-seen')).toBe(0);
  });
});
