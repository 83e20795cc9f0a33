/**
 * The explorer page in a real browser (chromium via playwright-core) against the gateway on
 * the devnet: the real Clarity VM behind real HTTP. Loads the sample contracts, calls
 * functions with uint, principal, string, int, list, buffer and optional arguments, sees
 * a miss then a hit, a contract's (err ...) and a runtime error, uses the known-contracts
 * list and the decode tool, and checks that no request left the gateway's origin.
 * (A tuple argument is covered on the fake node: no devnet read-only function takes one.)
 */
import { Cl } from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { type Browser, explorer, launchBrowser } from '../support/browser.js';
import { hex } from '../support/fixtures.js';
import { type RunningGateway, startGateway, testEnv } from '../support/gateway.js';

let devnet: Devnet;
let gw: RunningGateway;
let browser: Browser;
let TOKEN: string;
let DAO: string;
let W1: string;
let W2: string;

beforeAll(async () => {
  devnet = await startDevnet({ port: 0 });
  TOKEN = `${devnet.deployer}.demo-token`;
  DAO = `${devnet.deployer}.demo-dao`;
  W1 = devnet.accounts.wallet_1;
  W2 = devnet.accounts.wallet_2;
  // The devnet answers for both networks; its calls replay the chain, so allow them time.
  gw = await startGateway(testEnv(devnet.url, { UPSTREAM_TIMEOUT_MS: '30000', UPSTREAM_RETRIES: '0' }));
  browser = await launchBrowser();
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await gw?.close();
  await devnet?.close();
});

describe('the explorer page on the devnet', () => {
  it('calls a token balance (principal), then hits the cache', async () => {
    const { page } = browser;
    const ui = explorer(page);
    await page.goto(`${gw.url}/explorer`);
    await ui.load(TOKEN, 'get-balance');
    expect(await ui.fn('get-name').count()).toBe(1);
    const first = await ui.call('get-balance', { who: W1 });
    expect(first.error).toBeUndefined();
    expect(first.value).toMatch(/^\d+$/);
    expect(first.cacheStatus).toMatch(/fwd=miss/);
    const second = await ui.call('get-balance', { who: `'${W1}` });
    expect(second.value).toBe(first.value);
    expect(second.cacheStatus).toMatch(/hit/);
    expect((await ui.call('get-name')).value).toBe('Demo Token');
  });

  it('passes strings, an int, a list, a buffer and an optional to a real contract', async () => {
    const { page } = browser;
    const ui = explorer(page);
    await page.goto(`${gw.url}/explorer`);
    await ui.load(DAO, 'preview-proposal');
    const answer = await ui.call('preview-proposal', {
      title: 'Plant trees',
      description: 'u"Planter des arbres 🌳"',
      delta: '-5',
      tags: '(list "green" "city")',
      'payload-hash': `0x${'ab'.repeat(32)}`,
      target: `(some '${W2})`,
    });
    expect(answer.error).toBeUndefined();
    expect(answer.value).toMatchObject({
      title: 'Plant trees',
      description: 'Planter des arbres 🌳',
      delta: '-5',
      tags: ['green', 'city'],
      'payload-hash': `0x${'ab'.repeat(32)}`,
      target: W2,
    });
    // The Sender field sets tx-sender, which the contract records as the proposer.
    expect(answer.value).toMatchObject({ proposer: devnet.deployer });
    await page.getByRole('textbox', { name: 'Sender', exact: true }).fill(W1);
    const asW1 = await ui.call('preview-proposal');
    expect(asW1.value).toMatchObject({ proposer: W1, title: 'Plant trees' });
    // uint and principal together; an absent vote is none, shown as null.
    expect((await ui.call('get-vote', { id: 'u999', voter: W1 })).value).toBeNull();
  });

  it("shows a contract's (err ...) and a runtime error with their codes", async () => {
    const { page } = browser;
    const ui = explorer(page);
    await page.goto(`${gw.url}/explorer`);
    await ui.load(DAO, 'get-treasury-withdrawal');
    const err = await ui.call('get-treasury-withdrawal', { amount: 'u5' });
    expect(err.error).toMatch(/^CONTRACT_ERROR: /);
    expect(err.text).toContain('treasury is locked');
    const runtime = await ui.call('get-share', { amount: 'u10', parts: 'u0' });
    expect(runtime.error).toMatch(/^UPSTREAM_API_ERROR: /);
    // The node's cause, readable: the error's kind first, any stack trace folded away.
    expect(await ui.result.getByLabel('Cause', { exact: true }).textContent()).toBe(
      'Runtime error: DivisionByZero',
    );
    expect(runtime.error).not.toMatch(/Stack Trace/i);
    expect((await ui.call('get-share', { amount: 'u10', parts: 'u2' })).value).toBe('5');
  });

  it('lists the known contracts and loads one from the list; decodes a value', async () => {
    const { page } = browser;
    const ui = explorer(page);
    await page.goto(`${gw.url}/explorer`);
    const list = page.getByRole('list', { name: 'Known contracts' });
    await list.getByRole('link', { name: DAO, exact: true }).waitFor();
    await list.getByRole('link', { name: TOKEN, exact: true }).click();
    await ui.fn('get-symbol').waitFor();
    expect((await ui.call('get-symbol')).value).toBe('DEMO');
    expect((await ui.decode(hex(Cl.ok(Cl.uint(42))))).value).toBe(42);
  });

  it('never made a request outside the gateway, nor threw', () => {
    const origin = new URL(gw.url).origin;
    expect(browser.requests.length).toBeGreaterThan(5);
    expect(browser.requests.filter((u) => !u.startsWith(`${origin}/`) && !u.startsWith('data:'))).toEqual([]);
    expect(browser.pageErrors).toEqual([]);
  });
});
