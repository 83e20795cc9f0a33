/**
 * The explorer page in a real browser (chromium via playwright-core) against the gateway on
 * the fake node: every kind of argument, the Result region with Cache-Status (miss, then
 * hit), errors, the known-contracts list, the decode tool, the keyboard, and no request
 * leaving the gateway's origin.
 */
import { Cl, deserializeCV, serializeCV } from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, explorer, launchBrowser } from '../support/browser.js';
import { type FakeNode, startFakeNode } from '../support/fake-node.js';
import { hex, MAINNET_ADDR, OTHER_ADDR, SAMPLE_ABI } from '../support/fixtures.js';
import { type RunningGateway, request, startGateway, testEnv } from '../support/gateway.js';

const EXPLORER_ABI = {
  functions: [
    {
      name: 'get-balance',
      access: 'read_only',
      args: [{ name: 'who', type: 'principal' }],
      outputs: { type: { response: { ok: 'uint128', error: 'none' } } },
    },
    {
      name: 'echo',
      access: 'read_only',
      args: [
        { name: 'amount', type: 'uint128' },
        { name: 'owner', type: 'principal' },
        { name: 'memo', type: { 'string-ascii': { length: 20 } } },
        { name: 'note', type: { 'string-utf8': { length: 20 } } },
        { name: 'maybe', type: { optional: 'uint128' } },
        { name: 'ids', type: { list: { type: 'uint128', length: 5 } } },
        {
          name: 'pair',
          type: {
            tuple: [
              { name: 'a', type: 'uint128' },
              { name: 's', type: { 'string-ascii': { length: 5 } } },
            ],
          },
        },
      ],
      outputs: { type: 'bool' },
    },
    {
      name: 'fails',
      access: 'read_only',
      args: [],
      outputs: { type: { response: { ok: 'bool', error: 'uint128' } } },
    },
    { name: 'transfer', access: 'public', args: [], outputs: { type: 'bool' } },
  ],
  variables: [],
  maps: [],
  fungible_tokens: [],
  non_fungible_tokens: [],
  epoch: 'Epoch31',
  clarity_version: 'Clarity3',
};

const CONTRACT = `${MAINNET_ADDR}.explorer-demo`;
const OTHER = `${OTHER_ADDR}.demo`;
let node: FakeNode;
let gw: RunningGateway;
let browser: Browser;

beforeAll(async () => {
  node = await startFakeNode({ tipHeight: 4242 });
  node.setAbi(MAINNET_ADDR, 'explorer-demo', EXPLORER_ABI);
  node.setAbi(OTHER_ADDR, 'demo', SAMPLE_ABI);
  node.setReadOnly(MAINNET_ADDR, 'explorer-demo', 'get-balance', {
    okay: true,
    result: hex(Cl.ok(Cl.uint(1000))),
  });
  // Answers with the arguments it received, decoded: what the page sent is what is shown.
  node.setReadOnly(MAINNET_ADDR, 'explorer-demo', 'echo', (call) => {
    const names = ['amount', 'owner', 'memo', 'note', 'maybe', 'ids', 'pair'];
    const fields = Object.fromEntries(call.arguments.map((a, i) => [names[i]!, deserializeCV(a)]));
    return { okay: true, result: `0x${serializeCV(Cl.tuple(fields))}` };
  });
  node.setReadOnly(MAINNET_ADDR, 'explorer-demo', 'fails', { okay: true, result: hex(Cl.error(Cl.uint(7))) });
  node.setReadOnly(OTHER_ADDR, 'demo', 'get-info', { okay: true, result: hex(Cl.tuple({ n: Cl.uint(1) })) });
  gw = await startGateway(testEnv(node.url, { UPSTREAM_RETRIES: '0' }));
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await gw?.close();
  await node?.close();
});

describe('the explorer page on the fake node', () => {
  it('is served with hashed, immutable assets and an uncached page', async () => {
    const page = await request(`${gw.url}/explorer`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('cache-control')).toBe('no-cache');
    const assets = [...String(page.body).matchAll(/(explorer\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(assets).toHaveLength(2);
    for (const asset of assets) {
      expect(asset).toMatch(/^explorer\/assets\/(app|style)\.[0-9a-f]{10}\.(js|css)$/);
      const res = await fetch(`${gw.url}/${asset}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      await res.arrayBuffer();
    }
    const missing = await request(`${gw.url}/explorer/assets/app.0000000000.js`);
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('NOT_FOUND');
  });

  it('loads a contract and calls functions with every kind of argument', async () => {
    const { page } = browser;
    const ui = explorer(page);
    await page.goto(`${gw.url}/explorer`);
    await ui.load(CONTRACT, 'get-balance');
    // One region per read-only function, none for public ones; each argument has its field.
    expect(await ui.fn('echo').getByRole('heading', { name: 'echo' }).count()).toBe(1);
    expect(await ui.fn('fails').count()).toBe(1);
    expect(await ui.fn('transfer').count()).toBe(0);
    const pairField = ui.fn('echo').getByRole('textbox', { name: 'pair', exact: true });
    expect(await pairField.getAttribute('aria-describedby')).toBeTruthy();
    expect(await ui.fn('echo').textContent()).toContain('{a: uint, s: (string-ascii 5)}');

    const first = await ui.call('get-balance', { who: MAINNET_ADDR });
    expect(first.error).toBeUndefined();
    expect(first.value).toBe('1000');
    expect(first.cacheStatus).toMatch(/fwd=miss/);
    const second = await ui.call('get-balance', { who: MAINNET_ADDR });
    expect(second.value).toBe('1000');
    expect(second.cacheStatus).toMatch(/hit/);
    expect(second.age).toMatch(/^\d+ s$/);
    // The tip height shown is the gateway's X-Canonical-Stacks-Tip-Height, or a dash without one.
    const direct = await request(
      `${gw.url}/contract-calls/read-only/${MAINNET_ADDR}/explorer-demo/get-balance`,
      {
        body: { functionArgs: [{ type: 'principal', value: MAINNET_ADDR }] },
      },
    );
    expect(second.tipHeight).toBe(direct.headers.get('x-canonical-stacks-tip-height') ?? '—');

    const echoed = await ui.call('echo', {
      amount: 'u100',
      owner: `${MAINNET_ADDR}.explorer-demo`,
      memo: 'plain text',
      note: 'u"héllo"',
      maybe: '(some u5)',
      ids: '(list u1 u2 u3)',
      pair: '{a: u1, s: "x"}',
    });
    expect(echoed.error).toBeUndefined();
    expect(echoed.value).toEqual({
      amount: '100',
      owner: `${MAINNET_ADDR}.explorer-demo`,
      memo: 'plain text',
      note: 'héllo',
      maybe: '5',
      ids: ['1', '2', '3'],
      pair: { a: '1', s: 'x' },
    });
    // JSON for composite types, a bare value for an optional, an empty optional as none.
    const json = await ui.call('echo', {
      amount: '7',
      owner: `'${MAINNET_ADDR}`,
      memo: '"quoted \\"x\\""',
      note: 'ü',
      maybe: '',
      ids: '[4, "5"]',
      pair: '{"a": 2, "s": "y"}',
    });
    expect(json.value).toEqual({
      amount: '7',
      owner: MAINNET_ADDR,
      memo: 'quoted "x"',
      note: 'ü',
      maybe: null,
      ids: ['4', '5'],
      pair: { a: '2', s: 'y' },
    });
  });

  it('shows errors with their code and message, and keeps working', async () => {
    const { page } = browser;
    const ui = explorer(page);
    await page.goto(`${gw.url}/explorer`);
    await ui.load(CONTRACT, 'fails');
    const failed = await ui.call('fails');
    expect(failed.error).toMatch(/^CONTRACT_ERROR: /);
    expect(failed.text).toContain('"value": "7"');

    // A malformed literal is refused in the page, naming the position; nothing is sent.
    const before = browser.requests.length;
    const bad = await ui.call('get-balance', { who: '(list u1' });
    expect(bad.error).toMatch(/^VALIDATION_ERROR: who: .*position/);
    expect(
      await ui.fn('get-balance').getByRole('textbox', { name: 'who' }).getAttribute('aria-invalid'),
    ).toBe('true');
    expect(browser.requests.length).toBe(before);

    // The gateway's own validation: a uint where a principal is expected never reaches it,
    // a bad address does and comes back as an envelope.
    const badAddress = await ui.call('get-balance', { who: 'SPNOTANADDRESSATALL00000' });
    expect(badAddress.error).toMatch(/^(VALIDATION_ERROR|INVALID_ARGUMENTS): /);

    // An unknown contract: the Load answer is an error envelope, shown the same way.
    await page.getByRole('textbox', { name: 'Contract', exact: true }).fill(`${MAINNET_ADDR}.missing`);
    await page.getByRole('button', { name: 'Load', exact: true }).click();
    const missing = await ui.answer();
    expect(missing.error).toMatch(/^UPSTREAM_API_ERROR: /);

    // And it still works afterwards.
    await ui.load(CONTRACT, 'get-balance');
    expect((await ui.call('get-balance', { who: MAINNET_ADDR })).value).toBe('1000');
    expect(browser.pageErrors).toEqual([]);
  });

  it('lists the known contracts, each loading its contract', async () => {
    await request(`${gw.url}/contract-calls/abi/${OTHER_ADDR}/demo`);
    const { page } = browser;
    const ui = explorer(page);
    await page.goto(`${gw.url}/explorer`);
    const list = page.getByRole('list', { name: 'Known contracts' });
    const entry = list.getByRole('link', { name: OTHER, exact: true });
    await entry.waitFor();
    expect(await list.getByRole('link', { name: CONTRACT, exact: true }).count()).toBe(1);
    await entry.click();
    await ui.fn('get-info').waitFor();
    expect(await page.getByRole('textbox', { name: 'Contract', exact: true }).inputValue()).toBe(OTHER);
    expect((await ui.call('get-info')).value).toEqual({ n: '1' });
  });

  it('decodes values with the decode tool, errors included', async () => {
    const { page } = browser;
    const ui = explorer(page);
    await page.goto(`${gw.url}/explorer`);
    expect((await ui.decode(hex(Cl.stringAscii('hello')))).value).toBe('hello');
    expect((await ui.decode('{"type":"uint","value":"42"}')).value).toBe(42);
    expect((await ui.decode('0xzz')).error).toMatch(/^INVALID_HEX_STRING: /);
  });

  it('is usable from the keyboard alone', async () => {
    const { page } = browser;
    const ui = explorer(page);
    await page.goto(`${gw.url}/explorer`);
    await page.getByRole('textbox', { name: 'Contract', exact: true }).focus();
    await page.keyboard.type(CONTRACT);
    await page.keyboard.press('Enter');
    await ui.fn('get-balance').waitFor();
    // Tab from the Load button reaches the Sender and API key fields, then the first function's first field.
    await page.getByRole('button', { name: 'Load', exact: true }).focus();
    // Runs in the page; typed structurally because the test program has no DOM library.
    type PageGlobal = { document: { activeElement: { getAttribute(n: string): string | null } | null } };
    const focused = () =>
      page.evaluate(() => (globalThis as unknown as PageGlobal).document.activeElement?.getAttribute('name'));
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('sender');
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('api-key');
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('who');
    await page.keyboard.type(MAINNET_ADDR);
    await page.keyboard.press('Enter');
    expect((await ui.answer()).value).toBe('1000');
  });

  it('never made a request outside the gateway, nor threw', () => {
    const origin = new URL(gw.url).origin;
    const elsewhere = browser.requests.filter((u) => !u.startsWith(`${origin}/`) && !u.startsWith('data:'));
    expect(browser.requests.length).toBeGreaterThan(10);
    expect(elsewhere).toEqual([]);
    expect(browser.pageErrors, JSON.stringify(browser.pageErrors)).toEqual([]);
  });
});

describe('the contract in the URL', () => {
  it('opens a link to a contract, and Back and Forward move between loaded contracts', async () => {
    const page = browser.page;
    const ui = explorer(page);
    // A link to a contract loads it.
    await page.goto(`${gw.url}/explorer#${encodeURIComponent(CONTRACT)}`);
    await ui.fn('get-balance').waitFor();
    // Loading another one is a history entry.
    await ui.load(OTHER, 'get-info');
    expect(decodeURIComponent(new URL(page.url()).hash.slice(1))).toBe(OTHER);
    await page.goBack();
    await ui.fn('get-balance').waitFor();
    expect(await page.getByRole('textbox', { name: 'Contract', exact: true }).inputValue()).toBe(CONTRACT);
    await page.goForward();
    await ui.fn('get-info').waitFor();
    expect(await page.getByRole('textbox', { name: 'Contract', exact: true }).inputValue()).toBe(OTHER);
  });
});
