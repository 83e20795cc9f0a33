/**
 * A real browser for page tests: Debian's chromium (/usr/bin/chromium, installed by .ci/run)
 * driven by playwright-core, headless, with a fresh profile per launch. Never downloads a
 * browser. Records every request the pages make and every uncaught page error.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type BrowserContext, chromium, type Locator, type Page } from 'playwright-core';

export const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';

export interface Browser {
  readonly context: BrowserContext;
  readonly page: Page;
  /** Every URL the browser requested, in order. */
  readonly requests: string[];
  /** Uncaught exceptions and console errors of the page (other than its failed requests). */
  readonly pageErrors: string[];
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<Browser> {
  const profile = mkdtempSync(path.join(os.tmpdir(), 'clarity-cache-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const requests: string[] = [];
  const pageErrors: string[] = [];
  context.on('request', (r) => requests.push(r.url()));
  const page = context.pages()[0] ?? (await context.newPage());
  page.on('pageerror', (err) => pageErrors.push(err.message));
  page.on('console', (msg) => {
    // The browser logs every non-2xx answer as "Failed to load resource": error envelopes
    // are expected answers here, not page errors.
    if (msg.type() === 'error' && !msg.text().startsWith('Failed to load resource'))
      pageErrors.push(msg.text());
  });
  return {
    context,
    page,
    requests,
    pageErrors,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** The explorer page's parts, by the accessible names docs/explorer.md fixes. */
export function explorer(page: Page) {
  const result = page.getByRole('region', { name: 'Result', exact: true });
  return {
    result,
    /** Load a contract with the Contract field and the Load button; waits for its functions. */
    async load(contractId: string, firstFunction: string): Promise<void> {
      await page.getByRole('textbox', { name: 'Contract', exact: true }).fill(contractId);
      await page.getByRole('button', { name: 'Load', exact: true }).click();
      await this.fn(firstFunction).waitFor();
    },
    fn(name: string): Locator {
      return page.getByRole('region', { name, exact: true });
    },
    /** Fill a function's fields (by argument name), press Call, and wait for the answer. */
    async call(fn: string, args: Record<string, string> = {}): Promise<Answer> {
      const region = this.fn(fn);
      for (const [name, value] of Object.entries(args)) {
        await region.getByRole('textbox', { name, exact: true }).fill(value);
      }
      await region.getByRole('button', { name: 'Call', exact: true }).click();
      return this.answer();
    },
    async decode(value: string): Promise<Answer> {
      await page.getByRole('textbox', { name: 'Clarity value', exact: true }).fill(value);
      await page.getByRole('button', { name: 'Decode', exact: true }).click();
      return this.answer();
    },
    /** The Result region once no answer is pending. */
    async answer(): Promise<Answer> {
      await page.locator('#result[aria-busy="false"]').waitFor();
      const header = async (name: string) => {
        const dd = result
          .locator('dt', { hasText: new RegExp(`^${name}$`) })
          .locator('xpath=following-sibling::dd[1]');
        return (await dd.count()) === 0 ? undefined : ((await dd.textContent()) ?? '').trim();
      };
      const value = result.getByLabel('Value', { exact: true });
      const alert = result.getByRole('alert');
      return {
        text: (await result.textContent()) ?? '',
        value: (await value.count()) === 0 ? undefined : JSON.parse((await value.textContent()) ?? ''),
        error: (await alert.count()) === 0 ? undefined : ((await alert.textContent()) ?? '').trim(),
        cacheStatus: await header('Cache-Status'),
        age: await header('Age'),
        tipHeight: await header('Tip height'),
      };
    },
  };
}

export interface Answer {
  readonly text: string;
  readonly value: unknown;
  /** "CODE: message" when the answer is an error. */
  readonly error: string | undefined;
  readonly cacheStatus: string | undefined;
  readonly age: string | undefined;
  readonly tipHeight: string | undefined;
}

/** A box of the page that reaches past the viewport's edges: what makes a page scroll sideways. */
export interface Overflow {
  readonly element: string;
  readonly left: number;
  readonly right: number;
}

/**
 * Every element sticking out of the viewport sideways, and the document's own scroll width:
 * an empty list and a scroll width no larger than the viewport mean no sideways scrolling.
 */
export async function sidewaysOverflow(
  page: Page,
): Promise<{ scrollWidth: number; width: number; over: Overflow[] }> {
  // Runs in the page; typed structurally because the test program has no DOM library.
  type Rect = { left: number; right: number; width: number; height: number };
  type El = {
    tagName: string;
    id: string;
    className: string;
    getBoundingClientRect(): Rect;
    textContent: string | null;
  };
  type Doc = {
    documentElement: { scrollWidth: number; clientWidth: number };
    querySelectorAll(s: string): El[];
  };
  return page.evaluate(() => {
    const doc = (globalThis as unknown as { document: Doc }).document;
    const width = doc.documentElement.clientWidth;
    const over: Array<{ element: string; left: number; right: number }> = [];
    for (const e of doc.querySelectorAll('body *')) {
      const r = e.getBoundingClientRect();
      if (r.width === 0 && r.height === 0) continue;
      if (r.left < -0.5 || r.right > width + 0.5) {
        const name = `${e.tagName.toLowerCase()}${e.id ? `#${e.id}` : ''}${e.className ? `.${e.className}` : ''}`;
        over.push({
          element: `${name} "${(e.textContent ?? '').slice(0, 40)}"`,
          left: r.left,
          right: r.right,
        });
      }
    }
    return { scrollWidth: doc.documentElement.scrollWidth, width, over };
  });
}
