/**
 * Helpers of the watched-reads tests: a block made and applied by the gateway's event observer
 * (so what a test reads next is that block's), the demo token's transfer on the devnet, and
 * client.watch() callbacks that record what they are given.
 */
import { Cl } from '@stacks/transactions';
import { expect } from 'vitest';
import type {
  ClarityCacheError,
  WatchReconnectEvent,
  WatchReset,
  WatchValuesEvent,
} from '../../client/src/index.js';
import type { Devnet } from '../../src/devnet/index.js';
import { callPublic, type HttpResult } from '../devnet/helpers.js';
import type { RunningGateway } from './gateway.js';

/** Runs `makeBlock` (something that makes one block) and resolves once `gw`'s observer has applied it. */
export async function blockHandled(gw: RunningGateway, makeBlock: () => Promise<unknown>): Promise<void> {
  const follower = gw.gateway.observer!.follower;
  const before = follower.handled;
  await makeBlock();
  await follower.untilHandled(before + 1);
}

/** The deployer's call sending `amount` of the demo token to `to`: the devnet makes a block of it. */
export function demoTokenTransfer(devnet: Devnet, amount: number, to: string): Promise<HttpResult> {
  return callPublic(devnet.url, {
    sender: devnet.deployer,
    contract: 'demo-token',
    function: 'transfer',
    arguments: [Cl.uint(amount), Cl.principal(devnet.deployer), Cl.principal(to), Cl.none()],
  });
}

/** A committed transfer of the demo token in a block of its own, once `gw`'s observer has applied it. */
export function transferApplied(
  devnet: Devnet,
  gw: RunningGateway,
  amount: number,
  to: string,
): Promise<void> {
  return blockHandled(gw, async () => {
    // Checked before waiting: a transfer that was not committed would leave the wait to time out.
    expect((await demoTokenTransfer(devnet, amount, to)).json.committed).toBe(true);
  });
}

/** client.watch() callbacks that record what they are given. */
export function watchRecorder() {
  const values: WatchValuesEvent[] = [];
  const errors: ClarityCacheError[] = [];
  const resets: WatchReset[] = [];
  const reconnects: WatchReconnectEvent[] = [];
  return {
    values,
    errors,
    resets,
    reconnects,
    options: {
      onValues: (e: WatchValuesEvent) => {
        values.push(e);
      },
      onError: (e: ClarityCacheError) => {
        errors.push(e);
      },
      onReset: (r: WatchReset) => {
        resets.push(r);
      },
      onReconnect: (r: WatchReconnectEvent) => {
        reconnects.push(r);
      },
    },
  };
}
