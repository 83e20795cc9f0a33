/**
 * Kept-alive connections through the drain (SIGTERM, or Gateway.close() which it calls): a
 * request the gateway has received is answered, with `Connection: close` once the drain has
 * begun; idle connections are closed with a FIN, never a reset; and no client sees its
 * connection reset.
 *
 * What a client may see fail, and why that is allowed: a request sent on a kept-alive
 * connection while the gateway was closing that connection as idle (the FIN and the request
 * cross) finds the connection closed cleanly, without a byte of an answer (undici: "other side
 * closed", node:http: "socket hang up"); HTTP/1.1 leaves such a request to its client to retry.
 * And a new connection after the listener closed is refused. Anything else (a reset, a broken
 * or missing answer to a request the gateway received) fails these tests.
 */
import net from 'node:net';
import { Cl } from '@stacks/transactions';
import { Client } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { hex, SAMPLE_ABI, TESTNET_ADDR } from '../../support/fixtures.js';
import { type RunningGateway, startGateway, testEnv } from '../../support/gateway.js';
import { logLines, type ServiceProcess, startService } from '../../support/process.js';
import { parseRawResponse, type RawResponse } from '../../support/raw-http.js';

let node: FakeNode;

const PATH = `/contract-calls/read-only/${TESTNET_ADDR}/demo/get-balance`;
const bodyFor = (who: string) =>
  JSON.stringify({ functionArgs: [{ type: 'principal', value: `${TESTNET_ADDR}.${who}` }] });
/** The same read every time: a hit once cached. */
const HIT = bodyFor('hit');

function requestText(body: string): string {
  return `POST ${PATH} HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

beforeAll(async () => {
  node = await startFakeNode();
  node.setAbi(TESTNET_ADDR, 'demo', SAMPLE_ABI);
  node.setReadOnly(TESTNET_ADDR, 'demo', 'get-balance', { okay: true, result: hex(Cl.ok(Cl.uint(77))) });
});

afterAll(async () => {
  await node?.close();
});

/**
 * A kept-alive connection over a raw socket, whose every byte and event is seen: answers are
 * read one at a time (by Content-Length), the gateway's FIN shows as `ended`, a reset as `errors`.
 */
class RawConnection {
  readonly socket: net.Socket;
  readonly errors: string[] = [];
  ended = false;
  closed = false;
  #buffer = '';
  #waiters: (() => void)[] = [];

  constructor(url: string) {
    const { hostname, port } = new URL(url);
    // Half-open allowed: the test decides when to close its side, as a client that has not yet
    // noticed the gateway's FIN would.
    this.socket = net.connect({ host: hostname, port: Number(port), allowHalfOpen: true });
    this.socket.on('data', (chunk: Buffer) => {
      this.#buffer += chunk.toString('latin1');
      this.#wake();
    });
    this.socket.on('end', () => {
      this.ended = true;
      this.#wake();
    });
    this.socket.on('error', (err: NodeJS.ErrnoException) => {
      this.errors.push(err.code ?? err.message);
      this.#wake();
    });
    this.socket.on('close', () => {
      this.closed = true;
      this.#wake();
    });
  }

  #wake(): void {
    for (const w of this.#waiters.splice(0)) w();
  }

  /** Resolves once `test` holds, re-checked at every socket event. */
  until(test: () => boolean): Promise<void> {
    return new Promise((resolve) => {
      const check = () => (test() ? resolve() : this.#waiters.push(check));
      check();
    });
  }

  /** The next complete answer, or undefined when the connection ended or failed first. */
  async answer(): Promise<RawResponse | undefined> {
    let found: RawResponse | undefined;
    await this.until(() => {
      const end = this.#buffer.indexOf('\r\n\r\n');
      if (end >= 0) {
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(this.#buffer.slice(0, end))?.[1] ?? 0);
        if (this.#buffer.length >= end + 4 + length) {
          found = parseRawResponse(this.#buffer.slice(0, end + 4 + length), false);
          this.#buffer = this.#buffer.slice(end + 4 + length);
          return true;
        }
      }
      return this.ended || this.closed || this.errors.length > 0;
    });
    return found;
  }

  /** Bytes received after the last complete answer. */
  get rest(): string {
    return this.#buffer;
  }
}

describe('Gateway.close() with requests already sent on kept-alive connections', () => {
  let gw: RunningGateway;

  beforeAll(async () => {
    gw = await startGateway(testEnv(node.url));
  });

  afterAll(async () => {
    await gw?.close();
  });

  it('answers each of them (hits as usual, misses 503) with Connection: close, closes idle connections, and resets none', async () => {
    const busy = Array.from({ length: 10 }, () => new RawConnection(gw.url));
    const idle = Array.from({ length: 3 }, () => new RawConnection(gw.url));
    // Each connection is kept alive by a first answer.
    for (const c of [...busy, ...idle]) {
      c.socket.write(requestText(HIT));
      const first = await c.answer();
      expect(first?.status).toBe(200);
      expect(first?.headers.connection).toBe('keep-alive');
    }
    // The next request of each busy connection (hits, and misses that need the upstream) is in
    // the gateway's socket buffers, not yet read, when the drain begins: the same turn of the
    // event loop.
    for (const [i, c] of busy.entries())
      c.socket.write(requestText(i % 2 === 0 ? HIT : bodyFor(`drain-${i}`)));
    const closing = gw.close();

    for (const [i, c] of busy.entries()) {
      const res = await c.answer();
      expect(c.errors).toEqual([]);
      if (i % 2 === 0) {
        expect(res?.status).toBe(200);
        expect(res?.body).toEqual({ success: true, data: '77' });
      } else {
        // The upstream is closed to new requests during the drain: the envelope says retry.
        expect(res?.status).toBe(503);
        expect(res?.body.error.code).toBe('SERVICE_UNAVAILABLE');
        expect(res?.body.error.details).toMatchObject({ retryable: true });
      }
      expect(res?.headers.connection).toBe('close');
      // Then the gateway closes its side, and nothing else arrives.
      await c.until(() => c.ended);
      expect(c.rest).toBe('');
      c.socket.end();
    }
    for (const c of idle) {
      await c.until(() => c.ended);
      expect(c.rest).toBe('');
      c.socket.end();
    }
    await closing;
    for (const c of [...busy, ...idle]) {
      await c.until(() => c.closed);
      expect(c.errors).toEqual([]);
    }
  });
});

interface Outcome {
  readonly client: number;
  /** Whether the test had seen the drain begin before the request was sent. */
  readonly sentAfterDrain: boolean;
  /** Whether the client's connection had been kept alive by the previous answer. */
  readonly reused: boolean;
  readonly status?: number;
  readonly connection?: string | undefined;
  readonly text?: string;
  readonly error?: string;
}

/** Resolves once the service has printed `text` (event-based). */
function printed(svc: ServiceProcess, text: string): Promise<void> {
  return new Promise((resolve) => {
    const check = (): void => {
      if (svc.output().includes(text)) {
        svc.child.stdout?.off('data', check);
        resolve();
      }
    };
    svc.child.stdout?.on('data', check);
    check();
  });
}

describe('SIGTERM while kept-alive clients keep sending', () => {
  it('answers every request it received, with Connection: close after the drain began, and resets no connection', async () => {
    // Misses take a while upstream, so that some are under way when the signal comes.
    node.delay(150, { kind: 'call-read' });
    const svc = await startService({
      STACKS_API_URL_MAINNET: node.url,
      STACKS_API_URL_TESTNET: node.url,
      CACHE_STORE: 'memory',
      UPSTREAM_RATE_LIMIT_PER_MINUTE: '100000',
    });
    const outcomes: Outcome[] = [];
    let drainSeen = false;
    let stopped = false;
    const answered = Array.from({ length: 10 }, () => 0);
    const progress = new Set<() => void>();
    const clients = Array.from({ length: 10 }, () => new Client(svc.url, { pipelining: 1 }));

    /** One client: hits and misses, back to back on its kept-alive connection. */
    const loop = async (i: number): Promise<void> => {
      const client = clients[i] as Client;
      let reused = false;
      for (let n = 0; !stopped; n++) {
        const sentAfterDrain = drainSeen;
        const body = n % 4 === 3 ? bodyFor(`c${i}n${n}`) : HIT;
        try {
          const res = await client.request({
            method: 'POST',
            path: PATH,
            headers: { 'content-type': 'application/json' },
            body,
          });
          const text = await res.body.text();
          const connection = res.headers.connection as string | undefined;
          outcomes.push({ client: i, sentAfterDrain, reused, status: res.statusCode, connection, text });
          reused = connection !== 'close';
          answered[i] = (answered[i] ?? 0) + 1;
          for (const p of progress) p();
        } catch (err) {
          const e = err as NodeJS.ErrnoException;
          outcomes.push({ client: i, sentAfterDrain, reused, error: `${e.code} ${e.message}` });
          // Before the drain nothing may fail; after it, the listener is gone and the client stops.
          return;
        }
      }
    };

    // A connection whose next request straddles the start of the drain: its head is partly
    // received before the signal, the rest after.
    const straddler = new RawConnection(svc.url);
    try {
      const loops = clients.map((_, i) => loop(i));
      // Every client has a kept-alive connection and has had hits and a miss answered.
      await new Promise<void>((resolve) => {
        const check = () => {
          if (answered.every((n) => n >= 5)) {
            progress.delete(check);
            resolve();
          }
        };
        progress.add(check);
        check();
      });
      straddler.socket.write(requestText(HIT));
      expect((await straddler.answer())?.headers.connection).toBe('keep-alive');
      const next = requestText(HIT);
      const cut = next.indexOf('\r\n') + 2;
      straddler.socket.write(next.slice(0, cut));
      // A miss is under way upstream when the signal comes.
      await node.waitForRequests(node.count('call-read') + 1, { kind: 'call-read' });

      svc.child.kill('SIGTERM');
      await printed(svc, 'shutting down');
      drainSeen = true;
      straddler.socket.write(next.slice(cut));
      const late = await straddler.answer();
      await straddler.until(() => straddler.ended);
      straddler.socket.end();

      expect(await svc.exited).toBe(0);
      stopped = true;
      await Promise.all(loops);

      // The straddling request was received before the drain: it is answered as usual, in the
      // envelope, and its connection closed after it.
      expect(straddler.errors).toEqual([]);
      expect(late?.status).toBe(200);
      expect(late?.body).toEqual({ success: true, data: '77' });
      expect(late?.headers.connection).toBe('close');

      const failures = outcomes.filter((o) => o.error !== undefined);
      const answers = outcomes.filter((o) => o.error === undefined);
      // No reset, ever: a failure is a refused new connection, or a kept-alive one closed
      // cleanly while idle (its request crossed the gateway's FIN).
      for (const f of failures) {
        const allowed =
          f.error?.startsWith('ECONNREFUSED') || (f.reused && f.error === 'UND_ERR_SOCKET other side closed');
        expect(allowed, JSON.stringify(f)).toBe(true);
      }
      // Every answer is complete and in the envelope: hits as usual, requests that needed the
      // upstream after the drain began SERVICE_UNAVAILABLE.
      for (const a of answers) {
        const body = JSON.parse(a.text ?? '');
        if (a.status === 200) expect(body).toEqual({ success: true, data: '77' });
        else {
          expect(a.status, a.text).toBe(503);
          expect(body.success).toBe(false);
          expect(body.error.code).toBe('SERVICE_UNAVAILABLE');
        }
      }
      // Requests sent once the drain had begun are answered with Connection: close.
      const afterDrain = answers.filter((a) => a.sentAfterDrain);
      for (const a of afterDrain) expect(a.connection, JSON.stringify(a)).toBe('close');
      // Every request the gateway received and answered (its access log) reached its client.
      const logged = logLines(svc).filter((l) => l.msg === 'request' && l.url === PATH).length;
      expect(logged).toBe(answers.length + 2);
    } finally {
      stopped = true;
      straddler.socket.destroy();
      node.clearFaults();
      await Promise.all(clients.map((c) => c.destroy()));
      await svc.stop();
    }
  });
});
