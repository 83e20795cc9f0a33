/**
 * Watched reads' event streams through the shipped load balancer (deploy/nginx/clarity-cache.conf
 * run by a real nginx, a real gateway behind it, blocks posted to its event observer): each
 * event reaches the client while the stream stays open, the next block's as soon as it is
 * written, not when a proxy buffer fills or the stream ends. An instance that does not say
 * X-Accel-Buffering (a stand-in) shows that the shipped configuration itself passes streams
 * through unbuffered.
 */
import { readFileSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Cl } from '@stacks/transactions';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { postNextBlock } from '../integration/watch/helpers.js';
import { type FakeNode, startFakeNode } from '../support/fake-node.js';
import { hex, TESTNET_ADDR } from '../support/fixtures.js';
import { type RunningGateway, request, startGateway, testEnv } from '../support/gateway.js';
import { type LoadBalancer, startNginx } from '../support/nginx.js';
import { metricValue, parseMetrics } from '../support/prom.js';
import { openSse, type SseConnection } from '../support/sse.js';

/** Longest wait for an event that is already written: far below any buffer's flush-on-end. */
const PROMPTLY_MS = 5_000;

/** A watched buffer this large makes each event about a quarter of WATCH_MAX_UNSENT_BYTES. */
const BLOB_BYTES = 8_000;
const MAX_UNSENT = 65_536;

const ABI = {
  functions: [
    { name: 'get-height', access: 'read_only', args: [], outputs: { type: 'uint128' } },
    { name: 'blob', access: 'read_only', args: [], outputs: { type: { buffer: { length: BLOB_BYTES } } } },
  ],
  variables: [],
  maps: [],
  fungible_tokens: [],
  non_fungible_tokens: [],
  epoch: 'Epoch31',
  clarity_version: 'Clarity3',
};

/** Whether a stream has ended, as a flag a test can read at any moment. */
function watchEnd(sse: SseConnection): { readonly over: boolean } {
  const state = { over: false };
  void sse.ended.then(() => {
    state.over = true;
  });
  return state;
}

describe('event streams through the shipped load balancer, a gateway behind it', () => {
  let node: FakeNode;
  let gw: RunningGateway;
  let lb: LoadBalancer;
  const streams: SseConnection[] = [];

  beforeAll(async () => {
    node = await startFakeNode({ tipHeight: 100 });
    node.setAbi(TESTNET_ADDR, 'clock', ABI);
    node.setReadOnly(TESTNET_ADDR, 'clock', 'get-height', ({ height }) => ({
      okay: true,
      result: hex(Cl.uint(height)),
    }));
    // A large value that differs at every height.
    node.setReadOnly(TESTNET_ADDR, 'clock', 'blob', ({ height }) => ({
      okay: true,
      result: hex(Cl.buffer(new Uint8Array(BLOB_BYTES).map((_, i) => (height * 31 + i) & 0xff))),
    }));
    gw = await startGateway(
      testEnv(node.url, {
        EVENT_OBSERVER_PORT: '0',
        EVENT_OBSERVER_NETWORK: 'testnet',
        // A read that times out is a transient failure: nothing is sent until the next block. The
        // fake node answers in this process, slowly on a loaded machine: never let that be one.
        UPSTREAM_TIMEOUT_MS: '15000',
        // nginx's address is every client's: allow a few streams from it.
        WATCH_MAX_STREAMS_ANONYMOUS: '10',
        WATCH_MAX_UNSENT_BYTES: String(MAX_UNSENT),
      }),
      {
        contractSource: async (id) => {
          throw new Error(`no source for ${id}`);
        },
      },
    );
    lb = await startNginx([gw.url]);
    await mineAndPost();
  });

  afterEach(() => {
    for (const s of streams.splice(0)) s.close();
  });

  afterAll(async () => {
    await lb?.stop();
    await gw?.close();
    await node?.close();
  });

  /** The node mines an empty block; the gateway's observer (never behind nginx) has applied it. */
  const mineAndPost = () => postNextBlock(node, gw.gateway.observer!, undefined);

  async function subscribe(functionName = 'get-height'): Promise<string> {
    const created = await request(`${lb.url}/subscriptions`, {
      body: {
        reads: [{ contractAddress: TESTNET_ADDR, contractName: 'clock', functionName, functionArgs: [] }],
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body.data.events;
  }

  async function open(events: string, headers: Record<string, string> = {}): Promise<SseConnection> {
    const sse = await openSse(`${lb.url}${events}`, headers);
    streams.push(sse);
    expect(sse.status).toBe(200);
    expect(sse.headers['content-type']).toContain('text/event-stream');
    return sse;
  }

  it('passes each event on while the stream stays open, the next block’s at once', async () => {
    const events = await subscribe();
    const sse = await open(events);
    const stream = watchEnd(sse);
    const tip = node.block(node.tipHeight);
    const first = await sse.next(undefined, PROMPTLY_MS);
    expect(first.event).toBe('values');
    expect(first.id).toBe(`${tip.height}:${tip.indexBlockHash}`);
    expect(sse.retry).toBe(2000);
    expect(stream.over).toBe(false);

    for (let i = 0; i < 3; i++) {
      const block = await mineAndPost();
      const next = await sse.next(undefined, PROMPTLY_MS);
      expect(next.id).toBe(`${block.height}:${block.indexBlockHash}`);
      expect(next.json.values).toEqual([
        expect.objectContaining({ index: 0, raw: hex(Cl.uint(block.height)) }),
      ]);
      expect(stream.over).toBe(false);
    }
    // Only the gateway's own events: nginx added nothing, dropped nothing.
    expect(sse.events.map((e) => e.event)).toEqual(['values', 'values', 'values', 'values']);
  });

  it('passes Last-Event-ID on: a client resuming at the tip is sent only the next block', async () => {
    const events = await subscribe();
    const sse = await open(events);
    const at = await sse.next(undefined, PROMPTLY_MS);
    sse.close();
    const resumed = await open(events, { 'last-event-id': at.id! });
    const block = await mineAndPost();
    const next = await resumed.next(undefined, PROMPTLY_MS);
    expect(next.event).toBe('values');
    expect(next.id).toBe(`${block.height}:${block.indexBlockHash}`);
    const unknown = await open(events, { 'last-event-id': `1:${'ee'.repeat(32)}` });
    expect((await unknown.next(undefined, PROMPTLY_MS)).json).toEqual({ reason: 'unknown' });
  });

  it('a client that stops reading is dropped by the gateway as a slow consumer, behind nginx too', async () => {
    const dropped = async () =>
      metricValue(
        parseMetrics(await (await fetch(`${gw.url}/metrics`)).text()),
        'clarity_cache_watch_streams_dropped_total',
        { reason: 'slow-consumer' },
      );
    const events = await subscribe('blob');
    const reader = await open(events);
    const slow = await open(events);
    await reader.next(undefined, PROMPTLY_MS);
    await slow.next(undefined, PROMPTLY_MS);
    slow.pause();
    const before = await dropped();
    // What nginx holds of an unbuffered stream is a few kilobytes: the backlog reaches the
    // gateway within a bounded number of blocks (a buffering nginx would take gigabytes).
    let blocks = 0;
    while ((await dropped()) === before) {
      expect(blocks++, 'the gateway never saw its client fall behind').toBeLessThan(1_000);
      const block = await mineAndPost();
      expect((await reader.next(undefined, PROMPTLY_MS)).id).toBe(`${block.height}:${block.indexBlockHash}`);
    }
    slow.resume();
    const last = await slow.next((e) => e.event === 'error');
    expect(last.json).toEqual({ code: 'SLOW_CONSUMER' });
    await slow.ended;
    expect(await dropped()).toBe(before + 1);
    // The reader's stream is untouched.
    const block = await mineAndPost();
    expect((await reader.next(undefined, PROMPTLY_MS)).id).toBe(`${block.height}:${block.indexBlockHash}`);
  }, 120_000);

  it('passes the subscription’s deletion on, and the open stream’s last event', async () => {
    const events = await subscribe();
    const sse = await open(events);
    await sse.next(undefined, PROMPTLY_MS);
    const id = events.split('/')[2]!;
    const deleted = await request(`${lb.url}/subscriptions/${id}`, { method: 'DELETE' });
    expect(deleted.status).toBe(200);
    const last = await sse.next(undefined, PROMPTLY_MS);
    expect(last.event).toBe('error');
    expect(last.json).toEqual({ code: 'NOT_FOUND' });
    await sse.ended;
    const gone = await openSse(`${lb.url}${events}`);
    expect(gone.status).toBe(404);
    expect(JSON.parse(await gone.text).error.code).toBe('NOT_FOUND');
  });
});

describe('event streams through the shipped load balancer, an instance that does not ask for no buffering', () => {
  /** The open stream's response, on the instance's side. */
  let stream: ServerResponse | undefined;
  let opened: (() => void) | undefined;
  let lb: LoadBalancer;
  const instance = createServer((req, res: ServerResponse) => {
    req.resume();
    if (!/^\/subscriptions\/[^/]+\/events$/.test(req.url ?? '')) {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      return;
    }
    // As the gateway's stream, but without X-Accel-Buffering: the configuration alone decides.
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write('retry: 2000\n\n');
    stream = res;
    opened?.();
  });

  beforeAll(async () => {
    await new Promise<void>((resolve) => instance.listen(0, '127.0.0.1', resolve));
    lb = await startNginx([`http://127.0.0.1:${(instance.address() as AddressInfo).port}`]);
  });

  afterAll(async () => {
    await lb?.stop();
    instance.closeAllConnections();
    await new Promise((resolve) => instance.close(resolve));
  });

  async function openStream(id: string): Promise<{ sse: SseConnection; res: ServerResponse }> {
    const reached = new Promise<void>((resolve) => {
      opened = resolve;
    });
    const sse = await openSse(`${lb.url}/subscriptions/${id}/events`);
    await reached;
    expect(sse.status).toBe(200);
    return { sse, res: stream! };
  }

  it('passes each small event on as it is written', async () => {
    const { sse, res } = await openStream('small');
    try {
      const over = watchEnd(sse);
      for (let i = 1; i <= 3; i++) {
        res.write(`event: values\nid: ${i}:${'0'.repeat(64)}\ndata: {"n":${i}}\n\n`);
        const event = await sse.next(undefined, PROMPTLY_MS);
        expect(event.json).toEqual({ n: i });
        expect(over.over).toBe(false);
      }
    } finally {
      sse.close();
    }
  });

  it('lets a client that stops reading hold the instance back, as the gateway needs to see a slow consumer', async () => {
    // Buffering would have nginx take the stream in (into its temp files, up to a gigabyte)
    // while its client reads nothing: the instance would never find its writes left unsent.
    const { sse, res } = await openStream('slow');
    try {
      sse.pause();
      const chunk = `event: values\ndata: "${'x'.repeat(64 * 1024)}"\n\n`;
      let written = 0;
      while (res.writableLength <= 1024 * 1024) {
        expect(written, 'nginx kept taking what its client did not read').toBeLessThan(64 * 1024 * 1024);
        res.write(chunk);
        written += chunk.length;
        // Let the socket take what it can (nginx reads concurrently).
        await new Promise((resolve) => setImmediate(resolve));
      }
      expect(written).toBeGreaterThan(0);
    } finally {
      sse.close();
    }
  });
});

describe('the shipped configuration', () => {
  it('keeps a quiet event stream open far longer than the gateway’s 15 s between comments', () => {
    // An hour cannot be waited for in a test: the location that serves the streams is read.
    const conf = readFileSync(
      path.join(import.meta.dirname, '../../deploy/nginx/clarity-cache.conf'),
      'utf8',
    );
    const block = /location [^{\n]*subscriptions[^{\n]*\{([^}]*)\}/.exec(conf)?.[1];
    expect(block).toBeDefined();
    expect(block).toMatch(/^\s*proxy_buffering off;/m);
    expect(block).toMatch(/^\s*proxy_read_timeout 1h;/m);
    expect(block).toMatch(/^\s*proxy_http_version 1\.1;/m);
    expect(block).toMatch(/^\s*proxy_set_header Connection "";/m);
  });
});
