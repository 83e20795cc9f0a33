/**
 * Chain-aware freshness against the devnet (the real Clarity VM): a read pinned to a past
 * block, a maxBlocks 0 read that follows a new block, and a stale-if-error answer while the
 * node is stopped. The gateway runs in-process over real HTTP.
 */
import { Cl } from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { type RunningGateway, request, startGateway, testEnv } from '../support/gateway.js';
import { callPublic, http } from './helpers.js';

let devnet: Devnet;
let gw: RunningGateway;
let D: string;
let W1: string;
let W3: string;

beforeAll(async () => {
  devnet = await startDevnet({ port: 0 });
  D = devnet.deployer;
  W1 = devnet.accounts.wallet_1;
  W3 = devnet.accounts.wallet_3;
  // Every block-bounded read asks /v2/info: the devnet mines only when told to.
  gw = await startGateway(
    testEnv(devnet.url, {
      CHAIN_TIP_MAX_AGE_MS: '0',
      UPSTREAM_TIMEOUT_MS: '30000',
      UPSTREAM_RETRY_BASE_MS: '10',
    }),
  );
}, 90_000);

afterAll(async () => {
  await gw?.close();
  await devnet?.close();
});

const balanceOfW3 = (body: Record<string, unknown> = {}) =>
  request(`${gw.url}/contract-calls/read-only/${D}/demo-token/get-balance`, {
    body: { functionArgs: [{ type: 'principal', value: W3 }], strictJsonCompat: false, ...body },
  });

async function transferToW3(amount: number): Promise<void> {
  const res = await callPublic(devnet.url, {
    sender: W1,
    contract: `${D}.demo-token`,
    function: 'transfer',
    arguments: [Cl.uint(amount), Cl.principal(W1), Cl.principal(W3), Cl.none()],
  });
  expect(res.status).toBe(200);
  expect(res.json.committed).toBe(true);
}

describe('freshness against the devnet', () => {
  it('pins a read to a past block, and follows the chain with maxBlocks 0', async () => {
    const before = await balanceOfW3();
    expect(before.status).toBe(200);
    const heightBefore = devnet.tipHeight();
    const block = (await http(`${devnet.url}/devnet/blocks/${heightBefore}`)).json;
    await transferToW3(1_000_000);

    // The default: the cached answer stays, the chain moved.
    expect((await balanceOfW3()).body).toEqual(before.body);
    // maxBlocks 0: the gateway learns the new tip and reads again.
    const now = await balanceOfW3({ cacheControl: { maxBlocks: 0 } });
    expect(now.headers.get('cache-status')).toBe('clarity-cache; fwd=stale; stored');
    expect(now.body.data).toBe(before.body.data + 1_000_000);
    expect(now.headers.get('x-canonical-stacks-tip-height')).toBe(String(devnet.tipHeight()));

    // Pinned at the block before the transfer: the old balance, with that block's height.
    const pinned = await balanceOfW3({ tip: `0x${block.indexBlockHash.toUpperCase()}` });
    expect(pinned.status).toBe(200);
    expect(pinned.body.data).toBe(before.body.data);
    // An unknown block is a 404 naming the tip.
    const unknown = await balanceOfW3({ tip: 'cd'.repeat(32) });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.details.tip).toBe('cd'.repeat(32));
  });

  it('answers stale-if-error while the node is stopped', async () => {
    const cached = await balanceOfW3();
    expect(cached.status).toBe(200);
    const outage = await http(`${devnet.url}/devnet/outage`, { body: { seconds: 30 } });
    expect(outage.status).toBe(200);
    const stale = await balanceOfW3({ cacheControl: { maxBlocks: 0, staleIfError: 60 } });
    expect(stale.status).toBe(200);
    expect(stale.body.data).toBe(cached.body.data);
    expect(stale.headers.get('cache-status')).toContain('detail=stale-if-error');
    // Without the window, the node being down is an error.
    const down = await balanceOfW3({ cacheControl: { maxBlocks: 0 } });
    expect(down.status).toBe(502);
  });
});
