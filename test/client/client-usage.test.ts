import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ClarityCacheClient,
  createClient,
  UnauthorizedError,
  USAGE_DIMENSIONS,
  type UsageDimension,
  type UsageFigures,
  ValidationError,
} from '../../client/src/index.js';
import type {
  UsageDimension as ServerDimension,
  UsageFigures as ServerFigures,
} from '../../src/service/usage/usage.js';
import type { FakeNode } from '../support/fake-node.js';
import { MAINNET_ADDR } from '../support/fixtures.js';
import { type RunningGateway, startGateway, testEnv } from '../support/gateway.js';
import { keyedDemo } from '../support/keyed-demo.js';

const ALICE = 'k-alice-client-0123456789abcdef';
const BOB = 'k-bob-client-0123456789abcdef';
const DEMO = `${MAINNET_ADDR}.demo`;

// The client's usage types are written out, not imported: held to the server's here (tsc).
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const sameDimensions: Same<UsageDimension, ServerDimension> = true;
const sameFigures: Same<UsageFigures, ServerFigures> = true;
void [sameDimensions, sameFigures];

let node: FakeNode;
let gw: RunningGateway;
let alice: ClarityCacheClient;

beforeAll(async () => {
  let keysFile: string;
  ({ node, keysFile } = await keyedDemo('client-usage', { alice: ALICE, bob: BOB }));
  // Costs other than the defaults: the header's number is the gateway's, not the client's idea.
  gw = await startGateway(
    testEnv(node.url, { API_KEYS_FILE: keysFile, COST_HIT: '2', COST_MISS: '7', COST_DECODE: '3' }),
  );
  alice = createClient({ baseUrl: gw.url, headers: { 'x-api-key': ALICE } });
});

afterAll(async () => {
  await gw?.close();
  await node?.close();
});

describe('meta.cost: what each answer cost', () => {
  it('says Clarity-Cache-Cost as a number: a miss, then a hit, a decode, an error, a batch', async () => {
    const miss = await alice.raw.readOnly(DEMO, 'get-info');
    expect(miss.meta.cacheStatus).toMatch(/fwd=miss/);
    expect(miss.meta.cost).toBe(7);
    const hit = await alice.raw.readOnly(DEMO, 'get-info');
    expect(hit.meta.cacheStatus).toMatch(/hit/);
    expect(hit.meta.cost).toBe(2);
    expect(hit.headers.get('clarity-cache-cost')).toBe('2');
    const decoded = await alice.raw.decode('0x0d0000000568656c6c6f');
    expect(decoded.meta.cost).toBe(3);
    const failed = await alice.raw.readOnly(DEMO, 'fails');
    expect(failed.status).toBe(422);
    expect(failed.meta.cost).toBe(0);
    // A batch: the sum of its items (two hits, a failed item 0).
    const batch = await alice.raw.batch([
      { contractAddress: DEMO, functionName: 'get-info' },
      { contractAddress: DEMO, functionName: 'get-info' },
      { contractAddress: DEMO, functionName: 'fails' },
    ]);
    expect(batch.meta.cost).toBe(4);
  });

  it('is undefined on an answer without the header (a route that is not metered)', async () => {
    const own = await alice.raw.usage();
    expect(own.headers.get('clarity-cache-cost')).toBeNull();
    expect(own.meta.cost).toBeUndefined();
  });
});

describe('usage(): the client key’s own rows (GET /usage)', () => {
  it('returns the typed data, grouped as asked, of this key only', async () => {
    const bob = createClient({ baseUrl: gw.url, headers: { 'x-api-key': BOB } });
    await bob.readOnly(DEMO, 'get-info');
    const own = await alice.usage({ groupBy: ['key', 'route', 'outcome'] });
    expect(own.groupBy).toEqual(['key', 'route', 'outcome']);
    const read = '/contract-calls/read-only/{contractAddress}/{contractName}/{functionName}';
    // The first test's answers: a miss, a hit and an error read, a decode, a batch of hits.
    expect(own.rows).toEqual([
      expect.objectContaining({ key: 'alice', route: '/contract-calls/batch', outcome: 'hit', units: 4 }),
      expect.objectContaining({
        key: 'alice',
        route: '/contract-calls/decode-clarity-value',
        outcome: 'hit',
        units: 3,
      }),
      expect.objectContaining({ key: 'alice', route: read, outcome: 'error', requests: 1, units: 0 }),
      expect.objectContaining({ key: 'alice', route: read, outcome: 'hit', requests: 1, units: 2 }),
      expect.objectContaining({ key: 'alice', route: read, outcome: 'miss', requests: 1, units: 7 }),
    ]);
    expect(own.totals).toMatchObject({ requests: 5, units: 16 });
    const bobs = await bob.usage({ groupBy: ['key'] });
    expect(bobs.rows).toEqual([expect.objectContaining({ key: 'bob', requests: 1, units: 2 })]);
  });

  it('passes from and to; the gateway’s defaults without them', async () => {
    const all = await alice.usage();
    expect(all.groupBy).toEqual(['key', 'day']);
    const today = all.to;
    expect(all.rows).toEqual([expect.objectContaining({ key: 'alice', day: today })]);
    const day = await alice.usage({ from: today, to: today, groupBy: [] });
    expect(day).toMatchObject({ from: today, to: today, rows: [], totals: { requests: 5 } });
    const before = await alice.usage({ from: '2020-01-01', to: '2020-01-01', groupBy: ['outcome'] });
    expect(before.rows).toEqual([]);
    expect(before.totals.requests).toBe(0);
    await expect(alice.usage({ from: '2026-02-30' })).rejects.toBeInstanceOf(ValidationError);
    await expect(alice.usage({ to: '2026-13-01' })).rejects.toBeInstanceOf(ValidationError);
    expect(USAGE_DIMENSIONS).toEqual(['key', 'day', 'route', 'function', 'outcome']);
  });

  it('without a key: UnauthorizedError', async () => {
    const anonymous = createClient({ baseUrl: gw.url, retries: 0 });
    await expect(anonymous.usage()).rejects.toBeInstanceOf(UnauthorizedError);
    const raw = await anonymous.raw.usage();
    expect(raw.status).toBe(401);
  });
});
