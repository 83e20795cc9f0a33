/**
 * Serving stale (docs/freshness.md, RFC 5861) over real HTTP against the fake node:
 * stale-while-revalidate answers at once with one background refresh for any number of
 * answers; stale-if-error answers after the first failed attempt; a definite answer of the
 * node is never replaced by a stale one.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { MAINNET_ADDR } from '../../support/fixtures.js';
import { type RunningGateway, request, startGateway, testEnv } from '../../support/gateway.js';
import { metricValue, parseMetrics } from '../../support/prom.js';
import { heightUrl, installChainContract } from './helpers.js';

let node: FakeNode;
let gw: RunningGateway;

const metric = async (name: string, labels: Record<string, string>) =>
  metricValue(parseMetrics(await (await fetch(`${gw.url}/metrics`)).text()), name, labels);

const read = (cacheControl?: Record<string, unknown>, fn = 'height') =>
  request(heightUrl(gw.url, fn), {
    body: {
      functionArgs: fn === 'balance' ? [{ type: 'principal', value: MAINNET_ADDR }] : [],
      ...(cacheControl === undefined ? {} : { cacheControl }),
    },
  });

/** Store `height` at tip 100, then move the chain one block and let the gateway learn it. */
async function staleEntry(): Promise<void> {
  expect((await read()).body.data).toBe('100');
  node.mine(1);
  await read({ bustCache: true, skipCache: true }, 'balance');
  node.resetStats();
}

beforeEach(async () => {
  node = await startFakeNode({ tipHeight: 100 });
  installChainContract(node);
  gw = await startGateway(testEnv(node.url, { UPSTREAM_RETRIES: '3' }));
});

afterEach(async () => {
  await gw.close();
  await node.close();
});

describe('stale-while-revalidate', () => {
  it('answers 20 concurrent requests with the stale entry at once and refreshes it exactly once', async () => {
    await staleEntry();
    node.gate({ kind: 'call-read' });
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => read({ maxBlocks: 0, staleWhileRevalidate: 60 })),
    );
    for (const res of answers) {
      expect(res.status).toBe(200);
      expect(res.body.data).toBe('100');
      expect(res.headers.get('cache-status')).toMatch(
        /^clarity-cache; hit; ttl=-?\d+; detail=stale-while-revalidate$/,
      );
      expect(res.headers.get('x-canonical-stacks-tip-height')).toBe('100');
    }
    // Every answer went out while the one refresh was held at the node.
    await node.waitForRequests(1, { kind: 'call-read' });
    expect(node.count('call-read')).toBe(1);
    node.release();
    await expect
      .poll(async () => (await read({ maxBlocks: 0, staleWhileRevalidate: 60 })).body.data)
      .toBe('101');
    expect(node.count('call-read')).toBe(1);
    expect(
      await metric('clarity_cache_stale_total', { endpoint: 'read-only', kind: 'stale-while-revalidate' }),
    ).toBeGreaterThanOrEqual(20);
    expect(
      await metric('clarity_cache_background_refreshes_total', { endpoint: 'read-only', result: 'ok' }),
    ).toBe(1);
    expect(await metric('clarity_cache_chain_tip_height', { network: 'mainnet' })).toBe(101);
  });

  it('keeps the entry when the background refresh fails', async () => {
    await staleEntry();
    node.status5xx(503, { kind: 'call-read' });
    const first = await read({ maxBlocks: 0, staleWhileRevalidate: 60 });
    expect(first.headers.get('cache-status')).toContain('detail=stale-while-revalidate');
    await node.waitForRequests(4, { kind: 'call-read' });
    await expect
      .poll(() =>
        metric('clarity_cache_background_refreshes_total', { endpoint: 'read-only', result: 'failed' }),
      )
      .toBe(1);
    node.clearFaults();
    const second = await read({ maxBlocks: 0, staleWhileRevalidate: 60 });
    expect(second.body.data).toBe('100');
    expect(second.headers.get('cache-status')).toContain('detail=stale-while-revalidate');
  });

  it('refetches a stale entry when no window is given (the default is off)', async () => {
    await staleEntry();
    const res = await read({ maxBlocks: 0 });
    expect(res.headers.get('cache-status')).toBe('clarity-cache; fwd=stale; stored');
    expect(res.body.data).toBe('101');
  });
});

describe('stale-if-error', () => {
  it('answers the stale entry after the first failed attempt, spending no retries', async () => {
    await staleEntry();
    node.status5xx(503, { kind: 'call-read' });
    const res = await read({ maxBlocks: 0, staleIfError: 60 });
    expect(res.status).toBe(200);
    expect(res.body.data).toBe('100');
    expect(res.headers.get('cache-status')).toMatch(
      /^clarity-cache; fwd=stale; ttl=-?\d+; detail=stale-if-error$/,
    );
    expect(node.count('call-read')).toBe(1);
    // Without the window the same failure is retried and answered as an error.
    const failed = await read({ maxBlocks: 0 });
    expect(failed.status).toBe(502);
    expect(node.count('call-read')).toBe(1 + 4);
  });

  it('answers the stale entry while the node is stopped', async () => {
    await staleEntry();
    await node.down();
    const res = await read({ maxBlocks: 0, staleIfError: 60 });
    expect(res.status).toBe(200);
    expect(res.body.data).toBe('100');
    expect(res.headers.get('cache-status')).toContain('detail=stale-if-error');
    await node.up();
  });

  it('answers stale on a 429 and on a garbage answer', async () => {
    await staleEntry();
    node.rateLimit(1, { kind: 'call-read', times: 1 });
    const limited = await read({ maxBlocks: 0, staleIfError: 60 });
    expect(limited.headers.get('cache-status')).toContain('detail=stale-if-error');
    node.garbage({ kind: 'call-read', times: 1 });
    const garbage = await read({ maxBlocks: 0, staleIfError: 60 });
    expect(garbage.headers.get('cache-status')).toContain('detail=stale-if-error');
    expect(node.count('call-read')).toBe(2);
  });

  it('never replaces a definite answer of the node (okay:false) with a stale one', async () => {
    await staleEntry();
    node.setReadOnly(MAINNET_ADDR, 'chain', 'height', { okay: false, cause: 'Unchecked(SomethingWrong)' });
    const res = await read({ maxBlocks: 0, staleIfError: 60 });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('UPSTREAM_API_ERROR');
  });

  it('answers stale at once when no budget token is free, instead of queueing for one', async () => {
    await gw.close();
    // Three tokens a minute and a long queue: the stale entry is built with all three, so the
    // next call would wait about 20 s for a token (under UPSTREAM_QUEUE_TIMEOUT_MS).
    gw = await startGateway(
      testEnv(node.url, { UPSTREAM_RATE_LIMIT_PER_MINUTE: '3', UPSTREAM_QUEUE_TIMEOUT_MS: '60000' }),
    );
    await staleEntry(); // ABI + height + balance: the three tokens
    const res = await read({ maxBlocks: 0, staleIfError: 60 });
    expect(res.status).toBe(200);
    expect(res.body.data).toBe('100');
    expect(res.headers.get('cache-status')).toContain('detail=stale-if-error');
    expect(node.count('call-read')).toBe(0);
  });

  it('uses CACHE_STALE_IF_ERROR_S as the default window', async () => {
    await gw.close();
    gw = await startGateway(testEnv(node.url, { CACHE_STALE_IF_ERROR_S: '60', CACHE_MAX_BLOCKS: '0' }));
    await staleEntry();
    node.status5xx(500, { kind: 'call-read' });
    const res = await read();
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-status')).toContain('detail=stale-if-error');
  });
});
