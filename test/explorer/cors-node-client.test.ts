/**
 * A dApp page on another origin reading the gateway as its node, in real Chromium: the headers
 * node clients send (stacks.js adds `x-hiro-product` and `x-hiro-version`; an API key goes in
 * `x-api-key`) pass the CORS preflight, so the browser lets the page read the answer.
 */
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, launchBrowser } from '../support/browser.js';
import { type FakeNode, startFakeNode } from '../support/fake-node.js';
import { MAINNET_ADDR, SAMPLE_ABI } from '../support/fixtures.js';
import { type RunningGateway, startGateway, testEnv } from '../support/gateway.js';

let node: FakeNode;
let gw: RunningGateway;
let page: Server;
let pageUrl: string;
let browser: Browser;

beforeAll(async () => {
  node = await startFakeNode();
  node.setAbi(MAINNET_ADDR, 'demo', SAMPLE_ABI);
  gw = await startGateway(testEnv(node.url));
  // The dApp's own origin: a page that does nothing until the test runs its script.
  page = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<!doctype html><title>dapp</title>');
  });
  await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve));
  pageUrl = `http://127.0.0.1:${(page.address() as { port: number }).port}/`;
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  page?.close();
  await gw?.close();
  await node?.close();
});

describe('a node client in the browser', () => {
  it('reads a contract interface from another origin with the headers stacks.js sends', async () => {
    await browser.page.goto(pageUrl);
    const result = await browser.page.evaluate(async (url) => {
      const res = await fetch(url, {
        headers: {
          accept: 'application/json',
          'x-hiro-product': 'stacksjs',
          'x-hiro-version': '7.0.0',
          'x-api-key': 'not-needed-here',
        },
      });
      return { status: res.status, body: (await res.json()) as { functions: { name: string }[] } };
    }, `${gw.url}/v2/contracts/interface/${MAINNET_ADDR}/demo`);
    expect(result.status).toBe(200);
    expect(result.body.functions.map((f) => f.name)).toContain('get-balance');
  });
});
