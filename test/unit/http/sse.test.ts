/**
 * The event stream's bytes (src/http/sse.ts) over a real socket: `retry: 2000` first, a comment
 * line every 15 s (the interval timer faked, so no test waits 15 s), each values event's id
 * and data, and the last error event.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { GatewayError } from '../../../src/errors.js';
import { HEARTBEAT_MS, SseStream } from '../../../src/http/sse.js';
import { openSse } from '../../support/sse.js';

const servers: http.Server[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

/** A server whose one stream is handed to the test. */
async function serve(): Promise<{ url: string; stream: Promise<SseStream>; closed: Promise<void> }> {
  let give!: (s: SseStream) => void;
  let closedResolve!: () => void;
  const stream = new Promise<SseStream>((r) => {
    give = r;
  });
  const closed = new Promise<void>((r) => {
    closedResolve = r;
  });
  const server = http.createServer((_req, res) => {
    const sse = new SseStream(res, { maxUnsentBytes: 1 << 20, onClose: closedResolve });
    sse.start({ 'x-extra': 'yes' });
    give(sse);
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, stream, closed };
}

const H = 'ab'.repeat(32);

describe('an event stream', () => {
  it('starts with retry, says something every 15 s, and writes events as the contract says', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const { url, stream, closed } = await serve();
    const client = await openSse(url);
    const sse = await stream;
    expect(client.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(client.headers['x-extra']).toBe('yes');
    sse.values({
      block: { height: 7, indexBlockHash: H, receivedAt: 0 },
      values: [
        { index: 0, outcome: { kind: 'value', raw: '0x01', value: '1', same: 'v0x01' } },
        {
          index: 2,
          outcome: {
            kind: 'error',
            error: new GatewayError('CONTRACT_ERROR', 'the function returned (err u1)', { value: '1' }),
            same: 'e',
          },
        },
      ],
    });
    const values = await client.next();
    expect(client.retry).toBe(2000);
    expect(values.event).toBe('values');
    expect(values.id).toBe(`7:${H}`);
    expect(values.json).toEqual({
      tipHeight: 7,
      indexBlockHash: H,
      values: [
        { index: 0, value: '1', raw: '0x01' },
        {
          index: 2,
          error: {
            code: 'CONTRACT_ERROR',
            message: 'the function returned (err u1)',
            details: { value: '1' },
          },
        },
      ],
    });
    expect(client.comments).toEqual([]);
    vi.advanceTimersByTime(HEARTBEAT_MS);
    await vi.waitFor(() => expect(client.comments).toEqual(['keep-alive']));
    vi.advanceTimersByTime(HEARTBEAT_MS);
    await vi.waitFor(() => expect(client.comments).toEqual(['keep-alive', 'keep-alive']));

    sse.reset('unknown');
    sse.end('NOT_FOUND');
    const reset = await client.next();
    expect(reset).toMatchObject({ event: 'reset', id: undefined, json: { reason: 'unknown' } });
    const last = await client.next();
    expect(last).toMatchObject({ event: 'error', json: { code: 'NOT_FOUND' } });
    await closed;
    await client.ended;
  });
});
