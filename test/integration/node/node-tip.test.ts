/**
 * `?tip=` on the node routes over real HTTP: an empty tip is the current state, as a Stacks
 * node reads it, on every route that takes a tip (the same answer and cache entry as no tip at
 * all, and no tip forwarded); a malformed non-empty one is VALIDATION_ERROR and never forwarded.
 * The routes come from the endpoint table, so a route added there is covered here.
 */
import { Cl } from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NODE_ENDPOINTS, type NodeEndpoint } from '../../../src/upstream/endpoints.js';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { hex, SAMPLE_ABI, TESTNET_ADDR } from '../../support/fixtures.js';
import { type RunningGateway, startGateway, testEnv } from '../../support/gateway.js';

let node: FakeNode;
let gw: RunningGateway;

/** A value for each kind of path parameter, all naming the sample contract on testnet. */
const PARAM_VALUES: Record<string, string> = {
  address: TESTNET_ADDR,
  contract: 'demo',
  name: 'owner',
  function: 'get-info',
  principal: TESTNET_ADDR,
  traitAddress: TESTNET_ADDR,
  traitContract: 'traits',
  trait: 'demo-trait',
};

const TIPPED = NODE_ENDPOINTS.filter((e) => e.query.includes('tip'));

function pathOf(endpoint: NodeEndpoint): string {
  return endpoint.path.replace(/:([A-Za-z]+)/g, (_, name: string) => PARAM_VALUES[name] ?? name);
}

function bodyOf(endpoint: NodeEndpoint): string | undefined {
  if (endpoint.body === 'none') return undefined;
  if (endpoint.name === 'map-entry') return JSON.stringify(hex(Cl.principal(TESTNET_ADDR)));
  return JSON.stringify({ sender: TESTNET_ADDR, arguments: [] });
}

async function call(
  endpoint: NodeEndpoint,
  query: string,
): Promise<{ status: number; text: string; cache: string | null }> {
  const body = bodyOf(endpoint);
  const res = await fetch(`${gw.url}${pathOf(endpoint)}${query}`, {
    method: endpoint.method,
    ...(body === undefined ? {} : { body, headers: { 'content-type': 'application/json' } }),
  });
  return { status: res.status, text: await res.text(), cache: res.headers.get('cache-status') };
}

/** Upstream requests for this route's path so far. */
function forwarded(endpoint: NodeEndpoint) {
  return node.requests.filter((r) => r.path === pathOf(endpoint));
}

beforeAll(async () => {
  node = await startFakeNode();
  node.setAbi(TESTNET_ADDR, 'demo', SAMPLE_ABI);
  // Each answer numbers itself: a second answer with the first one's number came from the cache.
  let served = 0;
  node.setReadOnly(TESTNET_ADDR, 'demo', 'get-info', () => ({ okay: true, result: hex(Cl.uint(++served)) }));
  for (const endpoint of TIPPED) {
    if (endpoint.service !== undefined) continue;
    node.setRoute(endpoint.method, pathOf(endpoint), () => ({
      status: 200,
      body: JSON.stringify({ route: endpoint.name, answer: ++served }),
      headers: { 'content-type': 'application/json' },
    }));
  }
  gw = await startGateway(testEnv(node.url, { CHAIN_TIP_MAX_AGE_MS: '60000' }));
});

afterAll(async () => {
  await gw?.close();
  await node?.close();
});

describe('?tip= on every node route that takes a tip', () => {
  it('covers the routes of the table that take a tip', () => {
    expect(TIPPED.map((e) => e.name)).toEqual(
      expect.arrayContaining(['source', 'data-var', 'map-entry', 'call-read', 'fast-call-read', 'account']),
    );
  });

  it.each(TIPPED.map((e) => [e.name, e] as const))(
    '%s: an empty tip is the current state, the same entry as no tip, and forwards none',
    async (_name, endpoint) => {
      const empty = await call(endpoint, '?tip=');
      expect(empty.status, empty.text).toBe(200);
      expect(empty.cache).toMatch(/fwd=miss; stored/);
      const sent = forwarded(endpoint);
      expect(sent).toHaveLength(1);
      expect(sent[0]?.query).not.toHaveProperty('tip');

      const none = await call(endpoint, '');
      expect(none.status).toBe(200);
      expect(none.text).toBe(empty.text);
      expect(none.cache).toMatch(/^clarity-cache; hit/);
      // And the other way round: the entry read without a tip answers an empty one.
      const again = await call(endpoint, '?tip=');
      expect(again.text).toBe(empty.text);
      expect(again.cache).toMatch(/^clarity-cache; hit/);
      expect(forwarded(endpoint)).toHaveLength(1);
    },
  );

  it.each(TIPPED.map((e) => [e.name, e] as const))(
    '%s: a malformed non-empty tip is VALIDATION_ERROR and is not forwarded',
    async (_name, endpoint) => {
      const before = forwarded(endpoint).length;
      for (const tip of ['not-a-block', 'ab'.repeat(31), ' ']) {
        const res = await call(endpoint, `?tip=${encodeURIComponent(tip)}`);
        expect(res.status, `${endpoint.name} ?tip=${tip}`).toBe(400);
        const body = JSON.parse(res.text);
        expect(body.success).toBe(false);
        expect(body.error.code).toBe('VALIDATION_ERROR');
      }
      expect(forwarded(endpoint)).toHaveLength(before);
    },
  );
});
