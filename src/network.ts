/**
 * The networks the gateway serves, at the bottom of the house: every folder may import this
 * file, and it imports nothing of the project. One type, one list, and the c32 address version
 * bytes that tell which network an address belongs to.
 */
export const NETWORKS = ['mainnet', 'testnet'] as const;

export type Network = (typeof NETWORKS)[number];

export function isNetwork(value: string): value is Network {
  return (NETWORKS as readonly string[]).includes(value);
}

/** c32 address version bytes by network: single-sig then multi-sig (SP SM, ST SN). */
export const ADDRESS_VERSIONS: Readonly<Record<Network, readonly [number, number]>> = {
  mainnet: [22, 20],
  testnet: [26, 21],
};

const VERSION_NETWORK: ReadonlyMap<number, Network> = new Map(
  NETWORKS.flatMap((network) => ADDRESS_VERSIONS[network].map((v) => [v, network] as const)),
);

/** The network a c32 version byte belongs to, if it is one of the four Stacks versions. */
export function networkOfVersion(version: number): Network | undefined {
  return VERSION_NETWORK.get(version);
}

/**
 * The network a transaction's version byte names (0x00 mainnet, 0x80 testnet), for a
 * broadcast: it follows the transaction.
 */
export function networkOfTransactionVersion(version: number): Network | undefined {
  if (version === 0x00) return 'mainnet';
  if (version === 0x80) return 'testnet';
  return undefined;
}
