/**
 * A contract whose state is its block height, on the fake node's chain: `height` answers
 * (ok? no: plain) `u<height of the block read>`, so an answer says at which block it was
 * read, and `fails-at` lets a test break reads. Shared by the freshness tests.
 */
import { Cl, cvToValue, deserializeCV } from '@stacks/transactions';
import type { FakeNode } from '../../support/fake-node.js';
import { hex, MAINNET_ADDR } from '../../support/fixtures.js';

export const CHAIN_ABI = {
  functions: [
    { name: 'height', access: 'read_only', args: [], outputs: { type: 'uint128' } },
    {
      name: 'balance',
      access: 'read_only',
      args: [{ name: 'who', type: 'principal' }],
      outputs: { type: 'uint128' },
    },
  ],
  variables: [],
  maps: [],
  fungible_tokens: [],
  non_fungible_tokens: [],
  epoch: 'Epoch31',
  clarity_version: 'Clarity3',
};

export const CONTRACT = 'chain';

/** Register the contract: `height` answers the height it is read at. */
export function installChainContract(node: FakeNode): void {
  node.setAbi(MAINNET_ADDR, CONTRACT, CHAIN_ABI);
  node.setReadOnly(MAINNET_ADDR, CONTRACT, 'height', ({ height }) => ({
    okay: true,
    result: hex(Cl.uint(height)),
  }));
  node.setReadOnly(MAINNET_ADDR, CONTRACT, 'balance', ({ height }) => ({
    okay: true,
    result: hex(Cl.uint(height * 10)),
  }));
}

export function heightUrl(base: string, fn = 'height'): string {
  return `${base}/contract-calls/read-only/${MAINNET_ADDR}/${CONTRACT}/${fn}`;
}

/** Decode a raw result hex (test helper). */
export function decoded(resultHex: string): unknown {
  return cvToValue(deserializeCV(resultHex));
}
