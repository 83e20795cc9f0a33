/**
 * The read-only entry point as the single endpoint serves it (ReadOnlyService.answer behind a
 * thin route): a repeated request gets the same text from the cache, and a failure raised after
 * the cache lookup still says where the answer came from.
 */
import { Cl } from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { hex, MAINNET_ADDR, SAMPLE_ABI } from '../../support/fixtures.js';
import { type RunningGateway, request, startGateway, testEnv } from '../../support/gateway.js';

let node: FakeNode;
let gw: RunningGateway;

const ro = (fn: string) => `${gw.url}/contract-calls/read-only/${MAINNET_ADDR}/demo/${fn}`;

beforeAll(async () => {
  node = await startFakeNode();
  node.setAbi(MAINNET_ADDR, 'demo', SAMPLE_ABI);
  node.setReadOnly(MAINNET_ADDR, 'demo', 'get-info', { okay: true, result: hex(Cl.bool(true)) });
  node.setReadOnly(MAINNET_ADDR, 'demo', 'fails', { okay: true, result: hex(Cl.error(Cl.uint(7))) });
  gw = await startGateway(testEnv(node.url));
});

afterAll(async () => {
  await gw?.close();
  await node?.close();
});

describe('read-only answers', () => {
  it('answers a repeat from the cache with the same envelope text and the JSON content type', async () => {
    const raw = JSON.stringify({ functionArgs: [] });
    const first = await fetch(ro('get-info'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: raw,
    });
    const second = await fetch(ro('get-info'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: raw,
    });
    expect(first.headers.get('cache-status')).toBe('clarity-cache; fwd=miss; stored');
    expect(second.headers.get('cache-status')).toBe('clarity-cache; hit');
    expect(second.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const [a, b] = [await first.text(), await second.text()];
    expect(a).toBe('{"success":true,"data":true}');
    expect(b).toBe(a);
  });

  it('keeps Cache-Status and Age on a CONTRACT_ERROR raised from a fresh and from a cached result', async () => {
    const miss = await request(ro('fails'), { body: { functionArgs: [] } });
    expect(miss.status).toBe(422);
    expect(miss.body.error.code).toBe('CONTRACT_ERROR');
    expect(miss.headers.get('cache-status')).toBe('clarity-cache; fwd=miss; stored');
    expect(miss.headers.get('age')).toBe('0');
    const hit = await request(ro('fails'), { body: { functionArgs: [] } });
    expect(hit.status).toBe(422);
    expect(hit.body.error.code).toBe('CONTRACT_ERROR');
    expect(hit.headers.get('cache-status')).toBe('clarity-cache; hit');
    expect(hit.headers.get('age')).not.toBeNull();
    // Each error answer has an id of its own, even when the rendering error is memoized.
    expect(hit.body.error.id).not.toBe(miss.body.error.id);
  });
});
