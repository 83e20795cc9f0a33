/**
 * The explorer on a gateway that requires API keys, in real Chromium: the page itself stays open,
 * a call without a key is refused (UNAUTHORIZED, shown), and with the key in the field labelled
 * "API key" the same call is answered. The Watch toggle sends the key as calls do: refused without
 * it, subscribed with it, and the subscription (the key's own) deleted with it.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Cl } from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, explorer, launchBrowser } from '../support/browser.js';
import { type FakeNode, startFakeNode } from '../support/fake-node.js';
import { hex, MAINNET_ADDR, SAMPLE_ABI } from '../support/fixtures.js';
import { type RunningGateway, startGateway, testEnv } from '../support/gateway.js';
import { tmpDir } from '../unit/cache/tmp-dir.js';

const KEY = 'explorer-key-0123456789abcdef';
let node: FakeNode;
let gw: RunningGateway;
let browser: Browser;

beforeAll(async () => {
  node = await startFakeNode();
  node.setAbi(MAINNET_ADDR, 'demo', SAMPLE_ABI);
  node.setReadOnly(MAINNET_ADDR, 'demo', 'get-info', {
    okay: true,
    result: hex(Cl.tuple({ n: Cl.uint(3) })),
  });
  const { dir } = tmpDir('explorer-keys');
  const file = path.join(dir, 'keys.json');
  writeFileSync(file, JSON.stringify([{ name: 'explorer', key: KEY }]));
  gw = await startGateway(testEnv(node.url, { API_KEYS_FILE: file, API_KEYS_REQUIRED: 'true' }));
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await gw?.close();
  await node?.close();
});

describe('the explorer with API keys required', () => {
  it('stays open, and sends the key from its "API key" field with every call', async () => {
    const page = browser.page;
    const ui = explorer(page);
    const res = await page.goto(`${gw.url}/explorer`);
    expect(res?.status()).toBe(200);
    await page.getByRole('textbox', { name: 'Contract', exact: true }).fill(`${MAINNET_ADDR}.demo`);
    await page.getByRole('button', { name: 'Load', exact: true }).click();
    const refused = await ui.answer();
    expect(refused.error).toContain('UNAUTHORIZED');
    await page.getByLabel('API key', { exact: true }).fill(KEY);
    await ui.load(`${MAINNET_ADDR}.demo`, 'get-info');
    const answer = await ui.call('get-info');
    expect(answer.value).toEqual({ n: '3' });
  });

  it('sends the key with the Watch toggle’s subscription and its deletion', async () => {
    const page = browser.page;
    const ui = explorer(page);
    await page.goto(`${gw.url}/explorer`);
    await page.getByLabel('API key', { exact: true }).fill(KEY);
    await ui.load(`${MAINNET_ADDR}.demo`, 'get-info');
    const watch = ui.fn('get-info').getByRole('button', { name: 'Watch', exact: true });

    // Without the key: refused, shown as a refused call is, and the toggle off.
    await page.getByLabel('API key', { exact: true }).fill('');
    await watch.click();
    expect((await ui.answer()).error).toContain('UNAUTHORIZED');
    expect(await watch.getAttribute('aria-pressed')).toBe('false');

    await page.getByLabel('API key', { exact: true }).fill(KEY);
    const post = page.waitForRequest((r) => r.method() === 'POST' && r.url().endsWith('/subscriptions'));
    await watch.click();
    expect((await post).headers()['x-api-key']).toBe(KEY);
    const answer = await ui.answer();
    expect(answer.value).toEqual({ n: '3' });
    expect(await watch.getAttribute('aria-pressed')).toBe('true');

    const deletion = page.waitForResponse((r) => r.request().method() === 'DELETE');
    await watch.click();
    const deleted = await deletion;
    expect(deleted.request().headers()['x-api-key']).toBe(KEY);
    expect(deleted.status()).toBe(200);
  });
});
