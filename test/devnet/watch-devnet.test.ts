/**
 * Watched reads on the local chain (docs/watch.md): the gateway reads from the devnet (the
 * real Clarity VM) and is its event observer; subscribers hold streams over real HTTP.
 */
import { Cl } from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Devnet } from '../../src/devnet/index.js';
import { type RunningGateway, request } from '../support/gateway.js';
import { openSse, type SseConnection } from '../support/sse.js';
import { blockHandled, demoTokenTransfer } from '../support/watch-helpers.js';
import { callRead, mine } from './helpers.js';
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

const balanceRead = (who: string) => ({
  contractAddress: devnet.deployer,
  contractName: 'demo-token',
  functionName: 'get-balance',
  functionArgs: [{ type: 'principal', value: who }],
});

async function subscribe(reads: unknown[], headers: Record<string, string> = {}) {
  const res = await request(`${gw.url}/subscriptions`, { body: { reads }, headers });
  return res;
}

describe('watched reads on the local chain', () => {
  it('sends every read on connecting, then only the reads a block changed', async () => {
    const w1 = devnet.accounts.wallet_1;
    const w2 = devnet.accounts.wallet_2;
    const created = await subscribe([balanceRead(w1), balanceRead(w2)]);
    expect(created.status).toBe(201);
    const { id, events, reads } = created.body.data;
    expect(id).toMatch(/^[A-Za-z0-9_-]{22,}$/);
    expect(events).toBe(`/subscriptions/${id}/events`);
    expect(reads.map((r: { index: number }) => r.index)).toEqual([0, 1]);
    expect(reads[0].key).not.toBe(reads[1].key);

    const sse: SseConnection = await openSse(`${gw.url}${events}`);
    expect(sse.status).toBe(200);
    expect(sse.headers['content-type']).toContain('text/event-stream');
    expect(sse.headers['cache-control']).toContain('no-cache');
    expect(sse.headers['x-accel-buffering']).toBe('no');
    const first = await sse.next((e) => e.event === 'values');
    expect(sse.retry).toBe(2000);
    expect(first.json.values.map((v: { index: number }) => v.index)).toEqual([0, 1]);
    expect(first.id).toBe(`${first.json.tipHeight}:${first.json.indexBlockHash}`);
    const raw1 = (
      await callRead(devnet.url, `${devnet.deployer}.demo-token`, 'get-balance', [Cl.principal(w1)], w1)
    ).json.result;
    expect(first.json.values[0].raw).toBe(raw1);

    // An empty block changes nothing: no event. A transfer to wallet_1 changes read 0 only.
    await blockHandled(gw, () => mine(devnet.url, 1));
    await blockHandled(gw, () => demoTokenTransfer(devnet, 7, w1));
    const changed = await sse.next((e) => e.event === 'values');
    expect(changed.json.tipHeight).toBe(devnet.tipHeight());
    expect(changed.json.values.map((v: { index: number }) => v.index)).toEqual([0]);
    const now = (
      await callRead(devnet.url, `${devnet.deployer}.demo-token`, 'get-balance', [Cl.principal(w1)], w1)
    ).json.result;
    expect(changed.json.values[0].raw).toBe(now);
    expect(now).not.toBe(raw1);
    sse.close();
  }, 60_000);
});
