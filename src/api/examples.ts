/**
 * The request examples of the OpenAPI document, which Swagger UI (/docs) fills into "Try it
 * out". They name the demo devnet's contracts (`npm run demo`: src/devnet deploys
 * contracts/*.clar from this deployer), so that each one succeeds as it stands against the
 * demo; test/devnet/openapi-examples.test.ts sends every one to a gateway on the devnet.
 * None sets `network`: it is inferred from the address, and a prefilled one could contradict it.
 *
 * Literal strings, not imports from src/devnet: the production server never loads the devnet.
 */

/** The devnet deployer (a testnet address): src/devnet/accounts.ts DEPLOYER. */
const EXAMPLE_ADDRESS = 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM';
/** The devnet's wallet_1, which holds demo tokens. */
export const EXAMPLE_HOLDER = 'ST1SJ3DTE5DN7X54YDH5D64R3BCB6A2AG2ZQ8YPD5';
/** EXAMPLE_HOLDER serialized (`cvToHex(Cl.principal(EXAMPLE_HOLDER))`), for the node-compatible call-read. */
export const EXAMPLE_HOLDER_HEX = '0x051a7321b74e2b6a7e949e6c4ad313035b1665095017';
const EXAMPLE_CONTRACT = 'demo-token';
const EXAMPLE_FUNCTION = 'get-balance';
export const EXAMPLE_CONTRACT_ID = `${EXAMPLE_ADDRESS}.${EXAMPLE_CONTRACT}`;

/** A read-only call of demo-token's get-balance for wallet_1: `(ok u500000000000)` on a fresh devnet. */
export const EXAMPLE_READ_ONLY_BODY = {
  functionArgs: [{ type: 'principal', value: EXAMPLE_HOLDER }],
};

export const EXAMPLE_DECODE_BODY = {
  clarityValue: { type: 'responseOk', value: { type: 'uint', value: '42' } },
};

/** Path parameter examples, by parameter name. */
export const EXAMPLE_PATH_PARAMS = {
  contractAddress: EXAMPLE_ADDRESS,
  contractName: EXAMPLE_CONTRACT,
  functionName: EXAMPLE_FUNCTION,
  contractId: EXAMPLE_CONTRACT_ID,
} as const;
