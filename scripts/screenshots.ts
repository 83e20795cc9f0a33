/**
 * `npm run screenshots`: the pictures in the README, made by a real browser on the real page.
 * Starts the local chain and a gateway in front of it, opens the explorer in Debian's Chromium
 * (playwright-core, no browser download) at 1280 px and 390 px, loads the demo token, calls
 * get-balance twice (the second answer from the cache), and saves docs/images/explorer-*.png;
 * then the /ready page for people, docs/images/ready-390.png. Run it again after changing the
 * page to keep the pictures current.
 */
import path from 'node:path';
import { createGateway } from '../src/app.js';
import { loadConfig } from '../src/config/index.js';
import { startDevnet } from '../src/devnet/index.js';
import { explorer, launchBrowser } from '../test/support/browser.js';

const OUT = path.resolve(import.meta.dirname, '..', 'docs', 'images');

async function main(): Promise<void> {
  const devnet = await startDevnet({ port: 0 });
  const gateway = await createGateway(
    loadConfig({
      HOST: '127.0.0.1',
      PORT: '0',
      CACHE_STORE: 'memory',
      LOG_LEVEL: 'silent',
      STACKS_API_URL_MAINNET: devnet.url,
      STACKS_API_URL_TESTNET: devnet.url,
      UPSTREAM_RATE_LIMIT_PER_MINUTE: '100000',
    }),
  );
  const url = await gateway.app.listen({ port: 0, host: '127.0.0.1' });
  const browser = await launchBrowser();
  try {
    const contract = `${devnet.deployer}.demo-token`;
    const who = devnet.accounts.wallet_1 as string;
    for (const width of [1280, 390]) {
      const page = browser.page;
      await page.setViewportSize({ width, height: width === 390 ? 1400 : 1000 });
      await page.goto(`${url}/explorer`);
      const ui = explorer(page);
      await ui.load(contract, 'get-balance');
      await ui.call('get-balance', { who: `'${who}` }).catch(() => undefined);
      await ui.call('get-balance', { who: `'${who}` }).catch(() => undefined);
      await page.screenshot({ path: path.join(OUT, `explorer-${width}.png`), fullPage: width === 390 });
      console.log(`docs/images/explorer-${width}.png`);
    }
    await browser.page.setViewportSize({ width: 390, height: 900 });
    await browser.page.goto(`${url}/ready`);
    await browser.page.screenshot({ path: path.join(OUT, 'ready-390.png'), fullPage: true });
    console.log('docs/images/ready-390.png');
  } finally {
    await browser.close();
    await gateway.close();
    await devnet.close();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
