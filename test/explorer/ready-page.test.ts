/**
 * `/ready` as a page for people (Accept: text/html, as a browser asks), in real Chromium: the
 * upstreams with their state and latency, the tip, the cache in memory and the last minute's hit
 * ratio; it fits a 390 px phone. API clients keep the JSON answer.
 */
import { Cl } from '@stacks/transactions';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, launchBrowser, sidewaysOverflow } from '../support/browser.js';
import { type FakeNode, startFakeNode } from '../support/fake-node.js';
import { hex, MAINNET_ADDR, SAMPLE_ABI } from '../support/fixtures.js';
import { type RunningGateway, request, startGateway, testEnv } from '../support/gateway.js';

let node: FakeNode;
let gw: RunningGateway;
let browser: Browser;
let long: string;

beforeAll(async () => {
  node = await startFakeNode({ tipHeight: 182_340 });
  node.setAbi(MAINNET_ADDR, 'demo', SAMPLE_ABI);
  node.setReadOnly(MAINNET_ADDR, 'demo', 'get-balance', { okay: true, result: hex(Cl.ok(Cl.uint(5))) });
  // Two upstreams on mainnet, the second behind a long URL, as a provider's often is.
  long = `${node.url}/a-rather-long-path-of-the-provider/with-its-version/v2-and-more`;
  gw = await startGateway(testEnv(node.url, { STACKS_API_URL_MAINNET: `${node.url},${long}` }));
  // As main.ts starts: one /v2/info of each upstream, which gives the first tip.
  await gw.gateway.startupRound?.();
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await gw?.close();
  await node?.close();
});

/**
 * The words of the cells matching `selector` (URLs aside: they may break anywhere), and those of
 * them the page shows split over more than one line: a range over a word has one client rect
 * per line it is on.
 */
async function splitWords(page: Page, selector: string): Promise<{ words: string[]; split: string[] }> {
  // Runs in the page; typed structurally because the test program has no DOM library.
  type Rect = { top: number; width: number };
  type Text = { textContent: string | null };
  type Doc = {
    querySelectorAll(s: string): unknown[];
    createTreeWalker(root: unknown, show: number): { nextNode(): Text | null };
    createRange(): {
      setStart(n: Text, o: number): void;
      setEnd(n: Text, o: number): void;
      getClientRects(): Rect[];
    };
  };
  return page.evaluate((sel) => {
    const doc = (globalThis as unknown as { document: Doc }).document;
    const words: string[] = [];
    const split: string[] = [];
    for (const cell of doc.querySelectorAll(sel)) {
      const walker = doc.createTreeWalker(cell, 4); // NodeFilter.SHOW_TEXT
      for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) {
        for (const word of (node.textContent ?? '').matchAll(/\S+/g)) {
          if (/[/:]/.test(word[0])) continue;
          words.push(word[0]);
          const range = doc.createRange();
          range.setStart(node, word.index);
          range.setEnd(node, word.index + word[0].length);
          const lines = new Set(
            [...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)),
          );
          if (lines.size > 1) split.push(word[0]);
        }
      }
    }
    return { words, split };
  }, selector);
}

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

  it('at 390 px breaks long URLs inside their cell, never an ordinary word, and never widens the page', async () => {
    await browser.page.setViewportSize({ width: 390, height: 844 });
    await browser.page.goto(`${gw.url}/ready`);
    expect(await browser.page.locator('td', { hasText: long.slice('http://'.length) }).count()).toBe(1);
    const { words, split } = await splitWords(browser.page, 'th, td');
    // The words the table holds, the headers and the tip's number included.
    expect(words).toEqual(expect.arrayContaining(['network', 'latency', 'mainnet', 'testnet', '182,340']));
    expect(split).toEqual([]);
    const layout = await sidewaysOverflow(browser.page);
    expect(layout.over).toEqual([]);
    expect(layout.scrollWidth).toBeLessThanOrEqual(390);
  });

  it('keeps the JSON answer for API clients', async () => {
    const res = await request(`${gw.url}/ready`);
    expect(res.headers.get('content-type')).toContain('application/json');
    expect(res.body.data.status).toBeDefined();
  });
});
