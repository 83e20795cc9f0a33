/**
 * The local chain as the gateway's observed node (docs/events.md): every block the devnet makes
 * (on the real Clarity VM) is posted as /new_block to the gateway's observer listener over real
 * HTTP, and the gateway follows it: tip at once, the block's touched contracts recorded.
 */
import { readFile } from 'node:fs/promises';
import { Cl } from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { type RunningGateway, startGateway, testEnv } from '../support/gateway.js';
import { callPublic, http, mine } from './helpers.js';

let devnet: Devnet;
let gw: RunningGateway;

beforeAll(async () => {
  // The gateway reads contract sources from the repository's contracts/ (the devnet deploys them).
  const contractSource = async (contractId: string) =>
    readFile(`contracts/${contractId.split('.')[1]}.clar`, 'utf8');
  // Its upstream is not needed here: only the observer listener is exercised.
  gw = await startGateway(
    testEnv('http://127.0.0.1:9', { EVENT_OBSERVER_PORT: '0', EVENT_OBSERVER_NETWORK: 'testnet' }),
    { contractSource },
  );
  devnet = await startDevnet({ port: 0, eventObserverUrls: [`http://${gw.gateway.observer!.address}`] });
}, 90_000);

afterAll(async () => {
  await devnet?.close();
  await gw?.close();
});

describe('devnet blocks posted to the observer', () => {
  it('a public call moves the tip at once and touches only its contract', async () => {
    const follower = gw.gateway.observer!.follower;
    const ledger = gw.gateway.observer!.ledger;
    const D = devnet.deployer;
    const before = follower.handled;
    const call = await callPublic(devnet.url, {
      sender: D,
      contract: 'demo-token',
      function: 'transfer',
      arguments: [Cl.uint(1), Cl.principal(D), Cl.principal(devnet.accounts.wallet_1), Cl.none()],
    });
    expect(call.status).toBe(200);
    await follower.untilHandled(before + 1);
    const tip = devnet.tipHeight();
    const block = (await http(`${devnet.url}/devnet/blocks/${tip}`)).json as { indexBlockHash: string };
    expect(gw.gateway.chain.known('testnet')).toMatchObject({
      height: tip,
      indexBlockHash: block.indexBlockHash,
    });
    expect(ledger.tip).toMatchObject({ height: tip, indexBlockHash: block.indexBlockHash });
    expect(ledger.tip?.touched).toEqual({ all: false, contracts: new Set([`${D}.demo-token`]) });

    // An empty block extends the run; an entry of an untouched contract read at the call's block stays current.
    const readAt = Date.now();
    await mine(devnet.url, 1);
    await follower.untilHandled(before + 2);
    expect(ledger.tip?.height).toBe(tip + 1);
    expect(ledger.current({ height: tip, readAt, dependsOn: new Set([`${D}.demo-nft`]) }, tip + 1)).toBe(
      true,
    );
    expect(
      ledger.current({ height: tip - 1, readAt, dependsOn: new Set([`${D}.demo-token`]) }, tip + 1),
    ).toBe(false);
  });
});
