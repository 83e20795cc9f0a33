/**
 * The explorer on a phone (390 x 844, in real Chromium, against the gateway on the fake node):
 * the Result region sits below every function, far under the Call button, so when a call ends,
 * in success or in error, the person is taken there (focus on the region, scrolled into view);
 * unless they moved on to another field while waiting, which keeps its focus.
 */
import { Cl } from '@stacks/transactions';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, explorer, launchBrowser } from '../support/browser.js';
import { type FakeNode, startFakeNode } from '../support/fake-node.js';
import { hex, MAINNET_ADDR } from '../support/fixtures.js';
import { type RunningGateway, startGateway, testEnv } from '../support/gateway.js';

/** Enough functions, each with a few fields, to put the Result region well below the screen. */
const NAMES = ['get-balance', 'get-owner', 'get-info', 'get-config', 'get-history', 'slow'];
const ABI = {
  functions: [
    ...NAMES.map((name) => ({
      name,
      access: 'read_only',
      args: [
        { name: 'who', type: 'principal' },
        { name: 'amount', type: 'uint128' },
        { name: 'memo', type: { 'string-ascii': { length: 20 } } },
      ],
      outputs: { type: { response: { ok: 'uint128', error: 'uint128' } } },
    })),
    {
      name: 'fails',
      access: 'read_only',
      args: [],
      outputs: { type: { response: { ok: 'bool', error: 'uint128' } } },
    },
  ],
  variables: [],
  maps: [],
  fungible_tokens: [],
  non_fungible_tokens: [],
  epoch: 'Epoch31',
  clarity_version: 'Clarity3',
};
const CONTRACT = `${MAINNET_ADDR}.phone-demo`;
const ARGS = { who: MAINNET_ADDR, amount: 'u5', memo: 'hi' };

let node: FakeNode;
let gw: RunningGateway;
let browser: Browser;
interface Signal {
  readonly promise: Promise<void>;
  resolve(): void;
}
function signal(): Signal {
  let resolve = () => {};
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** The slow function's call, held until the test lets it answer. */
let slowArrived = signal();
let slowAnswer = signal();

beforeAll(async () => {
  node = await startFakeNode({ tipHeight: 500 });
  node.setAbi(MAINNET_ADDR, 'phone-demo', ABI);
  for (const name of NAMES.slice(0, -1))
    node.setReadOnly(MAINNET_ADDR, 'phone-demo', name, { okay: true, result: hex(Cl.ok(Cl.uint(42))) });
  node.setReadOnly(MAINNET_ADDR, 'phone-demo', 'slow', async () => {
    slowArrived.resolve();
    await slowAnswer.promise;
    return { okay: true, result: hex(Cl.ok(Cl.uint(7))) };
  });
  node.setReadOnly(MAINNET_ADDR, 'phone-demo', 'fails', { okay: true, result: hex(Cl.error(Cl.uint(3))) });
  gw = await startGateway(testEnv(node.url, { UPSTREAM_RETRIES: '0' }));
  browser = await launchBrowser();
  await browser.page.setViewportSize({ width: 390, height: 844 });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await gw?.close();
  await node?.close();
});

/** Where the Result region is on the screen, and whether focus is on it or inside it. */
async function resultPlace(page: Page) {
  // Runs in the page; typed structurally because the test program has no DOM library.
  type El = { getBoundingClientRect(): { top: number; bottom: number }; contains(e: unknown): boolean };
  type Doc = { getElementById(id: string): El; activeElement: unknown };
  return page.evaluate(() => {
    const g = globalThis as unknown as { document: Doc; innerHeight: number };
    const region = g.document.getElementById('result');
    const box = region.getBoundingClientRect();
    return {
      top: box.top,
      bottom: box.bottom,
      viewport: g.innerHeight,
      // Whole within the screen, give or take the fraction of a pixel the layout rounds away.
      inView: box.top >= -1 && box.bottom <= g.innerHeight + 1,
      focused: region.contains(g.document.activeElement),
    };
  });
}

async function openContract(page: Page): Promise<void> {
  await page.goto(`${gw.url}/explorer`);
  await explorer(page).load(CONTRACT, 'fails');
  // As a person finds it: the page at its top, the Result region far below the screen.
  await page.evaluate(() =>
    (globalThis as unknown as { scrollTo(x: number, y: number): void }).scrollTo(0, 0),
  );
  const before = await resultPlace(page);
  expect(before.top).toBeGreaterThan(before.viewport);
  expect(before.focused).toBe(false);
}

describe('on a 390 x 844 phone, when a call ends', () => {
  it('takes the person to the answer: the Result region in view and focused', async () => {
    const { page } = browser;
    const ui = explorer(page);
    await openContract(page);
    const answer = await ui.call('get-balance', ARGS);
    expect(answer.value).toBe('42');
    const after = await resultPlace(page);
    expect(after.inView, JSON.stringify(after)).toBe(true);
    expect(after.focused).toBe(true);
    // The region a screen reader lands on says what it is.
    expect(await ui.result.getAttribute('tabindex')).toBe('-1');
    expect(await page.getByRole('region', { name: 'Result', exact: true }).count()).toBe(1);

    // Safari does not focus a tapped button: focus is still on the Result region when the next
    // call is made, from the top of the page. That answer is shown too.
    await page.evaluate(() =>
      (globalThis as unknown as { scrollTo(x: number, y: number): void }).scrollTo(0, 0),
    );
    const region = ui.fn('get-info');
    for (const [name, value] of Object.entries(ARGS))
      await region.getByRole('textbox', { name, exact: true }).fill(value);
    await ui.result.focus();
    await page.evaluate(() =>
      (globalThis as unknown as { scrollTo(x: number, y: number): void }).scrollTo(0, 0),
    );
    expect((await resultPlace(page)).inView).toBe(false);
    await region
      .locator('form')
      .evaluate((form) => (form as unknown as { requestSubmit(): void }).requestSubmit());
    expect((await ui.answer()).value).toBe('42');
    const next = await resultPlace(page);
    expect([next.inView, next.focused], JSON.stringify(next)).toEqual([true, true]);
  });

  it('does so for an error too, the contract’s or a field the page refused', async () => {
    const { page } = browser;
    const ui = explorer(page);
    await openContract(page);
    const failed = await ui.call('fails');
    expect(failed.error).toMatch(/^CONTRACT_ERROR: /);
    let after = await resultPlace(page);
    expect([after.inView, after.focused], JSON.stringify(after)).toEqual([true, true]);

    // Back at the top, a field the page refuses before sending anything: the message is in the
    // Result region, and that is where the person is taken; the field stays marked invalid.
    await page.evaluate(() =>
      (globalThis as unknown as { scrollTo(x: number, y: number): void }).scrollTo(0, 0),
    );
    const refused = await ui.call('get-owner', { ...ARGS, amount: '(list u1' });
    expect(refused.error).toMatch(/^VALIDATION_ERROR: amount: /);
    after = await resultPlace(page);
    expect([after.inView, after.focused], JSON.stringify(after)).toEqual([true, true]);
    const field = ui.fn('get-owner').getByRole('textbox', { name: 'amount', exact: true });
    expect(await field.getAttribute('aria-invalid')).toBe('true');
  });

  it('leaves focus where the person put it while waiting', async () => {
    const { page } = browser;
    const ui = explorer(page);
    await openContract(page);
    slowArrived = signal();
    slowAnswer = signal();
    const region = ui.fn('slow');
    for (const [name, value] of Object.entries(ARGS))
      await region.getByRole('textbox', { name, exact: true }).fill(value);
    await region.getByRole('button', { name: 'Call', exact: true }).click();
    await slowArrived.promise;
    // While the node thinks, the person goes on to another contract's name.
    const contractField = page.getByRole('textbox', { name: 'Contract', exact: true });
    await contractField.focus();
    slowAnswer.resolve();
    expect((await ui.answer()).value).toBe('7');
    type Doc = { activeElement: { id: string } | null };
    const focusedId = await page.evaluate(
      () => (globalThis as unknown as { document: Doc }).document.activeElement?.id,
    );
    expect(focusedId).toBe('contract');
  });

  it('never threw', () => {
    expect(browser.pageErrors).toEqual([]);
  });
});
