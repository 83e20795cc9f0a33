/**
 * A body over BODY_LIMIT_BYTES is answered with its 413 envelope, and the client reads it: the
 * gateway answers at once (Connection: close), then reads and discards what the client is still
 * sending until it closes its side, so that no reset throws the answer away (a socket closed
 * with unread bytes sends an RST, and the client's kernel drops what it had not read yet).
 * Real sockets, fresh connections (node:http, no agent), each exchange followed to its close.
 */
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { TESTNET_ADDR } from '../../support/fixtures.js';
import { type RunningGateway, startGateway, testEnv } from '../../support/gateway.js';

let node: FakeNode;
let gw: RunningGateway;

const SIX_MIB = 6 * 1024 * 1024;
const CHUNK = 64 * 1024;

beforeAll(async () => {
  node = await startFakeNode();
  gw = await startGateway(testEnv(node.url));
});

afterAll(async () => {
  await gw?.close();
  await node?.close();
});

interface Exchange {
  status: number | undefined;
  headers: http.IncomingHttpHeaders;
  text: string;
  /** Whether the answer's body arrived whole. */
  complete: boolean;
  /** Every error the client saw (request, response or socket), by code. */
  errors: string[];
}

/**
 * POST `size` bytes of JSON-looking body to `path` on a fresh connection and follow the
 * exchange until the connection is closed: with a Content-Length, or chunked (no length, so the
 * limit is found while reading).
 */
function postOversized(path: string, size: number, framing: 'length' | 'chunked'): Promise<Exchange> {
  const { hostname, port } = new URL(gw.url);
  return new Promise((resolve) => {
    const out: Exchange = { status: undefined, headers: {}, text: '', complete: false, errors: [] };
    const req = http.request({
      host: hostname,
      port,
      method: 'POST',
      path,
      agent: false,
      headers: {
        'content-type': 'application/json',
        ...(framing === 'length' ? { 'content-length': String(size) } : {}),
      },
    });
    const failed = (err: NodeJS.ErrnoException) => out.errors.push(err.code ?? err.message);
    req.on('error', failed);
    req.on('socket', (socket) => socket.on('error', failed));
    req.on('response', (res) => {
      out.status = res.statusCode;
      out.headers = res.headers;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        out.text += chunk;
      });
      res.on('end', () => {
        out.complete = true;
      });
      res.on('error', failed);
    });
    req.on('close', () => resolve(out));
    // Written in chunks, as a client streams an upload, while the answer may already be coming.
    let sent = 0;
    const pump = (): void => {
      while (sent < size) {
        const n = Math.min(CHUNK, size - sent);
        sent += n;
        const more = req.write(Buffer.alloc(n, 0x20));
        if (!more) {
          req.once('drain', pump);
          return;
        }
      }
      req.end();
    };
    pump();
  });
}

function expect413(res: Exchange): void {
  expect(res.errors).toEqual([]);
  expect(res.status).toBe(413);
  expect(res.complete).toBe(true);
  expect(res.headers.connection).toBe('close');
  const body = JSON.parse(res.text);
  expect(body.success).toBe(false);
  expect(body.error.code).toBe('VALIDATION_ERROR');
  expect(body.error.message).toMatch(/larger than the limit/);
}

describe('a body over the limit', () => {
  it('gets its 413 envelope, 20 times in a row on fresh connections, never a reset', async () => {
    const paths = [
      '/contract-calls/decode-clarity-value',
      `/contract-calls/read-only/${TESTNET_ADDR}/demo/get-info`,
      `/v2/map_entry/${TESTNET_ADDR}/demo/balances`,
    ];
    for (let i = 0; i < 20; i++) {
      const path = paths[i % paths.length] as string;
      const res = await postOversized(path, SIX_MIB, 'length');
      expect413(res);
    }
    expect(node.total - node.count('info')).toBe(0);
  });

  it('without a Content-Length (chunked, the limit found while reading) gets it too', async () => {
    for (let i = 0; i < 5; i++) {
      expect413(await postOversized('/contract-calls/decode-clarity-value', SIX_MIB, 'chunked'));
    }
  });

  it('closes the connection of a client that keeps sending, after its answer', async () => {
    const { hostname, port } = new URL(gw.url);
    const socket = net.connect(Number(port), hostname);
    let raw = '';
    socket.on('data', (chunk: Buffer) => {
      raw += chunk.toString('latin1');
    });
    socket.on('error', () => {});
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.write(
      'POST /contract-calls/decode-clarity-value HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n',
    );
    // Sends until the gateway closes the connection (it must: the body would take 1 GB).
    let sent = 0;
    const block = Buffer.alloc(CHUNK, 0x20);
    const pump = (): void => {
      while (!socket.destroyed && socket.write(block)) sent += block.length;
      if (!socket.destroyed) socket.once('drain', pump);
    };
    socket.once('connect', pump);
    await closed;
    expect(raw).toMatch(/^HTTP\/1\.1 413 /);
    // Cut off by the lingering bounds, long before the announced body's end.
    expect(sent).toBeLessThan(1_000_000_000);
  });
});
