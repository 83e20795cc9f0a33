/**
 * The explorer page as people meet it, in a real browser (chromium via playwright-core) against
 * the gateway on the fake node: the contract in the page's address (Back, Forward, links,
 * opening an address), a phone's 390 px screen and the narrowest 320 px one without sideways
 * scrolling, loads that fail (the network, the node), a node's runtime error made readable,
 * the chain tip and the answer's origin in words, an API key, and the keyboard alone.
 */

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Cl } from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, explorer, launchBrowser, sidewaysOverflow } from '../support/browser.js';
import { type FakeNode, startFakeNode } from '../support/fake-node.js';
import { hex, MAINNET_ADDR, OTHER_ADDR, SAMPLE_ABI } from '../support/fixtures.js';
import { type RunningGateway, startGateway, testEnv } from '../support/gateway.js';

/** A contract with a long name and functions whose answers are long unbroken values. */
const LONG_NAME = 'a-contract-with-a-rather-long-name-for-a-phone';
const WIDE_ABI = {
  functions: [
    {
      name: 'get-everything-about-a-principal-and-its-history',
      access: 'read_only',
      args: [
        { name: 'the-principal-whose-history-is-wanted', type: 'principal' },
        { name: 'memo', type: { buffer: { length: 200 } } },
      ],
      outputs: { type: { buffer: { length: 200 } } },
    },
    {
      name: 'divide',
      access: 'read_only',
      args: [{ name: 'by', type: 'uint128' }],
      outputs: { type: 'uint128' },
    },
  ],
  variables: [],
  maps: [],
  fungible_tokens: [],
  non_fungible_tokens: [],
  epoch: 'Epoch31',
  clarity_version: 'Clarity3',
};
const WIDE = `${MAINNET_ADDR}.${LONG_NAME}`;
const OTHER = `${OTHER_ADDR}.demo`;
const KEY = 'explorer-test-key-0123456789';
const CAUSE = 'DivisionByZero\n Stack Trace: \n  (/ u10 by)\n  divide';

let node: FakeNode;
let gw: RunningGateway;
let keyed: RunningGateway;
let browser: Browser;
let keysDir: string;

beforeAll(async () => {
  node = await startFakeNode({ tipHeight: 182340 });
  node.setAbi(MAINNET_ADDR, LONG_NAME, WIDE_ABI);
  node.setAbi(OTHER_ADDR, 'demo', SAMPLE_ABI);
  node.setReadOnly(MAINNET_ADDR, LONG_NAME, 'get-everything-about-a-principal-and-its-history', {
    okay: true,
    result: hex(Cl.bufferFromHex('ab'.repeat(200))),
  });
  node.setReadOnly(MAINNET_ADDR, LONG_NAME, 'divide', { okay: false, cause: CAUSE });
  node.setReadOnly(OTHER_ADDR, 'demo', 'get-info', { okay: true, result: hex(Cl.tuple({ n: Cl.uint(1) })) });
  gw = await startGateway(testEnv(node.url, { UPSTREAM_RETRIES: '0' }));
  keysDir = mkdtempSync(path.join(os.tmpdir(), 'explorer-keys-'));
  writeFileSync(path.join(keysDir, 'keys.json'), JSON.stringify([{ name: 'people', key: KEY }]));
  keyed = await startGateway(
    testEnv(node.url, {
      UPSTREAM_RETRIES: '0',
      API_KEYS_FILE: path.join(keysDir, 'keys.json'),
      API_KEYS_REQUIRED: 'true',
    }),
  );
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await keyed?.close();
  await gw?.close();
  await node?.close();
  if (keysDir !== undefined) rmSync(keysDir, { recursive: true, force: true });
});

const contractField = () => browser.page.getByRole('textbox', { name: 'Contract', exact: true });

describe('the contract in the page address', () => {
  it('Load adds a history entry; Back and Forward load the contract before and after', async () => {
    const { page } = browser;
    const ui = explorer(page);
    await page.goto(`${gw.url}/explorer`);
    await ui.load(WIDE, 'divide');
    expect(new URL(page.url()).hash).toBe(`#${WIDE}`);
    await ui.load(OTHER, 'get-info');
    expect(new URL(page.url()).hash).toBe(`#${OTHER}`);

    await page.goBack();
    await ui.fn('divide').waitFor();
    expect(await contractField().inputValue()).toBe(WIDE);
    expect(await ui.fn('get-info').count()).toBe(0);

    await page.goForward();
    await ui.fn('get-info').waitFor();
    expect(await contractField().inputValue()).toBe(OTHER);
    expect(await ui.fn('divide').count()).toBe(0);
    expect((await ui.call('get-info')).value).toEqual({ n: '1' });

    // Back to where no contract was named: the page as it first was.
    await page.goBack();
    await ui.fn('divide').waitFor();
    await page.goBack();
    await page.waitForFunction(
      () => !(globalThis as unknown as { location: { hash: string } }).location.hash,
    );
    await expect.poll(() => ui.fn('divide').count()).toBe(0);
    expect(await contractField().inputValue()).toBe('');
  });

  it('opening an address that names a contract loads it', async () => {
    const { page } = browser;
    const ui = explorer(page);
    await page.goto(`${gw.url}/explorer#${OTHER}`);
    await ui.fn('get-info').waitFor();
    expect(await contractField().inputValue()).toBe(OTHER);
    // A link to another contract, followed while the page is open, loads that one.
    await page.evaluate((id) => {
      const w = globalThis as unknown as { location: { hash: string } };
      w.location.hash = id;
    }, WIDE);
    await ui.fn('divide').waitFor();
    expect(await contractField().inputValue()).toBe(WIDE);
  });

  it('the Known contracts entries are links that load their contract', async () => {
    const { page } = browser;
    const ui = explorer(page);
    await page.goto(`${gw.url}/explorer#${WIDE}`);
    await ui.fn('divide').waitFor();
    const link = page
      .getByRole('list', { name: 'Known contracts' })
      .getByRole('link', { name: OTHER, exact: true });
    expect(await link.getAttribute('href')).toBe(`#${OTHER}`);
    await link.click();
    await ui.fn('get-info').waitFor();
    await page.goBack();
    await ui.fn('divide').waitFor();
    expect(browser.pageErrors).toEqual([]);
  });
});

describe('on a phone', () => {
  for (const width of [390, 320]) {
    it(`${width} px: nothing wider than the screen, long values wrap or scroll inside their box`, async () => {
      const { page } = browser;
      const ui = explorer(page);
      await page.setViewportSize({ width, height: 800 });
      try {
        await page.goto(`${gw.url}/explorer`);
        await ui.load(WIDE, 'divide');
        const answer = await ui.call('get-everything-about-a-principal-and-its-history', {
          'the-principal-whose-history-is-wanted': `${MAINNET_ADDR}.${LONG_NAME}`,
          memo: `0x${'cd'.repeat(200)}`,
        });
        expect(answer.value).toBe(`0x${'ab'.repeat(200)}`);
        const layout = await sidewaysOverflow(page);
        expect(layout.over).toEqual([]);
        expect(layout.scrollWidth).toBeLessThanOrEqual(width);
        // An error with a long message and details, too.
        await ui.call('divide', { by: 'u0' });
        const afterError = await sidewaysOverflow(page);
        expect(afterError.over).toEqual([]);
        expect(afterError.scrollWidth).toBeLessThanOrEqual(width);
        await page.screenshot({ path: path.join(os.tmpdir(), `explorer-test-${width}.png`), fullPage: true });
      } finally {
        await page.setViewportSize({ width: 1280, height: 800 });
      }
    });
  }
});

describe('every load ends in a result or an error', () => {
  const noProgressLeft = async () => {
    const { page } = browser;
    await page.locator('#result[aria-busy="false"]').waitFor();
    const text = (await page.locator('body').textContent()) ?? '';
    expect(text).not.toMatch(/Loading|Calling|Decoding/);
    expect(await page.locator('.pending').count()).toBe(0);
  };

  it('when the network fails', async () => {
    const { page } = browser;
    const ui = explorer(page);
    await page.goto(`${gw.url}/explorer`);
    await page.route('**/contract-calls/abi/**', (route) => route.abort('connectionrefused'));
    try {
      await contractField().fill(OTHER);
      await page.getByRole('button', { name: 'Load', exact: true }).click();
      await page.getByText(`Could not load ${OTHER}.`).waitFor();
      const answer = await ui.answer();
      expect(answer.error).toMatch(/^NETWORK_ERROR: /);
      await noProgressLeft();
    } finally {
      await page.unroute('**/contract-calls/abi/**');
    }
  });

  it('when the node fails', async () => {
    const { page } = browser;
    const ui = explorer(page);
    node.status5xx(500, { kind: 'interface' });
    try {
      await page.goto(`${gw.url}/explorer`);
      await contractField().fill(`${MAINNET_ADDR}.never-seen`);
      await page.getByRole('button', { name: 'Load', exact: true }).click();
      await page.getByText(`Could not load ${MAINNET_ADDR}.never-seen.`).waitFor();
      const answer = await ui.answer();
      expect(answer.error).toMatch(/^UPSTREAM_API_ERROR: /);
      await noProgressLeft();
    } finally {
      node.clearFaults();
    }
  });
});

describe('answers in words', () => {
  it("a node's runtime error: its code, message and cause, the stack trace folded away", async () => {
    const { page } = browser;
    const ui = explorer(page);
    await page.goto(`${gw.url}/explorer#${WIDE}`);
    await ui.fn('divide').waitFor();
    const answer = await ui.call('divide', { by: 'u0' });
    expect(answer.error).toMatch(/^UPSTREAM_API_ERROR: upstream node refused/);
    // The raw cause is not repeated in the message: it is shown below, readable.
    expect(answer.error).not.toContain('Stack Trace');
    const cause = ui.result.getByLabel('Cause', { exact: true });
    expect(await cause.textContent()).toBe('Runtime error: DivisionByZero');
    const trace = ui.result.locator('details', { hasText: 'Stack trace' });
    expect(await trace.getAttribute('open')).toBeNull();
    expect(await trace.locator('pre').isVisible()).toBe(false);
    await trace.locator('summary').click();
    expect(await trace.locator('pre').textContent()).toBe('(/ u10 by)\n  divide');
  });

  it('the chain tip, and where each answer came from', async () => {
    const { page } = browser;
    const ui = explorer(page);
    await page.goto(`${gw.url}/explorer#${OTHER}`);
    await ui.fn('get-info').waitFor();
    await expect.poll(() => page.locator('#tip').textContent()).toBe('Chain tip: block 182,340');
    await ui.call('get-info', {}); // the first may be a miss or a hit of an earlier test
    const hit = await ui.call('get-info', {});
    expect(hit.cacheStatus).toMatch(/hit/);
    const words = await ui.result.locator('.provenance').textContent();
    expect(words).toMatch(/^from cache, \d+ s old, block 182,340$/);
  });
});

describe('an API key', () => {
  it('is sent as X-API-Key with the page calls when filled', async () => {
    const { page } = browser;
    const ui = explorer(page);
    const sent: Array<string | undefined> = [];
    const record = (r: { url(): string; headers(): Record<string, string> }) => {
      if (r.url().includes('/contract-calls/')) sent.push(r.headers()['x-api-key']);
    };
    page.on('request', record);
    await page.goto(`${keyed.url}/explorer`);
    await contractField().fill(OTHER);
    await page.getByRole('button', { name: 'Load', exact: true }).click();
    expect((await ui.answer()).error).toMatch(/^UNAUTHORIZED: /);
    expect(sent.every((k) => k === undefined)).toBe(true);

    await page.getByLabel('API key', { exact: true }).fill(KEY);
    await page.getByRole('button', { name: 'Load', exact: true }).click();
    await ui.fn('get-info').waitFor();
    expect((await ui.call('get-info')).value).toEqual({ n: '1' });
    expect(sent.at(-1)).toBe(KEY);
    page.off('request', record);
  });
});

describe('the keyboard alone', () => {
  it('loads a contract, calls a function, follows a Known contracts link', async () => {
    const { page } = browser;
    const ui = explorer(page);
    // The other contract is known to the gateway, so the list links to it.
    await fetch(`${gw.url}/contract-calls/abi/${OTHER_ADDR}/demo`).then((r) => r.arrayBuffer());
    await page.goto(`${gw.url}/explorer`);
    // Tab from the top of the page: the skip link, then the Contract field.
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    type PageGlobal = { document: { activeElement: { getAttribute(n: string): string | null } | null } };
    const focused = () =>
      page.evaluate(() => (globalThis as unknown as PageGlobal).document.activeElement?.getAttribute('name'));
    expect(await focused()).toBe('contract');
    await page.keyboard.type(WIDE);
    await page.keyboard.press('Enter');
    await ui.fn('divide').waitFor();
    await page.getByRole('textbox', { name: 'by', exact: true }).focus();
    await page.keyboard.type('u0');
    await page.keyboard.press('Enter');
    expect((await ui.answer()).error).toMatch(/^UPSTREAM_API_ERROR/);
    // The link to the other contract, reached with Tab and followed with Enter.
    const link = page.getByRole('link', { name: OTHER, exact: true });
    await link.waitFor();
    for (let i = 0; i < 40; i++) {
      await page.keyboard.press('Tab');
      const href = await page.evaluate(
        () => (globalThis as unknown as PageGlobal).document.activeElement?.getAttribute('href') ?? null,
      );
      if (href === `#${OTHER}`) break;
    }
    await page.keyboard.press('Enter');
    await ui.fn('get-info').waitFor();
    // Back is the browser's own (Alt+Left): the page follows it.
    await page.goBack();
    await ui.fn('divide').waitFor();
    expect(browser.pageErrors).toEqual([]);
  });
});
