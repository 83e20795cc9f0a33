/**
 * Watched reads without the event observer: the gateway learns tips by polling its node's
 * /v2/info every CHAIN_TIP_MAX_AGE_MS while a stream is open, and evaluates every read at each
 * new tip (pinned to it, once); a stream is sent only what changed.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { type RunningGateway, startGateway, testEnv } from '../../support/gateway.js';
import { openSse, type SseConnection } from '../../support/sse.js';
import {
  ChainValues,
  callReadsAt,
  counterRead,
  installContracts,
  nextValues,
  rawUint,
  subscribe,
  valuesEvents,
} from './helpers.js';

let node: FakeNode;
let gw: RunningGateway;
let sse: SseConnection | undefined;
const values = new ChainValues();

beforeAll(async () => {
  node = await startFakeNode({ tipHeight: 100 });
  values.set('get-n', 0, 1);
  installContracts(node, values);
  gw = await startGateway(testEnv(node.url, { CHAIN_TIP_MAX_AGE_MS: '200' }));
});

afterAll(async () => {
  sse?.close();
  await gw?.close();
  await node?.close();
});

/** Waits until the gateway has read get-n pinned to the block at `height` (a poll found it). */
async function evaluatedAt(height: number): Promise<void> {
  const hash = node.block(height).indexBlockHash;
  await vi.waitFor(() => expect(callReadsAt(node, hash, 'get-n')).toBeGreaterThan(0), {
    timeout: 10_000,
    interval: 20,
  });
}

describe('watched reads by polling the node', () => {
  it('a new tip with a changed value reaches the stream', async () => {
    expect(gw.gateway.observer).toBeUndefined();
    const sub = await subscribe(gw.url, [counterRead()]);
    sse = await openSse(`${gw.url}${sub.events}`);
    expect(sse.status).toBe(200);
    const first = await nextValues(sse);
    expect(first.id).toBe(`100:${node.block(100).indexBlockHash}`);
    expect(first.json.values).toEqual([{ index: 0, value: '1', raw: rawUint(1) }]);

    values.set('get-n', 101, 2);
    const tip = node.mine();
    const changed = await nextValues(sse);
    expect(changed.id).toBe(`101:${tip.indexBlockHash}`);
    expect(changed.json).toMatchObject({ tipHeight: 101, indexBlockHash: tip.indexBlockHash });
    expect(changed.json.values).toEqual([{ index: 0, value: '2', raw: rawUint(2) }]);
    expect(callReadsAt(node, tip.indexBlockHash)).toBe(1);
  });

  it('a new tip with the same value sends nothing: the next event is the later change’s', async () => {
    // 102 leaves the value as it was: it is read there (the poll found the tip), and not sent.
    node.mine();
    await evaluatedAt(102);
    expect(valuesEvents(sse!)).toHaveLength(2);
    values.set('get-n', 103, 3);
    const later = node.mine();
    const changed = await nextValues(sse!);
    expect(changed.id).toBe(`103:${later.indexBlockHash}`);
    expect(changed.json.values).toEqual([{ index: 0, value: '3', raw: rawUint(3) }]);
    expect(valuesEvents(sse!)).toHaveLength(3);
    // Every read, once at each tip, and nothing read at the latest state.
    for (const height of [100, 101, 102, 103])
      expect(callReadsAt(node, node.block(height).indexBlockHash)).toBe(1);
    expect(node.count('call-read')).toBe(4);
  });
});
