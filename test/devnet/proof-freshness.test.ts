/**
 * Freshness by proof over real HTTP (docs/events.md): the gateway reads from the local chain
 * (the real Clarity VM) and is its event observer. With `maxBlocks: 0`, a cached read stays a
 * hit across blocks that did not touch its contract, answered at the new tip height; a block
 * that touches it makes the next read go upstream and show the change at once; an unusable
 * payload (a lost block) ends every proof, and the plain block rule applies again.
 */
import { Cl } from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Devnet } from '../../src/devnet/index.js';
import { type JsonResponse, type RunningGateway, request } from '../support/gateway.js';
import { metricValue, parseMetrics } from '../support/prom.js';
import { blockHandled, demoTokenTransfer } from '../support/watch-helpers.js';
import { callPublic, mine } from './helpers.js';
import { type ObservedDevnet, startObservedDevnet } from './observed.js';

let observed: ObservedDevnet;
let devnet: Devnet;
let gw: RunningGateway;

beforeAll(async () => {
  observed = await startObservedDevnet();
  ({ devnet, gw } = observed);
}, 90_000);

afterAll(async () => {
  await observed?.close();
});

const balance = (who: string): Promise<JsonResponse> =>
  request(`${gw.url}/contract-calls/read-only/${devnet.deployer}/demo-token/get-balance`, {
    body: { functionArgs: [{ type: 'principal', value: who }], cacheControl: { maxBlocks: 0 } },
  });

describe('entries kept current by the observer', () => {
  it('stays a hit across blocks that did not touch it, and goes upstream after one that did', async () => {
    const w3 = devnet.accounts.wallet_3;
    await blockHandled(gw, () => mine(devnet.url, 1));
    const first = await balance(w3);
    expect(first.status).toBe(200);
    expect(first.headers.get('cache-status')).toContain('fwd=');
    const readAt = Number(first.headers.get('x-canonical-stacks-tip-height'));

    // An empty block and a call on another contract: demo-token untouched.
    await blockHandled(gw, () => mine(devnet.url, 1));
    await blockHandled(gw, () =>
      callPublic(devnet.url, {
        sender: devnet.deployer,
        contract: 'demo-nft',
        function: 'mint',
        arguments: [Cl.principal(devnet.accounts.wallet_2)],
      }),
    );
    const kept = await balance(w3);
    expect(kept.status).toBe(200);
    expect(kept.headers.get('cache-status')).toContain('hit');
    expect(kept.body.data).toEqual(first.body.data);
    // Answered at the tip it is proven current at, not the height it was read at.
    expect(Number(kept.headers.get('x-canonical-stacks-tip-height'))).toBe(devnet.tipHeight());
    expect(devnet.tipHeight()).toBeGreaterThan(readAt);
    const metrics = parseMetrics(await (await fetch(`${gw.url}/metrics`)).text());
    expect(
      metricValue(metrics, 'clarity_cache_observer_kept_current_total', { network: 'testnet' }),
    ).toBeGreaterThan(0);

    // A transfer to wallet_3 touches demo-token: the next read shows the change at once.
    await blockHandled(gw, () => demoTokenTransfer(devnet, 5, w3));
    const changed = await balance(w3);
    expect(changed.headers.get('cache-status')).not.toContain('hit');
    expect(changed.body.data).not.toEqual(first.body.data);
  });

  it('falls back to the plain block rule after a lost block (an unusable payload)', async () => {
    const w2 = devnet.accounts.wallet_2;
    const first = await balance(w2);
    expect(first.status).toBe(200);
    // The node posts something the gateway cannot use: it may have been a block.
    const res = await fetch(`http://${gw.gateway.observer!.address}/new_block`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"not":"a block"}',
    });
    expect(res.status).toBe(200);
    await blockHandled(gw, () => mine(devnet.url, 1));
    const after = await balance(w2);
    expect(after.headers.get('cache-status')).not.toContain('hit');
  });
});
