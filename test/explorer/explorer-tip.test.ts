/**
 * The explorer's chain tip, in real Chromium. Set up as `npm run demo` is (scripts/demo.ts):
 * mainnet and testnet both on one local chain, whose blocks are pushed to the gateway's event
 * observer for testnet only. Each network's tip is learned apart (testnet's from every observed
 * block, mainnet's from its own answers), yet they are one chain: the page shows one tip, the
 * chain's newest block. Networks on different nodes keep a tip each.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { mine } from '../devnet/helpers.js';
import { type Browser, explorer, launchBrowser } from '../support/browser.js';
import { type FakeNode, startFakeNode } from '../support/fake-node.js';
import { hex, INFO_VALUE, MAINNET_ADDR, SAMPLE_ABI, TESTNET_ADDR } from '../support/fixtures.js';
import { type RunningGateway, startGateway, testEnv } from '../support/gateway.js';
import { freePort } from '../support/process.js';

let browser: Browser;
const stops: Array<() => Promise<void>> = [];

beforeAll(async () => {
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  for (const stop of stops.reverse()) await stop();
});

const tipText = () => browser.page.locator('#tip').textContent();

describe('both networks on one local chain, as in the demo', () => {
  let devnet: Devnet;
  let gw: RunningGateway;

  beforeAll(async () => {
    // The gateway names the devnet before it runs, and the devnet its observer: a port first.
    const devnetUrl = `http://127.0.0.1:${await freePort()}`;
    gw = await startGateway(
      testEnv(devnetUrl, {
        // The devnet's calls replay the chain: allow them time.
        UPSTREAM_TIMEOUT_MS: '30000',
        UPSTREAM_RETRIES: '0',
        EVENT_OBSERVER_PORT: '0',
        EVENT_OBSERVER_NETWORK: 'testnet',
      }),
    );
    stops.push(() => gw.close());
    devnet = await startDevnet({
      port: Number(new URL(devnetUrl).port),
      eventObserverUrls: [`http://${gw.gateway.observer?.address}`],
    });
    stops.push(() => devnet.close());
    // As main.ts starts: one /v2/info of each upstream, which gives each network its first tip.
    await gw.gateway.startupRound?.();
  }, 90_000);

  it('shows one tip, the chain’s newest block, however each network learned it', async () => {
    const { page } = browser;
    const ui = explorer(page);
    const follower = gw.gateway.observer?.follower;
    if (follower === undefined) throw new Error('the observer is not running');
    // Blocks only the testnet side hears of (pushed to its observer).
    const handled = follower.handled;
    expect((await mine(devnet.url, 3)).status).toBe(200);
    await follower.untilHandled(handled + 3);
    const newest = devnet.tipHeight();

    await page.goto(`${gw.url}/explorer`);
    await expect.poll(tipText).toBe(`Chain tip: block ${newest.toLocaleString('en-US')}`);

    // Answers of either network keep it one tip: a testnet contract's call...
    const token = `${devnet.deployer}.demo-token`;
    await ui.load(token, 'get-name');
    expect((await ui.call('get-name')).value).toBe('Demo Token');
    expect(await tipText()).toBe(`Chain tip: block ${newest.toLocaleString('en-US')}`);
    // ... and another block, seen through a fresh read.
    const before = follower.handled;
    expect((await mine(devnet.url, 1)).status).toBe(200);
    await follower.untilHandled(before + 1);
    const answer = await ui.call('get-balance', { who: devnet.accounts.wallet_3 });
    expect(answer.tipHeight).toBe(String(newest + 1));
    expect(await tipText()).toBe(`Chain tip: block ${(newest + 1).toLocaleString('en-US')}`);
    expect(browser.pageErrors).toEqual([]);
  });
});

describe('networks on different nodes', () => {
  let mainnet: FakeNode;
  let testnet: FakeNode;
  let gw: RunningGateway;

  beforeAll(async () => {
    mainnet = await startFakeNode({ tipHeight: 182_340 });
    testnet = await startFakeNode({ tipHeight: 3_400 });
    stops.push(
      () => mainnet.close(),
      () => testnet.close(),
    );
    mainnet.setAbi(MAINNET_ADDR, 'demo', SAMPLE_ABI);
    testnet.setAbi(TESTNET_ADDR, 'demo', SAMPLE_ABI);
    testnet.setReadOnly(TESTNET_ADDR, 'demo', 'get-info', { okay: true, result: hex(INFO_VALUE) });
    gw = await startGateway(testEnv(mainnet.url, { STACKS_API_URL_TESTNET: testnet.url }));
    stops.push(() => gw.close());
    await gw.gateway.startupRound?.();
  }, 60_000);

  it('shows each network’s tip', async () => {
    const { page } = browser;
    await page.goto(`${gw.url}/explorer`);
    await expect.poll(tipText).toBe('Chain tip: mainnet block 182,340 · testnet block 3,400');
    // A testnet answer moves testnet's alone.
    testnet.setTipHeight(3_401);
    const ui = explorer(page);
    await ui.load(`${TESTNET_ADDR}.demo`, 'get-info');
    expect((await ui.call('get-info')).tipHeight).toBe('3401');
    await expect.poll(tipText).toBe('Chain tip: mainnet block 182,340 · testnet block 3,401');
  });
});
