/**
 * A client that stops reading its event stream, over real HTTP: each block changes a large
 * watched value, so what that client leaves unsent grows by an event per block until it passes
 * WATCH_MAX_UNSENT_BYTES. It then gets a last `error` event SLOW_CONSUMER (read once it reads
 * again), or, reading nothing more, its connection is destroyed. Meanwhile a client that reads
 * gets every block's event, and cache hits of another read keep being answered: a slow client
 * never slows anything else down.
 */
import { once } from 'node:events';
import type { Socket } from 'node:net';
import { Cl } from '@stacks/transactions';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { hex, TESTNET_ADDR } from '../../support/fixtures.js';
import { type RunningGateway, request, startGateway, testEnv } from '../../support/gateway.js';
import { metricValue, parseMetrics } from '../../support/prom.js';
import { openSse, type SseConnection } from '../../support/sse.js';
import { postNextBlock } from './helpers.js';

const MAX_UNSENT = 65_536;
/** Bytes of the watched buffer: its event (the value and its raw hex) is about half of MAX_UNSENT. */
const BLOB_BYTES = 8_000;
/** Blocks after which a stream nobody reads must have been dropped (a bound, not a wait). */
const MOST_BLOCKS = 1_500;

const ABI = {
  functions: [
    { name: 'blob', access: 'read_only', args: [], outputs: { type: { buffer: { length: BLOB_BYTES } } } },
    { name: 'get-config', access: 'read_only', args: [], outputs: { type: 'uint128' } },
  ],
  variables: [],
  maps: [],
  fungible_tokens: [],
  non_fungible_tokens: [],
  epoch: 'Epoch31',
  clarity_version: 'Clarity3',
};

/** A buffer that differs at every height. */
function blobAt(height: number): Uint8Array {
  const bytes = new Uint8Array(BLOB_BYTES);
  for (let i = 0; i < bytes.length; i++) bytes[i] = (height * 31 + i) & 0xff;
  return bytes;
}

let node: FakeNode;
let gw: RunningGateway;
let events: string;
const streams: SseConnection[] = [];

const hitUrl = () => `${gw.url}/contract-calls/read-only/${TESTNET_ADDR}/config/get-config`;

beforeAll(async () => {
  node = await startFakeNode({ tipHeight: 100 });
  node.setAbi(TESTNET_ADDR, 'big', ABI);
  node.setAbi(TESTNET_ADDR, 'config', ABI);
  node.setReadOnly(TESTNET_ADDR, 'big', 'blob', ({ height }) => ({
    okay: true,
    result: hex(Cl.buffer(blobAt(height))),
  }));
  node.setReadOnly(TESTNET_ADDR, 'config', 'get-config', { okay: true, result: hex(Cl.uint(42)) });
  gw = await startGateway(
    testEnv(node.url, {
      EVENT_OBSERVER_PORT: '0',
      EVENT_OBSERVER_NETWORK: 'testnet',
      // A read that times out is a transient failure: nothing is sent until the next block. The
      // fake node answers in this process, slowly on a loaded machine: never let that be one.
      UPSTREAM_TIMEOUT_MS: '15000',
      WATCH_MAX_UNSENT_BYTES: String(MAX_UNSENT),
      WATCH_MAX_STREAMS_ANONYMOUS: '10',
    }),
    {
      // No source: the watched read is evaluated at every block (nothing proves it unchanged).
      contractSource: async (id) => {
        throw new Error(`no source for ${id}`);
      },
    },
  );
  await mineAndPost();
  const created = await request(`${gw.url}/subscriptions`, {
    body: {
      reads: [{ contractAddress: TESTNET_ADDR, contractName: 'big', functionName: 'blob', functionArgs: [] }],
    },
  });
  expect(created.status).toBe(201);
  events = created.body.data.events;
  // The other read, cached once: from here on it is a hit.
  const miss = await request(hitUrl(), { body: { functionArgs: [] } });
  expect(miss.status).toBe(200);
});

afterEach(() => {
  for (const s of streams.splice(0)) s.close();
});

afterAll(async () => {
  await gw?.close();
  await node?.close();
});

/** The node mines an empty block; the gateway's observer is told of it and has applied it. */
const mineAndPost = () => postNextBlock(node, gw.gateway.observer!, undefined);
type MinedBlock = Awaited<ReturnType<typeof mineAndPost>>;

async function open(): Promise<SseConnection> {
  const sse = await openSse(`${gw.url}${events}`);
  streams.push(sse);
  expect(sse.status).toBe(200);
  return sse;
}

async function samples() {
  return parseMetrics(await (await fetch(`${gw.url}/metrics`)).text());
}
const dropped = async () =>
  metricValue(await samples(), 'clarity_cache_watch_streams_dropped_total', { reason: 'slow-consumer' });

/** The blob a values event carries, as the node's raw hex. */
const rawBlob = (height: number) => hex(Cl.buffer(blobAt(height)));

/**
 * Mines blocks until the stream left unread has been dropped: after each, `reader` gets the
 * block's event and the other read is still a hit. Returns the blocks mined.
 */
async function mineUntilDropped(reader: SseConnection, droppedBefore: number): Promise<MinedBlock[]> {
  const mined: MinedBlock[] = [];
  while ((await dropped()) === droppedBefore) {
    expect(mined.length, 'the unread stream was never dropped').toBeLessThan(MOST_BLOCKS);
    const block = await mineAndPost();
    mined.push(block);
    const event = await reader.next();
    expect(event.event).toBe('values');
    expect(event.id).toBe(`${block.height}:${block.indexBlockHash}`);
    expect(event.json.values[0].raw).toBe(rawBlob(block.height));
    const hit = await request(hitUrl(), { body: { functionArgs: [] } });
    expect(hit.status).toBe(200);
    expect(hit.headers.get('cache-status')).toMatch(/; hit/);
  }
  return mined;
}

describe('a client that does not keep up with its event stream', () => {
  it('gets a last SLOW_CONSUMER error event; the reading client and cache hits are unaffected', async () => {
    const reader = await open();
    const slow = await open();
    const first = await reader.next();
    const firstSlow = await slow.next();
    expect(first.event).toBe('values');
    // Each event is well under the limit: one alone never drops a client that reads.
    expect(first.data.length).toBeGreaterThan(MAX_UNSENT / 4);
    expect(first.data.length).toBeLessThan(MAX_UNSENT / 2);
    expect(firstSlow.id).toBe(first.id);
    slow.pause();

    const mined = await mineUntilDropped(reader, 0);
    // Dropped for what it left unsent, not at once: the socket took some blocks' events first.
    expect(mined.length).toBeGreaterThan(1);

    // The slow client reads again (within the 5 s it is given): what was queued for it, then
    // the last event, then the end.
    slow.resume();
    const last = await slow.next((e) => e.event === 'error');
    expect(last.json).toEqual({ code: 'SLOW_CONSUMER' });
    await slow.ended;
    expect(slow.events.at(-1)).toBe(last);
    // Its values came in block order, each a block it was sent before it was dropped.
    const heights = slow.events.filter((e) => e.event === 'values').map((e) => Number(e.id!.split(':')[0]));
    expect(heights.length).toBeGreaterThan(1);
    expect(heights).toEqual([...heights].sort((a, b) => a - b));
    expect(heights.at(-1)!).toBeLessThanOrEqual(mined.at(-1)!.height);

    // One stream dropped, the reader's still open; it goes on getting every block.
    expect(await dropped()).toBe(1);
    expect(metricValue(await samples(), 'clarity_cache_watch_streams')).toBe(1);
    for (let i = 0; i < 3; i++) {
      const block = await mineAndPost();
      const event = await reader.next();
      expect(event.id).toBe(`${block.height}:${block.indexBlockHash}`);
      expect(event.json.values[0].raw).toBe(rawBlob(block.height));
    }
    expect(await dropped()).toBe(1);
  }, 120_000);

  it('a client that never reads again has its connection closed by the gateway', async () => {
    // The gateway's side of each connection, by the client's port.
    const accepted = new Map<number, Socket>();
    const onConnection = (socket: Socket) => accepted.set(socket.remotePort!, socket);
    gw.gateway.app.server.on('connection', onConnection);
    try {
      const reader = await open();
      const slow = await open();
      await reader.next();
      await slow.next();
      const socket = accepted.get(slow.localPort!);
      expect(socket).toBeDefined();
      const closed = once(socket!, 'close');
      slow.pause();
      const before = await dropped();
      await mineUntilDropped(reader, before);
      expect(await dropped()).toBe(before + 1);
      // Ended, but its last event cannot get through to a client that reads nothing: the
      // connection stays until the gateway destroys it (a few seconds later).
      expect(socket!.destroyed).toBe(false);
      await closed;
      // The client, still paused, did not end it. Reading again, it finds the connection over,
      // without the last event (it was never sent).
      slow.resume();
      await slow.ended;
      expect(slow.events.some((e) => e.event === 'error')).toBe(false);
      expect(metricValue(await samples(), 'clarity_cache_watch_streams')).toBe(1);
    } finally {
      gw.gateway.app.server.off('connection', onConnection);
    }
  }, 120_000);
});
