/**
 * The well-known Clarinet devnet accounts (the `settings/Devnet.toml` of every new Clarinet
 * project). Their mnemonics are public test fixtures; never use them on a real network.
 */
export const DEVNET_ACCOUNTS = {
  deployer: 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM',
  wallet_1: 'ST1SJ3DTE5DN7X54YDH5D64R3BCB6A2AG2ZQ8YPD5',
  wallet_2: 'ST2CY5V39NHDPWSXMW9QDT3HC3GD6Q6XX4CFRK9AG',
  wallet_3: 'ST2JHG361ZXG51QTKY2NQCVBPPRRE2KZB1HR05NNC',
  wallet_4: 'ST2NEB84ASENDXKYGJPQW86YXQCEFEX2ZQPG87ND',
  wallet_5: 'ST2REHHS5J3CERCRBEPMGH7921Q6PYKAADT7JP2VB',
  wallet_6: 'ST3AM1A56AK2C1XAFJ4115ZSV26EB49BVQ10MGCS0',
  wallet_7: 'ST3PF13W7Z0RRM42A8VZRVFQ75SV1K26RXEP8YGKJ',
  wallet_8: 'ST3NBRSFKX28FQ2ZJ1MAKX58HKHSDGNV5N7R21XCP',
  faucet: 'STNHKEPYEPJ8ET55ZZ0M5A34J0R3N5FM2CMMMAZ6',
} as const;

export type DevnetAccountName = keyof typeof DEVNET_ACCOUNTS;
export type DevnetAccounts = Readonly<Record<DevnetAccountName, string>>;

export const DEPLOYER = DEVNET_ACCOUNTS.deployer;

/** STX minted to every devnet account at start-up: 100,000,000 STX, as Clarinet's devnet does. */
export const INITIAL_USTX_BALANCE = 100_000_000_000_000n;

/**
 * Private keys of the first devnet accounts (Clarinet's `settings/Devnet.toml`), for signing
 * transactions broadcast to the devnet (POST /v2/transactions). Public fixtures like the
 * addresses above: never hold anything of value with them.
 */
export const DEVNET_PRIVATE_KEYS = {
  deployer: '753b7cc01a1a2e86221266a154af739463fce51219d97e4f856cd7200c3bd2a601',
  wallet_1: '7287ba251d44a4d3fd9276c88ce34c5c52a038955511cccaf77e61068649c17801',
  wallet_2: '530d9f61984c888536871c6573073bdfc0058896dc1adfe9a6a10dfacadc209101',
} as const satisfies Partial<Record<DevnetAccountName, string>>;
