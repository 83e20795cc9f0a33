/**
 * The exact-repeat fast lane (src/http/fast-lane.ts) over real HTTP: it answers exactly what
 * the full path answers (headers, metrics, bodies), and stops at once when the full path would
 * answer differently: expiry, bustCache, admin invalidation (here and from another instance
 * sharing Redis) and a failed store write. `gateway.lane.served` tells which path answered.
 */
import net from 'node:net';
import { Cl } from '@stacks/transactions';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { MemoryStore } from '../../../src/cache/stores/memory.js';
import { SqliteStore } from '../../../src/cache/stores/sqlite.js';
import { TieredStore } from '../../../src/cache/stores/tiered.js';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { hex, INFO_VALUE, MAINNET_ADDR, SAMPLE_ABI } from '../../support/fixtures.js';
import { type RunningGateway, request, startGateway, testEnv } from '../../support/gateway.js';
import { metricValue, parseMetrics } from '../../support/prom.js';
import { startRedis } from '../../support/redis-server.js';
import { tmpDir } from '../../unit/cache/tmp-dir.js';

const TOKEN = 'fast-lane-token';
const ORIGIN = 'https://app.example';
const ROUTE = '/contract-calls/read-only/:contractAddress/:contractName/:functionName';
const balanceUrl = (base: string) => `${base}/contract-calls/read-only/${MAINNET_ADDR}/demo/get-balance`;
const infoUrl = (base: string) => `${base}/contract-calls/read-only/${MAINNET_ADDR}/demo/get-info`;
const body = { functionArgs: [{ type: 'principal', value: MAINNET_ADDR }] };

let node: FakeNode;
/** The node answers a new value on every call, so an outdated answer is visible. */
let calls = 0;

beforeAll(async () => {
  node = await startFakeNode();
  node.setAbi(MAINNET_ADDR, 'demo', SAMPLE_ABI);
  node.setReadOnly(MAINNET_ADDR, 'demo', 'get-balance', () => ({
    okay: true,
    result: hex(Cl.ok(Cl.uint(++calls))),
  }));
  node.setReadOnly(MAINNET_ADDR, 'demo', 'get-info', { okay: true, result: hex(INFO_VALUE) });
});
afterAll(async () => {
  await node?.close();
});

const running: RunningGateway[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const r of running.splice(0).reverse()) await r.close();
});

async function start(env: Record<string, string> = {}, deps = {}): Promise<RunningGateway> {
  const gw = await startGateway(
    testEnv(node.url, { ADMIN_TOKEN: TOKEN, CORS_ORIGINS: ORIGIN, ...env }),
    deps,
  );
  running.push(gw);
  return gw;
}

/** Headers of an answer that must be identical whichever path gave it. */
function stableHeaders(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of headers) if (name !== 'date') out[name] = value;
  return out;
}

describe('read-only hits', () => {
  it('answers a repeat with the full path headers, Age and ttl computed per answer, and counts it the same', async () => {
    const gw = await start();
    const req = { body: { ...body, cacheControl: { ttl: 60 } }, headers: { origin: ORIGIN } };
    const miss = await request(balanceUrl(gw.url), req);
    expect(miss.headers.get('cache-status')).toBe('clarity-cache; fwd=miss; stored; ttl=60');

    const fixed = Date.now();
    const clock = vi.spyOn(Date, 'now').mockReturnValue(fixed);
    const metricsBefore = parseMetrics((await request(`${gw.url}/metrics`)).body);
    const full = await request(balanceUrl(gw.url), req);
    expect(gw.gateway.lane.served).toBe(0);
    const metricsMid = parseMetrics((await request(`${gw.url}/metrics`)).body);
    clock.mockReturnValue(fixed + 7000);
    const lane = await request(balanceUrl(gw.url), req);
    expect(gw.gateway.lane.served).toBe(1);
    const metricsAfter = parseMetrics((await request(`${gw.url}/metrics`)).body);
    clock.mockRestore();

    expect(lane.body).toEqual(full.body);
    const fullAge = Number(full.headers.get('age'));
    const fullTtl = Number(/ttl=(\d+)/.exec(full.headers.get('cache-status') ?? '')?.[1]);
    expect(full.headers.get('cache-status')).toBe(`clarity-cache; hit; ttl=${fullTtl}`);
    expect(lane.headers.get('cache-status')).toBe(`clarity-cache; hit; ttl=${fullTtl - 7}`);
    expect(lane.headers.get('age')).toBe(String(fullAge + 7));
    const expected = {
      ...stableHeaders(full.headers),
      age: String(fullAge + 7),
      'cache-status': `clarity-cache; hit; ttl=${fullTtl - 7}`,
    };
    expect(stableHeaders(lane.headers)).toEqual(expected);
    expect(lane.headers.get('access-control-allow-origin')).toBe(ORIGIN);

    // Each answer, full path or lane, counts one request, one duration and one cache hit.
    const labels = { route: ROUTE, method: 'POST', status: '200' };
    for (const [before, after] of [
      [metricsBefore, metricsMid],
      [metricsMid, metricsAfter],
    ] as const) {
      const delta = (name: string, l: Record<string, string>) =>
        metricValue(after, name, l) - metricValue(before, name, l);
      expect(delta('clarity_cache_http_requests_total', labels)).toBe(1);
      expect(delta('clarity_cache_http_request_duration_seconds_count', { route: ROUTE })).toBe(1);
      expect(delta('clarity_cache_cache_requests_total', { endpoint: 'read-only', outcome: 'hit' })).toBe(1);
    }
  });

  it('keys answers by Origin (CORS), Content-Type and the exact body bytes', async () => {
    const gw = await start();
    const info = infoUrl(gw.url);
    const plain = { rawBody: '{"functionArgs":[]}' };
    await request(info, plain); // miss
    await request(info, plain); // full-path hit, now held
    await request(info, plain);
    expect(gw.gateway.lane.served).toBe(1);

    // Another Origin: not the same answer (no CORS header for an unknown origin).
    const other = await request(info, { ...plain, headers: { origin: 'https://evil.example' } });
    expect(gw.gateway.lane.served).toBe(1);
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    const allowed = await request(info, { ...plain, headers: { origin: ORIGIN } });
    expect(allowed.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    expect(gw.gateway.lane.served).toBe(1);

    // The `addr.name` form of the path is held under the URL as sent.
    const dotted = `${gw.url}/contract-calls/read-only/${MAINNET_ADDR}.demo/get-info`;
    await request(dotted, plain);
    expect((await request(dotted, plain)).body).toEqual(allowed.body);
    expect(gw.gateway.lane.served).toBe(2);

    // The same JSON with other bytes, and other options, go through the full path.
    const spaced = await request(info, { rawBody: '{ "functionArgs": [] }' });
    expect(spaced.status).toBe(200);
    const numbers = await request(info, { rawBody: '{"functionArgs":[],"strictJsonCompat":false}' });
    expect(numbers.body.data).not.toEqual(spaced.body.data);
    expect(gw.gateway.lane.served).toBe(2);
    // A refused Content-Type on a path the lane holds answers is still refused.
    const form = await request(info, {
      rawBody: '{"functionArgs":[]}',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(form.status).toBe(415);
    // A malformed body on that path reaches the full path's parser (the lane read it first).
    const broken = await request(info, { rawBody: '{"functionArgs":[' });
    expect(broken.status).toBe(400);
    expect(broken.body.success).toBe(false);
    expect(gw.gateway.lane.served).toBe(2);
  });

  it('holds many bodies of one path apart, each replayed with its own answer', async () => {
    const gw = await start();
    const url = balanceUrl(gw.url);
    // More bodies than a path keeps in a plain list: the lane then finds them by their bytes.
    const owners = Array.from({ length: 20 }, (_, i) => `${MAINNET_ADDR}.holder-${i}`);
    const asked = (owner: string) => ({ body: { functionArgs: [{ type: 'principal', value: owner }] } });
    const full: unknown[] = [];
    for (const owner of owners) {
      await request(url, asked(owner)); // miss
      full.push((await request(url, asked(owner))).body.data); // full-path hit, now held
    }
    expect(new Set(full).size).toBe(owners.length);
    expect(gw.gateway.lane.served).toBe(0);
    for (const [i, owner] of owners.entries()) {
      const again = await request(url, asked(owner));
      expect(again.body.data).toBe(full[i]);
    }
    expect(gw.gateway.lane.served).toBe(owners.length);
    expect(gw.gateway.lane.size).toBe(owners.length);
    // A bust replaces one of them: the lane answers the new value, the others are untouched.
    const bust = await request(url, {
      body: { ...asked(owners[3]!).body, cacheControl: { bustCache: true } },
    });
    expect(bust.body.data).not.toBe(full[3]);
    await request(url, asked(owners[3]!)); // full-path hit of the new entry, now held
    expect((await request(url, asked(owners[3]!))).body.data).toBe(bust.body.data);
    expect((await request(url, asked(owners[4]!))).body.data).toBe(full[4]);
    expect(gw.gateway.lane.size).toBe(owners.length);
  });

  it('never replays requests with fields it cannot judge, nor chunked bodies', async () => {
    const gw = await start();
    const info = infoUrl(gw.url);
    const withTip = { rawBody: '{"functionArgs":[],"tip":"latest"}' };
    for (let i = 0; i < 3; i++) expect((await request(info, withTip)).status).toBe(200);
    expect(gw.gateway.lane.served).toBe(0);

    // The entry is cached now: a plain request is a full-path hit, and held.
    const plain = '{"functionArgs":[]}';
    await request(info, { rawBody: plain });
    // The same bytes, chunked: the full path answers.
    const chunked = await rawPost(
      gw.url,
      '/contract-calls/read-only/' + `${MAINNET_ADDR}/demo/get-info`,
      plain,
    );
    expect(chunked).toMatch(/^HTTP\/1\.1 200/);
    expect(gw.gateway.lane.served).toBe(0);
    await request(info, { rawBody: plain });
    expect(gw.gateway.lane.served).toBe(1);
  });

  it('reads bodies that arrive in pieces, and survives a client that leaves mid-body', async () => {
    const gw = await start();
    const path = `/contract-calls/read-only/${MAINNET_ADDR}/demo/get-info`;
    const plain = '{"functionArgs":[]}';
    await request(infoUrl(gw.url), { rawBody: plain });
    const full = await request(infoUrl(gw.url), { rawBody: plain });
    const head = `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${plain.length}\r\nConnection: close\r\n\r\n`;
    const split = await rawSend(gw.url, [head + plain.slice(0, 7), plain.slice(7)]);
    expect(gw.gateway.lane.served).toBe(1);
    expect(split).toMatch(/^HTTP\/1\.1 200/);
    const answer = Buffer.from(split.slice(split.indexOf('\r\n\r\n') + 4), 'latin1').toString('utf8');
    expect(JSON.parse(answer)).toEqual(full.body);
    // Half a body, then the client goes away: nothing is answered, nothing breaks.
    await rawSend(gw.url, [head + plain.slice(0, 7)], true);
    expect((await request(infoUrl(gw.url), { rawBody: plain })).status).toBe(200);
    expect(gw.gateway.lane.served).toBe(2);
  });

  it('stops serving an entry as soon as it expires', async () => {
    let clock = Date.now();
    // No stale retention: the entry leaves the store (on its clock) when its ttl ends.
    const gw = await start(
      { CACHE_STALE_MAX_S: '0' },
      { store: new MemoryStore({ maxEntries: 100, now: () => clock }) },
    );
    const req = { body: { ...body, cacheControl: { ttl: 10 } } };
    const first = await request(balanceUrl(gw.url), req);
    await request(balanceUrl(gw.url), req);
    expect((await request(balanceUrl(gw.url), req)).body).toEqual(first.body);
    expect(gw.gateway.lane.served).toBe(1);
    const upstream = node.count('call-read');

    clock += 10_001;
    const after = await request(balanceUrl(gw.url), req);
    expect(after.headers.get('cache-status')).toBe('clarity-cache; fwd=miss; stored; ttl=10');
    expect(after.body.data).not.toEqual(first.body.data);
    expect(node.count('call-read')).toBe(upstream + 1);
    expect(gw.gateway.lane.served).toBe(1);
  });

  it('stops serving an entry as soon as it goes stale by blocks (CACHE_MAX_BLOCKS)', async () => {
    node.setTipHeight(100);
    try {
      const gw = await start({ CACHE_MAX_BLOCKS: '2' });
      const url = balanceUrl(gw.url);
      const first = await request(url, { body });
      const full = await request(url, { body });
      const lane = await request(url, { body });
      expect(gw.gateway.lane.served).toBe(1);
      expect(lane.headers.get('x-canonical-stacks-tip-height')).toBe('100');
      expect(stableHeaders(lane.headers)).toEqual(stableHeaders(full.headers));

      // Still within 2 blocks at 102: replayed.
      node.setTipHeight(102);
      // The gateway learns the tip from the node's answer to a call it has not cached yet.
      const learn = (n: number) =>
        request(url, { body: { functionArgs: [{ type: 'principal', value: `${MAINNET_ADDR}.t${n}` }] } });
      await learn(1);
      expect((await request(url, { body })).body).toEqual(first.body);
      expect(gw.gateway.lane.served).toBe(2);

      // A request's own block bound is judged per answer too: 1 block is already exceeded.
      const strict = { body: { ...body, cacheControl: { maxBlocks: 1 } } };
      expect((await request(url, strict)).headers.get('cache-status')).not.toMatch(/; hit/);
      const loose = { body: { ...body, cacheControl: { maxBlocks: 5 } } };
      await request(url, loose); // a full-path hit on the entry just written, now held
      const held = gw.gateway.lane.served;
      expect((await request(url, loose)).headers.get('cache-status')).toBe('clarity-cache; hit');
      expect(gw.gateway.lane.served).toBe(held + 1);

      // 108: past both bounds (the entry now holds height 102).
      node.setTipHeight(108);
      await learn(2);
      const upstream = node.count('call-read');
      const after = await request(url, { body });
      expect(after.headers.get('cache-status')).not.toMatch(/; hit/);
      expect(after.body.data).not.toEqual(first.body.data);
      expect(node.count('call-read')).toBe(upstream + 1);
      const looseAfter = await request(url, loose);
      expect(looseAfter.body.data).toEqual(after.body.data);
      expect(gw.gateway.lane.served).toBe(held + 1);
    } finally {
      node.setTipHeight(100);
    }
  });

  it('a bustCache and an admin invalidation take effect on the very next request', async () => {
    const gw = await start();
    const url = balanceUrl(gw.url);
    const first = await request(url, { body });
    await request(url, { body });
    await request(url, { body });
    expect(gw.gateway.lane.served).toBe(1);

    const busted = await request(url, { body: { ...body, cacheControl: { bustCache: true } } });
    expect(busted.body.data).not.toEqual(first.body.data);
    const next = await request(url, { body });
    expect(next.body.data).toEqual(busted.body.data);
    expect(next.headers.get('cache-status')).toBe('clarity-cache; hit');
    expect(gw.gateway.lane.served).toBe(1);
    expect((await request(url, { body })).body.data).toEqual(busted.body.data);
    expect(gw.gateway.lane.served).toBe(2);

    const removed = await request(`${gw.url}/admin/cache/invalidate`, {
      body: { contractAddress: MAINNET_ADDR, contractName: 'demo', functionName: 'get-balance', ...body },
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(removed.body.data.deleted).toBe(1);
    const upstream = node.count('call-read');
    const fresh = await request(url, { body });
    expect(fresh.headers.get('cache-status')).toBe('clarity-cache; fwd=miss; stored');
    expect(fresh.body.data).not.toEqual(busted.body.data);
    expect(node.count('call-read')).toBe(upstream + 1);
    expect(gw.gateway.lane.served).toBe(2);
  });

  it('a bustCache whose store write fails replaces the replayed answer at once', async () => {
    const tmp = tmpDir('fast-lane');
    try {
      const cold = SqliteStore.open(tmp.dir, 'clarity-cache.db', { sweepIntervalMs: 0, maxBytes: 96 * 1024 });
      const gw = await start({}, { store: new TieredStore({ maxEntries: 100 }, cold) });
      const url = balanceUrl(gw.url);
      const first = await request(url, { body });
      await request(url, { body });
      await request(url, { body });
      expect(gw.gateway.lane.served).toBe(1);

      let full = false;
      for (let i = 0; i < 100 && !full; i++) {
        await cold.set(`filler:${i}`, 'x'.repeat(8 * 1024)).catch(() => {
          full = true;
        });
      }
      expect(full).toBe(true);
      // A write of any size now fails: make the new value need new pages too.
      node.setReadOnly(MAINNET_ADDR, 'demo', 'get-balance', () => ({
        okay: true,
        result: hex(Cl.ok(Cl.stringAscii(`${++calls}:`.padEnd(20_000, 'x')))),
      }));
      const busted = await request(url, { body: { ...body, cacheControl: { bustCache: true } } });
      expect(busted.headers.get('cache-status')).toBe('clarity-cache; fwd=request');
      expect(busted.body.data).not.toEqual(first.body.data);
      const next = await request(url, { body });
      expect(next.body.data).toEqual(busted.body.data);
      expect(gw.gateway.lane.served).toBe(1);
    } finally {
      node.setReadOnly(MAINNET_ADDR, 'demo', 'get-balance', () => ({
        okay: true,
        result: hex(Cl.ok(Cl.uint(++calls))),
      }));
      for (const r of running.splice(0).reverse()) await r.close();
      tmp.remove();
    }
  });
});

describe('node-compatible call-read', () => {
  it('replays a hit with the full path headers', async () => {
    const gw = await start();
    const url = `${gw.url}/v2/contracts/call-read/${MAINNET_ADDR}/demo/get-balance`;
    const req = {
      body: { sender: MAINNET_ADDR, arguments: [hex(Cl.principal(MAINNET_ADDR))] },
      headers: { origin: ORIGIN },
    };
    const miss = await request(url, req);
    expect(miss.body.okay).toBe(true);
    const full = await request(url, req);
    expect(full.headers.get('cache-status')).toBe('clarity-cache; hit');
    expect(gw.gateway.lane.served).toBe(0);
    const lane = await request(url, req);
    expect(gw.gateway.lane.served).toBe(1);
    expect(lane.body).toEqual(full.body);
    expect(stableHeaders(lane.headers)).toEqual(stableHeaders(full.headers));
  });
});

describe('decode', () => {
  it('replays the full path answer byte for byte', async () => {
    const gw = await start();
    const url = `${gw.url}/contract-calls/decode-clarity-value`;
    const req = { body: { clarityValue: hex(INFO_VALUE) }, headers: { origin: ORIGIN } };
    const full = await request(url, req);
    expect(full.status).toBe(200);
    expect(gw.gateway.lane.served).toBe(0);
    const lane = await request(url, req);
    expect(gw.gateway.lane.served).toBe(1);
    expect(lane.body).toEqual(full.body);
    expect(stableHeaders(lane.headers)).toEqual(stableHeaders(full.headers));
    // Another value on the same URL: decoded by the full path, then replayed too.
    const other = { body: { clarityValue: hex(Cl.uint(5)) } };
    expect((await request(url, other)).body.data.decoded).toBe(5);
    expect((await request(url, other)).body.data.decoded).toBe(5);
    expect(gw.gateway.lane.served).toBe(2);
    // An error is never held.
    const bad = { body: { clarityValue: '0xff' } };
    expect((await request(url, bad)).status).toBe(400);
    expect((await request(url, bad)).status).toBe(400);
    expect(gw.gateway.lane.served).toBe(2);
  });
});

const redis = await startRedis();

describe.skipIf(redis === undefined)('two instances sharing Redis', () => {
  it("another instance's bustCache and admin invalidation take effect at once", async () => {
    const env = { CACHE_STORE: 'redis', REDIS_URL: redis?.url ?? '' };
    const a = await start(env);
    const b = await start(env);
    const url = balanceUrl(a.url);
    const first = await request(url, { body });
    await request(url, { body });
    await request(url, { body });
    expect(a.gateway.lane.served).toBe(1);
    const store = a.gateway.store;
    const [key] = store.listHot?.('') ?? [];
    expect(key).toBeDefined();
    const held = store.peekHot?.(key as string);
    expect(held).toBeDefined();

    // B busts: A's hot copy is evicted when B's announcement arrives (pub/sub).
    const busted = await request(balanceUrl(b.url), { body: { ...body, cacheControl: { bustCache: true } } });
    expect(busted.body.data).not.toEqual(first.body.data);
    await until(() => store.peekHot?.(key as string) !== held);
    const next = await request(url, { body });
    expect(next.body.data).toEqual(busted.body.data);
    expect(a.gateway.lane.served).toBe(1);
    expect((await request(url, { body })).body.data).toEqual(busted.body.data);
    expect(a.gateway.lane.served).toBe(2);

    // An admin invalidation on B: A stops replaying as soon as it hears of it.
    const heldNow = store.peekHot?.(key as string);
    const removed = await request(`${b.url}/admin/cache/invalidate`, {
      body: { contractAddress: MAINNET_ADDR, contractName: 'demo', functionName: 'get-balance', ...body },
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(removed.body.data.deleted).toBe(1);
    await until(() => store.peekHot?.(key as string) !== heldNow);
    const fresh = await request(url, { body });
    expect(fresh.headers.get('cache-status')).toBe('clarity-cache; fwd=miss; stored');
    expect(a.gateway.lane.served).toBe(2);
  });
});

afterAll(async () => {
  await redis?.stop();
});

/** Resolves once cond() holds, checking after each turn of the event loop (bounded). */
async function until(cond: () => boolean, timeoutMs = 10_000): Promise<void> {
  const end = performance.now() + timeoutMs;
  while (!cond()) {
    if (performance.now() > end) throw new Error('condition not reached');
    await new Promise((r) => setImmediate(r));
  }
}

/**
 * Writes each part on its own (the next after the previous one was flushed), then reads the
 * whole answer; `hangUp` closes the socket after the last part instead.
 */
function rawSend(base: string, parts: string[], hangUp = false): Promise<string> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (d) => {
      text += d;
    });
    socket.on('close', () => resolve(text));
    socket.on('error', reject);
    const next = (i: number): void => {
      if (i === parts.length) {
        if (hangUp) socket.destroy();
        return;
      }
      socket.write(parts[i] as string, () => setImmediate(() => next(i + 1)));
    };
    next(0);
  });
}

/** A POST with a chunked body over a raw socket; resolves with the whole answer text. */
function rawPost(base: string, path: string, payload: string): Promise<string> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (d) => {
      text += d;
    });
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
    const size = Buffer.byteLength(payload).toString(16);
    socket.write(
      `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${size}\r\n${payload}\r\n0\r\n\r\n`,
    );
  });
}
