/** A sample contract for the fake node: its ABI and node-style answers. */
import { Cl, type ClarityValue, serializeCV } from '@stacks/transactions';

export const MAINNET_ADDR = 'SP3K8BC0PPEVCV7NZ6QSRWPQ2JE9E5B6N3PA0KBR9';
export const TESTNET_ADDR = 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM';
export const OTHER_ADDR = 'SP2J6ZY48GV1EZ5V2V5RB9MP66SW86PYKKNRV9EJ7';

export function hex(cv: ClarityValue): string {
  return `0x${serializeCV(cv)}`;
}

/**
 * `demo::get-n`: one read-only function that the integration tests' fake nodes answer with its
 * own uint argument (so a distinct argument is a distinct miss, and a lie is easy to tell).
 */
export const GET_N_ABI = {
  functions: [
    {
      name: 'get-n',
      access: 'read_only',
      args: [{ name: 'n', type: 'uint128' }],
      outputs: { type: 'uint128' },
    },
  ],
  variables: [],
  maps: [],
  fungible_tokens: [],
  non_fungible_tokens: [],
};

export const SAMPLE_ABI = {
  functions: [
    { name: 'get-info', access: 'read_only', args: [], outputs: { type: { tuple: [] } } },
    {
      name: 'get-balance',
      access: 'read_only',
      args: [{ name: 'who', type: 'principal' }],
      outputs: { type: { response: { ok: 'uint128', error: 'none' } } },
    },
    {
      name: 'typed',
      access: 'read_only',
      args: [
        { name: 'n', type: 'int128' },
        { name: 'b', type: { buffer: { length: 4 } } },
        { name: 'l', type: { list: { type: 'uint128', length: 3 } } },
        { name: 'o', type: { optional: 'bool' } },
        {
          name: 't',
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
    { name: 'secret', access: 'private', args: [], outputs: { type: 'bool' } },
    {
      name: 'transfer',
      access: 'public',
      args: [],
      outputs: { type: { response: { ok: 'bool', error: 'uint128' } } },
    },
  ],
  variables: [{ name: 'owner', type: 'principal', access: 'constant' }],
  maps: [{ name: 'balances', key: 'principal', value: 'uint128' }],
  fungible_tokens: [{ name: 'demo' }],
  non_fungible_tokens: [],
  epoch: 'Epoch31',
  clarity_version: 'Clarity3',
};

export const INFO_VALUE = Cl.tuple({
  height: Cl.uint(123456n),
  supply: Cl.uint(2n ** 100n),
  delta: Cl.int(-5n),
  owner: Cl.standardPrincipal(MAINNET_ADDR),
  token: Cl.contractPrincipal(MAINNET_ADDR, 'demo'),
  memo: Cl.some(Cl.bufferFromHex('cafe')),
  nothing: Cl.none(),
  names: Cl.list([Cl.stringAscii('a'), Cl.stringUtf8('ü')]),
  constructor: Cl.bool(true),
  hasOwnProperty: Cl.uint(1),
});
