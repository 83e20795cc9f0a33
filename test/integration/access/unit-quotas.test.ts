/**
 * Quotas in units and the rate-limit headers (docs/usage.md), over real HTTP: a key's
 * `unitsPerMinute` and `unitsPerMonth` beside its `requestsPerMinute`, anonymous clients'
 * `ANONYMOUS_REQUESTS_PER_MINUTE`, on the full path and on fast-lane replays alike; the
 * remaining figure falls by each answer's cost and never disagrees with the next 429.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Cl } from '@stacks/transactions';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { GET_N_ABI, hex, TESTNET_ADDR } from '../../support/fixtures.js';
import {
  type JsonResponse,
  type RunningGateway,
  request,
  startGateway,
  testEnv,
} from '../../support/gateway.js';

const KEY = 'alice-key-123456789012345678';
const dir = mkdtempSync(path.join(os.tmpdir(), 'unit-quotas-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const running: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const r of running.splice(0).reverse()) await r.close();
});

async function setup(
  keys: unknown[],
  env: Record<string, string> = {},
): Promise<{ gw: RunningGateway; node: FakeNode }> {
  const node = await startFakeNode({ tipHeight: 100 });
  node.setAbi(TESTNET_ADDR, 'demo', GET_N_ABI);
  node.setReadOnly(TESTNET_ADDR, 'demo', 'get-n', ({ arguments: args }) => ({
    okay: true,
    result: args[0]!,
  }));
  running.push(node);
  const file = path.join(dir, `keys-${running.length}.json`);
  writeFileSync(file, JSON.stringify(keys));
  const gw = await startGateway(testEnv(node.url, { API_KEYS_FILE: file, ...env }));
  running.push(gw);
  return { gw, node };
}

function read(gw: RunningGateway, n: number, key?: string): Promise<JsonResponse> {
  return request(`${gw.url}/contract-calls/read-only/${TESTNET_ADDR}/demo/get-n`, {
    body: { functionArgs: [hex(Cl.uint(n))] },
    headers: key === undefined ? {} : { 'x-api-key': key },
  });
}

/** The RateLimit header's items by policy name: {r, t}. */
function remaining(res: JsonResponse): Record<string, { r: number; t: number }> {
  const out: Record<string, { r: number; t: number }> = {};
  for (const item of (res.headers.get('ratelimit') ?? '').split(/,\s*/)) {
    const m = /^"([^"]+)";r=(\d+);t=(\d+)$/.exec(item);
    if (m !== null) out[m[1]!] = { r: Number(m[2]), t: Number(m[3]) };
  }
  return out;
}

describe('a key with unitsPerMinute', () => {
  it('falls by each answer’s cost, on misses and replayed hits, and is refused exactly when it says 0', async () => {
    const { gw } = await setup([{ name: 'alice', key: KEY, requestsPerMinute: 100, unitsPerMinute: 25 }]);
    const miss = await read(gw, 1, KEY);
    expect(miss.headers.get('clarity-cache-cost')).toBe('10');
    expect(miss.headers.get('ratelimit-policy')).toBe('"requests";q=100;w=60, "units";q=25;w=60');
    expect(remaining(miss)).toMatchObject({ requests: { r: 99 }, units: { r: 15 } });
    const lanesBefore = gw.gateway.lane.served;
    let last = remaining(miss).units!.r;
    // Hits cost 1 each: about 15 of them (some replayed by the fast lane) leave 0.
    for (let i = 0; i < 40 && last > 0; i++) {
      const hit = await read(gw, 1, KEY);
      expect(hit.status).toBe(200);
      expect(hit.headers.get('clarity-cache-cost')).toBe('1');
      const now = remaining(hit).units!.r;
      // Refills (25 a minute) may add a unit between two answers, never take one more than the cost.
      expect(now).toBeGreaterThanOrEqual(last - 1);
      expect(now).toBeLessThanOrEqual(last);
      last = now;
    }
    expect(last).toBe(0);
    expect(gw.gateway.lane.served).toBeGreaterThan(lanesBefore);
    const refused = await read(gw, 1, KEY);
    expect(refused.status).toBe(429);
    expect(refused.body.error.details.policy).toBe('units');
    expect(refused.headers.get('clarity-cache-cost')).toBe('0');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(remaining(refused).units!.r).toBe(0);
  });

  it('does not spend a request token on a request its units refuse', async () => {
    const { gw } = await setup([{ name: 'alice', key: KEY, requestsPerMinute: 100, unitsPerMinute: 10 }]);
    const miss = await read(gw, 1, KEY);
    expect(remaining(miss)).toMatchObject({ requests: { r: 99 }, units: { r: 0 } });
    const a = await read(gw, 1, KEY);
    const b = await read(gw, 1, KEY);
    expect([a.status, b.status]).toEqual([429, 429]);
    // Both still see 99 requests left (a refill may add one): nothing was taken.
    expect(remaining(b).requests!.r).toBeGreaterThanOrEqual(99);
  });
});

describe('a key with unitsPerMonth', () => {
  it('counts the units recorded this month and refuses with policy units-month once they are spent', async () => {
    const { gw } = await setup([{ name: 'alice', key: KEY, unitsPerMonth: 21 }]);
    const first = await read(gw, 1, KEY);
    expect(remaining(first)['units-month']!.r).toBe(11);
    const second = await read(gw, 2, KEY);
    expect(remaining(second)['units-month']!.r).toBe(1);
    const third = await read(gw, 2, KEY);
    expect(third.status).toBe(200);
    expect(remaining(third)['units-month']!.r).toBe(0);
    const refused = await read(gw, 2, KEY);
    expect(refused.status).toBe(429);
    expect(refused.body.error.details.policy).toBe('units-month');
    // Until the next UTC month: more than the client's 60 s, so it will not retry.
    const now = new Date();
    const untilMonth = (Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1) - now.getTime()) / 1000;
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(untilMonth - 60);
  });
});

describe('anonymous clients', () => {
  it('see the anonymous policy, and its 429 at r=0', async () => {
    const { gw } = await setup([{ name: 'alice', key: KEY }], { ANONYMOUS_REQUESTS_PER_MINUTE: '3' });
    const seen: number[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await read(gw, 1);
      expect(res.status).toBe(200);
      expect(res.headers.get('ratelimit-policy')).toBe('"anonymous";q=3;w=60');
      seen.push(remaining(res).anonymous!.r);
    }
    expect(seen).toEqual([2, 1, 0]);
    const refused = await read(gw, 1);
    expect(refused.status).toBe(429);
    expect(refused.body.error.details.policy).toBe('anonymous');
    expect(remaining(refused).anonymous!.r).toBe(0);
    // A key without quotas: no rate-limit headers at all.
    const keyed = await read(gw, 1, KEY);
    expect(keyed.headers.get('ratelimit')).toBeNull();
    expect(keyed.headers.get('ratelimit-policy')).toBeNull();
  });
});

describe('an event stream', () => {
  it('opens with the quotas’ headers of its key, at no cost', async () => {
    const { gw } = await setup([{ name: 'alice', key: KEY, requestsPerMinute: 50, unitsPerMinute: 100 }]);
    const created = await request(`${gw.url}/subscriptions`, {
      body: {
        reads: [
          {
            contractAddress: TESTNET_ADDR,
            contractName: 'demo',
            functionName: 'get-n',
            functionArgs: [hex(Cl.uint(1))],
          },
        ],
      },
      headers: { 'x-api-key': KEY },
    });
    expect(created.status).toBe(201);
    const abort = new AbortController();
    const stream = await fetch(`${gw.url}${created.body.data.events}`, {
      headers: { 'x-api-key': KEY },
      signal: abort.signal,
    });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('clarity-cache-cost')).toBe('0');
    expect(stream.headers.get('ratelimit-policy')).toBe('"requests";q=50;w=60, "units";q=100;w=60');
    // Two requests taken (the subscription and the stream); units: the creation's cost only.
    const units = Number(/"units";r=(\d+)/.exec(stream.headers.get('ratelimit') ?? '')?.[1]);
    expect(units).toBe(100 - Number(created.headers.get('clarity-cache-cost')));
    expect(stream.headers.get('ratelimit')).toMatch(/^"requests";r=48;t=\d+, "units";r=\d+;t=\d+$/);
    abort.abort();
  });
});
