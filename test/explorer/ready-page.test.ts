/**
 * `/ready` as a page for people (Accept: text/html, as a browser asks), in real Chromium: the
 * upstreams with their state and latency, the tip, the cache in memory and the last minute's hit
 * ratio; it fits a 390 px phone. API clients keep the JSON answer.
 */
import { Cl } from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, launchBrowser } from '../support/browser.js';
import { type FakeNode, startFakeNode } from '../support/fake-node.js';
import { hex, MAINNET_ADDR, SAMPLE_ABI } from '../support/fixtures.js';
import { type RunningGateway, request, startGateway, testEnv } from '../support/gateway.js';

let node: FakeNode;
let gw: RunningGateway;
let browser: Browser;

beforeAll(async () => {
  node = await startFakeNode({ tipHeight: 182_340 });
  node.setAbi(MAINNET_ADDR, 'demo', SAMPLE_ABI);
  node.setReadOnly(MAINNET_ADDR, 'demo', 'get-balance', { okay: true, result: hex(Cl.ok(Cl.uint(5))) });
  gw = await startGateway(testEnv(node.url));
  // As main.ts starts: one /v2/info of each upstream, which gives the first tip.
  await gw.gateway.startupRound?.();
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await gw?.close();
  await node?.close();
});

describe('/ready for people', () => {
  it('shows upstreams, the tip, the cache and its hit ratio, and fits 390 px', async () => {
    const url = `${gw.url}/contract-calls/read-only/${MAINNET_ADDR}/demo/get-balance`;
    const body = { functionArgs: [{ type: 'principal', value: MAINNET_ADDR }] };
    for (let i = 0; i < 4; i++) expect((await request(url, { body })).status).toBe(200);
    await browser.page.setViewportSize({ width: 390, height: 800 });
    await browser.page.goto(`${gw.url}/ready`);
    const text = (await browser.page.locator('body').textContent()) ?? '';
    expect(text).toMatch(/clarity-cache is (ready|degraded)/);
    expect(text).toContain('mainnet: block 182,340');
    // Five lookups: the ABI's (a miss), the call's miss, then three hits.
    expect(text).toContain('hit ratio over the last minute: 60 % (3 of 5 lookups)');
    expect(text).toContain('mainnet');
    expect(await browser.page.locator('td.ok').count()).toBeGreaterThan(0);
    // Evaluated in the page, written as text: the test itself is compiled without DOM types.
    const overflow = (await browser.page.evaluate(
      'document.documentElement.scrollWidth - window.innerWidth',
    )) as number;
    expect(overflow).toBeLessThanOrEqual(0);
  });

  it('keeps the JSON answer for API clients', async () => {
    const res = await request(`${gw.url}/ready`);
    expect(res.headers.get('content-type')).toContain('application/json');
    expect(res.body.data.status).toBeDefined();
  });
});
