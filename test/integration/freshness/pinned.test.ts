/**
 * Pinned reads (docs/freshness.md): the `tip` body field, over real HTTP against the
 * fake node's chain.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { type RunningGateway, request, startGateway, testEnv } from '../../support/gateway.js';
import { heightUrl, installChainContract } from './helpers.js';

let node: FakeNode;
let gw: RunningGateway;

beforeAll(async () => {
  node = await startFakeNode({ tipHeight: 100 });
  installChainContract(node);
  // A block bound for everything: pinned reads must ignore it.
  gw = await startGateway(testEnv(node.url, { CACHE_MAX_BLOCKS: '0' }));
});

afterAll(async () => {
  await gw?.close();
  await node?.close();
});

beforeEach(() => node.resetStats());

describe('pinned reads', () => {
  it('forwards the tip as ?tip=<64 lowercase hex>, reads at that block and caches it by tip', async () => {
    const block = node.block(90);
    const asGiven = `0x${block.indexBlockHash.toUpperCase()}`;
    const first = await request(heightUrl(gw.url), { body: { functionArgs: [], tip: asGiven } });
    expect(first.status).toBe(200);
    expect(first.body.data).toBe('90');
    expect(first.headers.get('cache-status')).toBe('clarity-cache; fwd=miss; stored');
    expect(node.lastRequest('call-read')!.query).toEqual({ tip: block.indexBlockHash });

    // Same block written differently: same entry. The chain moves on: still the same entry.
    node.mine(5);
    const again = await request(heightUrl(gw.url), {
      body: { functionArgs: [], tip: block.indexBlockHash, cacheControl: { maxBlocks: 0 } },
    });
    expect(again.headers.get('cache-status')).toMatch(/^clarity-cache; hit/);
    expect(again.body.data).toBe('90');
    expect(node.count('call-read')).toBe(1);

    // Another block is another entry; the latest state is another again.
    const other = await request(heightUrl(gw.url), {
      body: { functionArgs: [], tip: node.block(91).indexBlockHash },
    });
    expect(other.body.data).toBe('91');
    const latest = await request(heightUrl(gw.url), { body: { functionArgs: [], tip: 'latest' } });
    expect(latest.body.data).toBe(String(node.tipHeight));
    expect(node.lastRequest('call-read')!.query).toEqual({});
    expect(node.count('call-read')).toBe(3);
  });

  it.each([
    ['too short', 'abc'],
    ['65 digits', 'a'.repeat(65)],
    ['not hex', 'g'.repeat(64)],
    ['0x alone', '0x'],
    ['empty', ''],
    ['LATEST in capitals', 'LATEST'],
    ['a number', 5],
    ['null', null],
  ])(
    'refuses a malformed tip (%s) with VALIDATION_ERROR naming tip, and no upstream request',
    async (_, tip) => {
      const res = await request(heightUrl(gw.url), { body: { functionArgs: [], tip } });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      expect(res.body.error.message).toMatch(/tip/);
      expect(node.total).toBe(0);
    },
  );

  it('maps an unknown tip to UPSTREAM_API_ERROR 404 with details.tip, and never caches it', async () => {
    const unknown = 'ab'.repeat(32);
    for (let i = 0; i < 2; i++) {
      const res = await request(heightUrl(gw.url), { body: { functionArgs: [], tip: `0x${unknown}` } });
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('UPSTREAM_API_ERROR');
      expect(res.body.error.details.tip).toBe(unknown);
    }
    expect(node.count('call-read')).toBe(2);
  });

  it('keeps an explicit ttl on a pinned entry', async () => {
    const tip = node.block(50).indexBlockHash;
    const res = await request(heightUrl(gw.url), {
      body: { functionArgs: [], tip, cacheControl: { ttl: 60 } },
    });
    expect(res.headers.get('cache-status')).toBe('clarity-cache; fwd=miss; stored; ttl=60');
  });
});

describe('OpenAPI', () => {
  it('documents tip, the block bound and the stale windows of the read-only request', async () => {
    const spec = (await request(`${gw.url}/openapi.json`)).body;
    const op = spec.paths['/contract-calls/read-only/{contractAddress}/{contractName}/{functionName}'].post;
    const body = op.requestBody.content['application/json'].schema;
    expect(body.properties.tip.type).toBe('string');
    const cc = body.properties.cacheControl.properties;
    for (const field of ['maxBlocks', 'staleWhileRevalidate', 'staleIfError']) {
      expect(cc[field]).toMatchObject({ type: 'integer', minimum: 0 });
    }
    expect(op.description).toContain('X-Canonical-Stacks-Tip-Height');
    expect(op.description).toContain('stale-if-error');
  });
});
