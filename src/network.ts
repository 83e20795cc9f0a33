/**
 * The networks the gateway serves, at the bottom of the house: every folder may import this
 * file, and it imports nothing of the project. One type, one list, and the c32 address version
 * bytes that tell which network an address belongs to.
 */
export const NETWORKS = ['mainnet', 'testnet'] as const;

export type Network = (typeof NETWORKS)[number];

/** c32 address version bytes by network: single-sig then multi-sig (SP SM, ST SN). */
const ADDRESS_VERSIONS: Readonly<Record<Network, readonly [number, number]>> = {
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
