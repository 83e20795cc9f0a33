/**
 * client.watch() (client/src/watch.ts) against a scripted gateway: a node:http server on a real
 * socket whose answers each test writes, Server-Sent Events text included. What is checked is
 * the client's side of the contract: the subscription it sends, the events it delivers, and
 * how it reconnects (Last-Event-ID, the server's retry time, a forgotten subscription made
 * again, SLOW_CONSUMER), stops (NOT_FOUND, final refusals) and ends (abort, close()).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Cl } from '@stacks/transactions';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createClient,
  NotFoundError,
  RateLimitExceededError,
  UnauthorizedError,
} from '../../client/src/index.js';
import { watchRecorder } from '../support/watch-helpers.js';

const ADDR = 'SP2C2YFP12AJZB4MABJBAJ55XECVS7E4PMMZ89YZR';
const HASH_A = 'a'.repeat(64);
const HASH_B = 'b'.repeat(64);
const HASH_C = 'c'.repeat(64);

interface Seen {
  readonly method: string;
  readonly url: string;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
  readonly at: number;
}

type Handler = (req: Seen, res: http.ServerResponse, n: number) => void;

interface Scripted {
  readonly url: string;
  readonly seen: Seen[];
  /** The requests of one kind, in order. */
  of(method: string, path?: RegExp): Seen[];
  close(): Promise<void>;
}

const servers: Scripted[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

/**
 * A gateway whose answers `handlers` write: POST /subscriptions answers subscription `sub-<n>`
 * unless `post` says otherwise, DELETE answers 200, GET events goes to `events` with its count.
 */
async function scripted(handlers: { events: Handler; post?: Handler }): Promise<Scripted> {
  const seen: Seen[] = [];
  const counts = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const s: Seen = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
        at: Date.now(),
      };
      seen.push(s);
      const kind = s.method === 'GET' ? 'events' : s.method;
      const n = counts.get(kind) ?? 0;
      counts.set(kind, n + 1);
      if (s.method === 'POST') {
        if (handlers.post !== undefined) return handlers.post(s, res, n);
        return json(res, 201, {
          success: true,
          data: { id: `sub-${n}`, events: `/subscriptions/sub-${n}/events`, reads: [{ index: 0, key: 'k' }] },
        });
      }
      if (s.method === 'DELETE') return json(res, 200, { success: true, data: s.url.split('/')[2] });
      return handlers.events(s, res, n);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const scriptedServer: Scripted = {
    url,
    seen,
    of: (method, path) => seen.filter((s) => s.method === method && (path === undefined || path.test(s.url))),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  servers.push(scriptedServer);
  return scriptedServer;
}

function json(
  res: http.ServerResponse,
  status: number,
  body: unknown,
  headers: http.OutgoingHttpHeaders = {},
) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

const notFound = {
  success: false,
  error: { id: 'err_1', code: 'NOT_FOUND', message: 'no such subscription' },
};

function openStream(res: http.ServerResponse, first = 'retry: 50\n\n'): void {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  res.write(first);
}

function valuesText(height: number, hash: string, values: unknown[]): string {
  return `event: values\nid: ${height}:${hash}\ndata: ${JSON.stringify({ tipHeight: height, indexBlockHash: hash, values })}\n\n`;
}

const READ = {
  contractAddress: `${ADDR}.token`,
  functionName: 'get-balance',
  functionArgs: [Cl.principal(ADDR)],
};

describe('watch(): subscribing and delivering', () => {
  it('subscribes with the reads as batch calls, the API key on every request, and delivers values events', async () => {
    const gw = await scripted({
      events: (_req, res) => {
        openStream(res);
        res.write(': keep-alive\n\n');
        res.write(
          valuesText(5, HASH_A, [
            { index: 0, value: '10', raw: '0x01' },
            { index: 1, value: 'x', raw: '0x02' },
          ]),
        );
        res.write(
          valuesText(6, HASH_B, [
            { index: 1, error: { code: 'CONTRACT_ERROR', message: 'err', details: { value: '7' } } },
          ]),
        );
      },
    });
    const r = watchRecorder();
    const client = createClient({
      baseUrl: `${gw.url}/`,
      headers: { 'x-api-key': 'secret-key' },
      retries: 0,
    });
    const handle = await client.watch(
      [
        READ,
        {
          contractAddress: ADDR,
          contractName: 'token',
          functionName: 'get-supply',
          functionArgs: [Cl.uint(2n ** 100n)],
          senderAddress: ADDR,
        },
      ],
      r.options,
    );
    expect(handle.id).toBe('sub-0');
    await expect.poll(() => r.values.length).toBe(2);
    expect(r.values).toEqual([
      {
        id: `5:${HASH_A}`,
        tipHeight: 5,
        indexBlockHash: HASH_A,
        values: [
          { index: 0, value: '10', raw: '0x01' },
          { index: 1, value: 'x', raw: '0x02' },
        ],
      },
      {
        id: `6:${HASH_B}`,
        tipHeight: 6,
        indexBlockHash: HASH_B,
        values: [{ index: 1, error: { code: 'CONTRACT_ERROR', message: 'err', details: { value: '7' } } }],
      },
    ]);
    expect(handle.lastEventId).toBe(`6:${HASH_B}`);

    const [post] = gw.of('POST');
    expect(post!.url).toBe('/subscriptions');
    expect(JSON.parse(post!.body)).toEqual({
      reads: [
        { contractAddress: `${ADDR}.token`, functionName: 'get-balance', functionArgs: [Cl.principal(ADDR)] },
        {
          contractAddress: ADDR,
          contractName: 'token',
          functionName: 'get-supply',
          // A native bigint integer goes as a decimal string, as batch() sends it.
          functionArgs: [{ type: 'uint', value: (2n ** 100n).toString() }],
          senderAddress: ADDR,
        },
      ],
    });
    const [get] = gw.of('GET');
    expect(get!.url).toBe('/subscriptions/sub-0/events');
    expect(get!.headers.accept).toBe('text/event-stream');
    expect(get!.headers['last-event-id']).toBeUndefined();
    for (const s of [post!, get!]) expect(s.headers['x-api-key']).toBe('secret-key');

    await handle.close();
    expect(gw.of('DELETE').map((s) => s.url)).toEqual(['/subscriptions/sub-0']);
    expect(r.errors).toEqual([]);
  });

  it('parses events whatever the chunks: one byte at a time, CRLF line ends', async () => {
    const text = valuesText(7, HASH_A, [{ index: 0, value: 'é€😀', raw: '0x' }]).replaceAll('\n', '\r\n');
    const gw = await scripted({
      events: (_req, res) => {
        openStream(res, 'retry: 50\r\n\r\n');
        const bytes = Buffer.from(text);
        let i = 0;
        const next = () => {
          if (i >= bytes.length || res.destroyed) return;
          res.write(bytes.subarray(i, i + 1));
          i++;
          setTimeout(next, 1);
        };
        next();
      },
    });
    const r = watchRecorder();
    const handle = await createClient({ baseUrl: gw.url, retries: 0 }).watch([READ], r.options);
    await expect.poll(() => r.values.length).toBe(1);
    expect(r.values[0]!.values).toEqual([{ index: 0, value: 'é€😀', raw: '0x' }]);
    await handle.close();
  });

  it('sends lastEventId on the first connection when given one, and calls onReset', async () => {
    const gw = await scripted({
      events: (_req, res) => {
        openStream(res);
        res.write(`event: reset\ndata: {"reason":"not-canonical"}\n\n`);
        res.write(valuesText(9, HASH_C, [{ index: 0, value: '1', raw: '0x01' }]));
      },
    });
    const r = watchRecorder();
    const handle = await createClient({ baseUrl: gw.url, retries: 0 }).watch([READ], {
      ...r.options,
      lastEventId: `3:${HASH_A}`,
    });
    await expect.poll(() => r.values.length).toBe(1);
    expect(r.resets).toEqual([{ reason: 'not-canonical' }]);
    expect(gw.of('GET')[0]!.headers['last-event-id']).toBe(`3:${HASH_A}`);
    await handle.close();
  });

  it('awaits an async onValues before delivering the next event', async () => {
    const gw = await scripted({
      events: (_req, res) => {
        openStream(res);
        res.write(valuesText(1, HASH_A, [{ index: 0, value: 1, raw: '0x' }]));
        res.write(valuesText(2, HASH_B, [{ index: 0, value: 2, raw: '0x' }]));
      },
    });
    const order: string[] = [];
    const handle = await createClient({ baseUrl: gw.url, retries: 0 }).watch([READ], {
      onValues: async (e) => {
        order.push(`start ${e.tipHeight}`);
        await new Promise((resolve) => setTimeout(resolve, 30));
        order.push(`end ${e.tipHeight}`);
      },
      onError: () => {},
    });
    await expect.poll(() => order.length).toBe(4);
    expect(order).toEqual(['start 1', 'end 1', 'start 2', 'end 2']);
    await handle.close();
  });
});

describe('watch(): reconnecting', () => {
  it('reconnects after a dropped connection with Last-Event-ID, after the retry time the server sent', async () => {
    const gw = await scripted({
      events: (_req, res, n) => {
        openStream(res, n === 0 ? 'retry: 150\n\n' : '');
        if (n === 0) {
          res.write(valuesText(5, HASH_A, [{ index: 0, value: 1, raw: '0x01' }]));
          // An event cut off by the drop: neither delivered nor remembered.
          res.write(`event: values\nid: 6:${HASH_B}\ndata: {"tipHeight":6,`);
          setTimeout(() => res.destroy(), 20);
        } else {
          res.write(valuesText(6, HASH_B, [{ index: 0, value: 2, raw: '0x02' }]));
        }
      },
    });
    const r = watchRecorder();
    const handle = await createClient({ baseUrl: gw.url, retries: 0 }).watch([READ], r.options);
    await expect.poll(() => r.values.length).toBe(2);
    const gets = gw.of('GET');
    expect(gets).toHaveLength(2);
    expect(gets[1]!.headers['last-event-id']).toBe(`5:${HASH_A}`);
    // The server's retry: 150, not the default 2000, and not less.
    const gap = gets[1]!.at - gets[0]!.at;
    expect(gap).toBeGreaterThanOrEqual(150);
    expect(gap).toBeLessThan(1500);
    expect(r.reconnects).toEqual([
      expect.objectContaining({ attempt: 1, delayMs: 150, lastEventId: `5:${HASH_A}` }),
    ]);
    expect(r.reconnects[0]!.cause.code).toBe('NETWORK_ERROR');
    expect(r.values.map((v) => v.id)).toEqual([`5:${HASH_A}`, `6:${HASH_B}`]);
    expect(r.errors).toEqual([]);
    await handle.close();
  });

  it('reconnects when the stream ends, and when nothing arrives for idleTimeoutMs', async () => {
    const gw = await scripted({
      events: (_req, res, n) => {
        openStream(res);
        if (n === 0) {
          res.end(valuesText(5, HASH_A, [{ index: 0, value: 1, raw: '0x01' }]));
        } else if (n === 1) {
          res.write(valuesText(6, HASH_B, [{ index: 0, value: 2, raw: '0x02' }]));
          // then silence: no heartbeat
        } else {
          res.write(valuesText(7, HASH_C, [{ index: 0, value: 3, raw: '0x03' }]));
        }
      },
    });
    const r = watchRecorder();
    const handle = await createClient({ baseUrl: gw.url, retries: 0 }).watch([READ], {
      ...r.options,
      idleTimeoutMs: 300,
    });
    await expect.poll(() => r.values.length).toBe(3);
    const gets = gw.of('GET');
    expect(gets.map((g) => g.headers['last-event-id'])).toEqual([undefined, `5:${HASH_A}`, `6:${HASH_B}`]);
    expect(r.reconnects.map((e) => e.cause.message)).toEqual([
      expect.stringContaining('the stream ended'),
      expect.stringContaining('nothing received for 300 ms'),
    ]);
    await handle.close();
  });

  it('reconnects after an error event SLOW_CONSUMER, with Last-Event-ID', async () => {
    const gw = await scripted({
      events: (_req, res, n) => {
        openStream(res);
        if (n === 0) {
          res.write(valuesText(5, HASH_A, [{ index: 0, value: 1, raw: '0x01' }]));
          // The gateway ends the stream after its error event; this client must not wait for that.
          res.write('event: error\ndata: {"code":"SLOW_CONSUMER"}\n\n');
        } else {
          res.write(valuesText(6, HASH_B, [{ index: 0, value: 2, raw: '0x02' }]));
        }
      },
    });
    const r = watchRecorder();
    const handle = await createClient({ baseUrl: gw.url, retries: 0 }).watch([READ], r.options);
    await expect.poll(() => r.values.length).toBe(2);
    expect(gw.of('GET')[1]!.headers['last-event-id']).toBe(`5:${HASH_A}`);
    expect(r.reconnects.map((e) => e.cause.code)).toEqual(['SLOW_CONSUMER']);
    expect(r.errors).toEqual([]);
    await handle.close();
  });

  it('subscribes again when a reconnection gets 404 (the gateway forgot it), keeping Last-Event-ID', async () => {
    const gw = await scripted({
      events: (req, res, n) => {
        if (n === 0) {
          openStream(res);
          res.write(valuesText(5, HASH_A, [{ index: 0, value: 1, raw: '0x01' }]));
          setTimeout(() => res.destroy(), 10);
        } else if (req.url.includes('sub-0')) {
          json(res, 404, notFound);
        } else {
          openStream(res);
          res.write(`event: reset\ndata: {"reason":"unknown"}\n\n`);
          res.write(valuesText(6, HASH_B, [{ index: 0, value: 2, raw: '0x02' }]));
        }
      },
    });
    const r = watchRecorder();
    const handle = await createClient({ baseUrl: gw.url, retries: 0 }).watch([READ], r.options);
    await expect.poll(() => r.values.length).toBe(2);
    expect(gw.of('POST')).toHaveLength(2);
    expect(gw.of('POST')[1]!.body).toBe(gw.of('POST')[0]!.body);
    const gets = gw.of('GET');
    expect(gets.map((g) => [g.url, g.headers['last-event-id']])).toEqual([
      ['/subscriptions/sub-0/events', undefined],
      ['/subscriptions/sub-0/events', `5:${HASH_A}`],
      ['/subscriptions/sub-1/events', `5:${HASH_A}`],
    ]);
    expect(handle.id).toBe('sub-1');
    expect(r.resets).toEqual([{ reason: 'unknown' }]);
    expect(r.errors).toEqual([]);
    await handle.close();
    expect(gw.of('DELETE').map((d) => d.url)).toEqual(['/subscriptions/sub-1']);
  });

  it('retries 503 and 429 with longer waits each time, honouring Retry-After, and starts again from retry after values', async () => {
    const gw = await scripted({
      events: (_req, res, n) => {
        if (n === 0) {
          openStream(res);
          res.write(valuesText(5, HASH_A, [{ index: 0, value: 1, raw: '0x01' }]));
          setTimeout(() => res.destroy(), 10);
        } else if (n === 1 || n === 2) {
          json(res, 503, {
            success: false,
            error: { id: 'e', code: 'SERVICE_UNAVAILABLE', message: 'draining' },
          });
        } else if (n === 3) {
          json(
            res,
            429,
            {
              success: false,
              error: {
                id: 'e',
                code: 'RATE_LIMIT_EXCEEDED',
                message: 'streams',
                details: { scope: 'streams' },
              },
            },
            { 'retry-after': '1' },
          );
        } else if (n === 4) {
          openStream(res);
          res.write(valuesText(6, HASH_B, [{ index: 0, value: 2, raw: '0x02' }]));
          setTimeout(() => res.destroy(), 10);
        } else {
          openStream(res);
          res.write(valuesText(7, HASH_C, [{ index: 0, value: 3, raw: '0x03' }]));
        }
      },
    });
    const r = watchRecorder();
    const handle = await createClient({ baseUrl: gw.url, retries: 0 }).watch([READ], r.options);
    await expect.poll(() => r.values.length, { timeout: 10_000 }).toBe(3);
    expect(r.reconnects.map((e) => [e.attempt, e.cause.code])).toEqual([
      [1, 'NETWORK_ERROR'],
      [2, 'SERVICE_UNAVAILABLE'],
      [3, 'SERVICE_UNAVAILABLE'],
      [4, 'RATE_LIMIT_EXCEEDED'],
      [1, 'NETWORK_ERROR'],
    ]);
    const delays = r.reconnects.map((e) => e.delayMs);
    expect(delays[0]).toBe(50);
    // Equal-jitter backoff from the retry time: [50·2^(n-1), 50·2^n] for the n-th failure in a row.
    expect(delays[1]).toBeGreaterThanOrEqual(50);
    expect(delays[1]).toBeLessThanOrEqual(100);
    expect(delays[2]).toBeGreaterThanOrEqual(100);
    expect(delays[2]).toBeLessThanOrEqual(200);
    expect(delays[3]).toBe(1000);
    // Values came: the next drop waits the retry time again.
    expect(delays[4]).toBe(50);
    const gets = gw.of('GET');
    expect(gets[4]!.at - gets[3]!.at).toBeGreaterThanOrEqual(1000);
    expect(gets.slice(1).map((g) => g.headers['last-event-id'])).toEqual([
      ...Array(4).fill(`5:${HASH_A}`),
      `6:${HASH_B}`,
    ]);
    expect(r.errors).toEqual([]);
    await handle.close();
  });
});

describe('watch(): stopping', () => {
  it('stops with NotFoundError on an error event NOT_FOUND (the subscription was deleted)', async () => {
    const gw = await scripted({
      events: (_req, res) => {
        openStream(res);
        res.write(valuesText(5, HASH_A, [{ index: 0, value: 1, raw: '0x01' }]));
        res.write('event: error\ndata: {"code":"NOT_FOUND"}\n\n');
      },
    });
    const r = watchRecorder();
    const handle = await createClient({ baseUrl: gw.url, retries: 0 }).watch([READ], r.options);
    await handle.done;
    expect(r.values).toHaveLength(1);
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]).toBeInstanceOf(NotFoundError);
    expect(r.errors[0]).toMatchObject({ code: 'NOT_FOUND' });
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(gw.of('GET')).toHaveLength(1);
    // Deleted already: nothing to delete.
    expect(gw.of('DELETE')).toHaveLength(0);
  });

  it('stops on a 404 right after subscribing, rather than subscribing over and over', async () => {
    const gw = await scripted({ events: (_req, res) => json(res, 404, notFound) });
    const r = watchRecorder();
    const handle = await createClient({ baseUrl: gw.url, retries: 0 }).watch([READ], r.options);
    await handle.done;
    expect(r.errors[0]).toBeInstanceOf(NotFoundError);
    expect(gw.of('POST')).toHaveLength(1);
    expect(gw.of('GET')).toHaveLength(1);
  });

  it('stops with the error of a refusal no retry changes (401), and on a 200 that is no event stream', async () => {
    const refusing = await scripted({
      events: (_req, res) =>
        json(res, 401, { success: false, error: { id: 'e', code: 'UNAUTHORIZED', message: 'key revoked' } }),
    });
    const r = watchRecorder();
    await (await createClient({ baseUrl: refusing.url, retries: 0 }).watch([READ], r.options)).done;
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]).toBeInstanceOf(UnauthorizedError);
    expect(r.errors[0]!.status).toBe(401);

    const page = await scripted({
      events: (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<p>hello</p>');
      },
    });
    const p = watchRecorder();
    await (await createClient({ baseUrl: page.url, retries: 0 }).watch([READ], p.options)).done;
    expect(p.errors[0]!.message).toMatch(/answered 200 with text\/html, not an event stream/);
  });

  it('throws the subscription’s refusal from watch() itself', async () => {
    const gw = await scripted({
      events: () => {},
      post: (_req, res) =>
        json(res, 429, {
          success: false,
          error: {
            id: 'e',
            code: 'RATE_LIMIT_EXCEEDED',
            message: 'too many streams',
            details: { scope: 'streams' },
          },
        }),
    });
    const err = await createClient({ baseUrl: gw.url, retries: 0 })
      .watch([READ], watchRecorder().options)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitExceededError);
    expect((err as RateLimitExceededError).details).toEqual({ scope: 'streams' });
    expect(gw.of('GET')).toHaveLength(0);
  });

  it('ends cleanly when the signal aborts: done resolves, the subscription is deleted', async () => {
    const gw = await scripted({
      events: (_req, res) => {
        openStream(res);
        res.write(valuesText(5, HASH_A, [{ index: 0, value: 1, raw: '0x01' }]));
      },
    });
    const r = watchRecorder();
    const controller = new AbortController();
    const handle = await createClient({ baseUrl: gw.url, retries: 0 }).watch([READ], {
      ...r.options,
      signal: controller.signal,
    });
    await expect.poll(() => r.values.length).toBe(1);
    controller.abort();
    await expect(handle.done).resolves.toBeUndefined();
    expect(gw.of('DELETE').map((d) => d.url)).toEqual(['/subscriptions/sub-0']);
    expect(r.errors).toEqual([]);
    expect(gw.of('GET')).toHaveLength(1);
  });

  it('ends during a wait to reconnect when aborted, at once', async () => {
    const gw = await scripted({
      events: (_req, res) => {
        openStream(res, 'retry: 60000\n\n');
        res.end();
      },
    });
    const r = watchRecorder();
    const controller = new AbortController();
    const handle = await createClient({ baseUrl: gw.url, retries: 0 }).watch([READ], {
      ...r.options,
      signal: controller.signal,
    });
    await expect.poll(() => r.reconnects.length).toBe(1);
    const started = Date.now();
    controller.abort();
    await handle.done;
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('rejects watch() with the abort reason when the signal aborts before the subscription exists', async () => {
    const gw = await scripted({
      events: () => {},
      post: () => {
        // never answers
      },
    });
    const controller = new AbortController();
    const pending = createClient({ baseUrl: gw.url, retries: 0 }).watch([READ], {
      ...watchRecorder().options,
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(), 50);
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('rejects done with what a callback threw, ending the watch and deleting the subscription', async () => {
    const gw = await scripted({
      events: (_req, res) => {
        openStream(res);
        res.write(valuesText(5, HASH_A, [{ index: 0, value: 1, raw: '0x01' }]));
      },
    });
    const handle = await createClient({ baseUrl: gw.url, retries: 0 }).watch([READ], {
      onValues: () => {
        throw new Error('consumer bug');
      },
      onError: () => {},
    });
    await expect(handle.done).rejects.toThrow('consumer bug');
    expect(gw.of('DELETE')).toHaveLength(1);
    await expect(handle.close()).resolves.toBeUndefined();
  });
});
