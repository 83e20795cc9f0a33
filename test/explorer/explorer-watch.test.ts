/**
 * The explorer's Watch toggle in real Chromium, against the gateway on the devnet (the real
 * Clarity VM), whose blocks reach the gateway's event observer. At desktop width and on a
 * 390 px phone: Watch shows the read's value and the block it was read at, a public call that
 * changes it makes a block, and the page shows the new value at that block without anyone
 * pressing anything. Turning the toggle off, changing the call or leaving the page deletes the
 * subscription; the read's errors, and the gateway ending the watch, are shown as a call's are.
 * A gateway restarted without its subscriptions is subscribed to again.
 */
import { Cl, type ClarityValue } from '@stacks/transactions';
import type { Page, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { callPublic } from '../devnet/helpers.js';
import { type Browser, explorer, launchBrowser, sidewaysOverflow } from '../support/browser.js';
import { type RunningGateway, request, startGateway, testEnv } from '../support/gateway.js';
import { freePort } from '../support/process.js';

let devnet: Devnet;
let gw: RunningGateway;
let gatewayEnv: Record<string, string>;
let browser: Browser;
let TOKEN: string;
let DAO: string;

beforeAll(async () => {
  const observerPort = await freePort();
  devnet = await startDevnet({ port: 0, eventObserverUrls: [`http://127.0.0.1:${observerPort}`] });
  TOKEN = `${devnet.deployer}.demo-token`;
  DAO = `${devnet.deployer}.demo-dao`;
  // A port of its own, so that a restarted gateway answers where the page's watch was.
  gatewayEnv = testEnv(devnet.url, {
    PORT: String(await freePort()),
    // The devnet's calls replay the chain: allow them time.
    UPSTREAM_TIMEOUT_MS: '30000',
    UPSTREAM_RETRIES: '0',
    EVENT_OBSERVER_PORT: String(observerPort),
    EVENT_OBSERVER_NETWORK: 'testnet',
  });
  gw = await startGateway(gatewayEnv);
  browser = await launchBrowser();
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await gw?.close();
  await devnet?.close();
});

/** A public call as a transaction in a new block; its block's height. */
async function publicCall(
  sender: string,
  contract: string,
  fn: string,
  args: ClarityValue[],
): Promise<number> {
  const res = await callPublic(devnet.url, { sender, contract, function: fn, arguments: args });
  expect(res.status, res.text).toBe(200);
  expect(res.json.committed, res.text).toBe(true);
  return res.json.tip.height as number;
}

/** wallet_1 (500,000 DEMO at deployment) sends `amount` micro-DEMO to `to`. */
function transfer(amount: number, to: string): Promise<number> {
  const from = devnet.accounts.wallet_1;
  return publicCall(from, 'demo-token', 'transfer', [
    Cl.uint(amount),
    Cl.principal(from),
    Cl.principal(to),
    Cl.none(),
  ]);
}

/** A function's Watch toggle, the line beside it, and the value the Result region shows. */
function watchOf(page: Page, fn: string) {
  const region = explorer(page).fn(fn);
  return {
    button: region.getByRole('button', { name: 'Watch', exact: true }),
    line: region.getByRole('status'),
    pressed: () => region.getByRole('button', { name: 'Watch', exact: true }).getAttribute('aria-pressed'),
  };
}

/** Resolves once the Result region shows `value` (as the page prints it): waits for the DOM to change. */
async function shown(page: Page, value: unknown): Promise<void> {
  const text = JSON.stringify(value, null, 2);
  await explorer(page)
    .result.getByLabel('Value', { exact: true })
    .filter({ hasText: new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`) })
    .waitFor();
}

/** The next POST /subscriptions the page makes: the subscription's id. */
async function subscribed(page: Page, action: () => Promise<void>): Promise<string> {
  const created = page.waitForResponse(
    (r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/subscriptions',
  );
  await action();
  const res = await created;
  expect(res.status()).toBe(201);
  return ((await res.json()) as { data: { id: string } }).data.id;
}

function deletion(page: Page, id: string): Promise<Request> {
  return page
    .context()
    .waitForEvent(
      'request',
      (r) => r.method() === 'DELETE' && new URL(r.url()).pathname === `/subscriptions/${id}`,
    );
}

/** Whether the gateway still holds the subscription: its stream opens (and is let go at once), or is NOT_FOUND. */
async function held(id: string): Promise<boolean> {
  const abort = new AbortController();
  try {
    const res = await fetch(`${gw.url}/subscriptions/${id}/events`, { signal: abort.signal });
    // Anything else (429: too many streams of this address) would say nothing of the subscription.
    if (res.status !== 200 && res.status !== 404) throw new Error(`its stream answered HTTP ${res.status}`);
    return res.status === 200;
  } finally {
    abort.abort();
  }
}

const block = (height: number) => `block ${height.toLocaleString('en-US')}`;

describe.each([
  { name: 'at desktop width', width: 1280, height: 800, wallet: 'wallet_4' as const },
  { name: 'on a 390 x 844 phone', width: 390, height: 844, wallet: 'wallet_5' as const },
])('Watch $name', ({ width, height, wallet }) => {
  it('shows the value at its block, then each change a public call makes, until turned off', async () => {
    const { page } = browser;
    const ui = explorer(page);
    const who = devnet.accounts[wallet];
    await page.setViewportSize({ width, height });
    await page.goto(`${gw.url}/explorer`);
    await ui.load(TOKEN, 'get-balance');
    await ui.fn('get-balance').getByRole('textbox', { name: 'who', exact: true }).fill(who);
    const watch = watchOf(page, 'get-balance');
    expect(await watch.pressed()).toBe('false');

    const id = await subscribed(page, () => watch.button.click());
    expect(await watch.pressed()).toBe('true');
    const first = await ui.answer();
    expect(first.error).toBeUndefined();
    expect(first.value).toBe('0');
    const readAt = Number(first.tipHeight);
    expect(readAt).toBe(devnet.tipHeight());
    expect(first.text).toContain(`watched: read at ${block(readAt)}`);
    expect(await watch.line.textContent()).toBe(`Watching: read at ${block(readAt)}`);
    // As after a call, the person is taken to the value (on a phone, far below the button).
    const focused = await page.evaluate(
      () =>
        (globalThis as unknown as { document: { activeElement: { id: string } | null } }).document
          .activeElement?.id,
    );
    expect(focused).toBe('result');

    // A block that changes the read: its new value, at that block, with no one pressing anything.
    const changedAt = await transfer(1000, who);
    await shown(page, '1000');
    const changed = await ui.answer();
    expect(changed.tipHeight).toBe(String(changedAt));
    expect(changed.text).toContain(`watched: changed at ${block(changedAt)}`);
    expect(await watch.line.textContent()).toBe(`Watching: read at ${block(changedAt)}`);
    expect(await page.locator('#tip').textContent()).toBe(`Chain tip: ${block(changedAt)}`);
    expect(await watch.pressed()).toBe('true');

    // And the next one.
    const again = await transfer(1, who);
    await shown(page, '1001');
    expect((await ui.answer()).tipHeight).toBe(String(again));

    // The toggle, the value and the line beside it fit the screen, and the buttons a fingertip.
    const layout = await sidewaysOverflow(page);
    expect(layout.over).toEqual([]);
    expect(layout.scrollWidth).toBeLessThanOrEqual(layout.width);
    for (const name of ['Call', 'Watch']) {
      const box = await ui.fn('get-balance').getByRole('button', { name, exact: true }).boundingBox();
      expect(box, name).not.toBeNull();
      const least = width <= 480 ? 44 : 24;
      expect(box!.height, name).toBeGreaterThanOrEqual(least);
      expect(box!.width, name).toBeGreaterThanOrEqual(least);
    }

    // Off: the subscription is deleted at the gateway.
    const deleted = deletion(page, id);
    await watch.button.click();
    await deleted;
    expect(await watch.pressed()).toBe('false');
    expect(await watch.line.textContent()).toBe('');
    await expect.poll(() => held(id)).toBe(false);
  });
});

describe('Watch, its errors and its end', () => {
  it('shows the read’s error as a call’s, then its value once a call changes it; a change of the call ends it', async () => {
    const { page } = browser;
    const ui = explorer(page);
    const who = devnet.accounts.wallet_6;
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.goto(`${gw.url}/explorer`);
    await ui.load(DAO, 'get-member');
    const field = ui.fn('get-member').getByRole('textbox', { name: 'who', exact: true });
    await field.fill(who);
    const watch = watchOf(page, 'get-member');
    const id = await subscribed(page, () => watch.button.click());
    const notMember = await ui.answer();
    expect(notMember.error).toMatch(/^CONTRACT_ERROR: /);
    expect(await watch.pressed()).toBe('true');
    expect(await watch.line.textContent()).toMatch(/^Watching: read at block /);

    const joinedAt = await publicCall(who, DAO, 'join', []);
    await ui.result.getByLabel('Value', { exact: true }).waitFor();
    const member = await ui.answer();
    expect(member.error).toBeUndefined();
    expect(member.value).toMatchObject({ role: 'member', 'joined-at': String(joinedAt) });
    expect(member.tipHeight).toBe(String(joinedAt));

    // Another argument is another read: the watch ends, and says so.
    const deleted = deletion(page, id);
    await field.fill(devnet.accounts.wallet_7);
    await deleted;
    expect(await watch.pressed()).toBe('false');
    expect(await watch.line.textContent()).toBe(
      'Stopped watching: the call changed. Press Watch to watch it as it is now.',
    );
    await expect.poll(() => held(id)).toBe(false);

    // So is another Sender.
    const next = await subscribed(page, () => watch.button.click());
    await ui.answer();
    const senderChange = deletion(page, next);
    await page.getByRole('textbox', { name: 'Sender', exact: true }).fill(devnet.accounts.wallet_2);
    await senderChange;
    expect(await watch.pressed()).toBe('false');
  });

  it('shows a runtime error of the read with its readable cause, as Call does', async () => {
    const { page } = browser;
    const ui = explorer(page);
    await page.goto(`${gw.url}/explorer`);
    await ui.load(DAO, 'get-share');
    const region = ui.fn('get-share');
    await region.getByRole('textbox', { name: 'amount', exact: true }).fill('u10');
    await region.getByRole('textbox', { name: 'parts', exact: true }).fill('u0');
    const watch = watchOf(page, 'get-share');
    const id = await subscribed(page, () => watch.button.click());
    const failed = await ui.answer();
    expect(failed.error).toMatch(/^UPSTREAM_API_ERROR: /);
    expect(failed.error).not.toMatch(/Stack Trace/i);
    expect(await ui.result.getByLabel('Cause', { exact: true }).textContent()).toBe(
      'Runtime error: DivisionByZero',
    );
    // The read's error is its value at that block: the watch goes on.
    expect(await watch.pressed()).toBe('true');
    const deleted = deletion(page, id);
    await watch.button.click();
    await deleted;
  });

  it('refuses an argument before subscribing, as Call does', async () => {
    const { page } = browser;
    const ui = explorer(page);
    await page.goto(`${gw.url}/explorer`);
    await ui.load(TOKEN, 'get-balance');
    const field = ui.fn('get-balance').getByRole('textbox', { name: 'who', exact: true });
    await field.fill('u5');
    const before = browser.requests.length;
    await watchOf(page, 'get-balance').button.click();
    const refused = await ui.answer();
    expect(refused.error).toMatch(/^VALIDATION_ERROR: who: /);
    expect(await field.getAttribute('aria-invalid')).toBe('true');
    expect(await watchOf(page, 'get-balance').pressed()).toBe('false');
    expect(browser.requests.slice(before).filter((u) => u.includes('/subscriptions'))).toEqual([]);
  });

  it('shows the gateway ending the watch, and turns the toggle off', async () => {
    const { page } = browser;
    const ui = explorer(page);
    await page.goto(`${gw.url}/explorer`);
    await ui.load(TOKEN, 'get-total-supply');
    const watch = watchOf(page, 'get-total-supply');
    const id = await subscribed(page, () => watch.button.click());
    expect((await ui.answer()).value).toMatch(/^\d+$/);
    // Deleted by its owner elsewhere (this machine's address, as the page's): its stream ends.
    expect((await request(`${gw.url}/subscriptions/${id}`, { method: 'DELETE' })).status).toBe(200);
    await ui.result
      .getByRole('alert')
      .filter({ hasText: /^NOT_FOUND: / })
      .waitFor();
    expect(await watch.pressed()).toBe('false');
    expect(await watch.line.textContent()).toBe('Stopped watching: NOT_FOUND (see the Result).');
  });

  it('deletes its subscription when the page is left', async () => {
    const { page } = browser;
    const ui = explorer(page);
    await page.goto(`${gw.url}/explorer`);
    await ui.load(TOKEN, 'get-decimals');
    const id = await subscribed(page, () => watchOf(page, 'get-decimals').button.click());
    expect((await ui.answer()).value).toBe('6');
    expect(await held(id)).toBe(true);
    await page.goto(`${gw.url}/ready`);
    await expect.poll(() => held(id)).toBe(false);
  });

  it('keeps watching across a restart of the gateway, which forgot the subscription', async () => {
    const { page } = browser;
    const ui = explorer(page);
    const who = devnet.accounts.wallet_8;
    await page.goto(`${gw.url}/explorer`);
    await ui.load(TOKEN, 'get-balance');
    await ui.fn('get-balance').getByRole('textbox', { name: 'who', exact: true }).fill(who);
    const watch = watchOf(page, 'get-balance');
    await subscribed(page, () => watch.button.click());
    expect((await ui.answer()).value).toBe('0');

    // Subscriptions are kept in memory here: the new gateway refuses the old one's stream, and
    // the page subscribes again.
    const resubscribed = subscribed(page, async () => {
      await gw.close();
      gw = await startGateway(gatewayEnv);
    });
    await resubscribed;
    const changedAt = await transfer(5, who);
    await shown(page, '5');
    await watch.line.filter({ hasText: `Watching: read at ${block(changedAt)}` }).waitFor();
    expect(await watch.pressed()).toBe('true');
    expect((await ui.answer()).tipHeight).toBe(String(changedAt));
  });

  it('never made a request outside the gateway, nor threw', () => {
    const origin = new URL(gw.url).origin;
    expect(browser.requests.filter((u) => !u.startsWith(`${origin}/`) && !u.startsWith('data:'))).toEqual([]);
    expect(browser.pageErrors).toEqual([]);
  });
});
