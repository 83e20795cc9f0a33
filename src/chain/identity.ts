/**
 * Which chain each network's upstreams serve (docs/freshness.md, "Chain identity"): the
 * `network_id` and `genesis_chainstate_hash` of their /v2/info. Cache entries record the
 * identity they were read under and are served only under the same one, so that a testnet
 * reset, a local chain started afresh, or a store shared with a demo or another chain's
 * gateway is never answered from.
 *
 * Learned from every /v2/info the gateway makes (start-up, tip refreshes, lag checks); no
 * polling of its own. The last identity is recorded in the store, so that a process whose
 * upstreams have not answered yet serves the entries of the chain the store last belonged to.
 */
import type { Network } from '../network.js';

/** Where the last identity of each network is kept (the cache store, through a port). */
export interface IdentityRecord {
  load(network: Network): Promise<string | undefined>;
  save(network: Network, identity: string): Promise<void>;
}

export interface ChainIdentityOptions {
  readonly record?: IdentityRecord | undefined;
  /** The identity changed from a known one: entries of the old one no longer serve. */
  readonly onChange?: ((network: Network, from: string, to: string) => void) | undefined;
  /** A record could not be read or written (logged; the identity still applies in memory). */
  readonly onError?: ((err: unknown) => void) | undefined;
}

/** The identity a /v2/info answer names, or undefined when it names none. */
export function identityOf(info: Readonly<Record<string, unknown>>): string | undefined {
  const id = info['network_id'];
  const genesis = info['genesis_chainstate_hash'];
  if (typeof id !== 'number' || typeof genesis !== 'string' || !/^[0-9a-fA-F]{64}$/.test(genesis))
    return undefined;
  return `${id}:${genesis.toLowerCase()}`;
}

export class ChainIdentities {
  readonly #current = new Map<Network, string>();
  readonly #options: ChainIdentityOptions;

  constructor(options: ChainIdentityOptions = {}) {
    this.#options = options;
  }

  /** Start from the store's record (before any upstream answered). */
  async restore(networks: readonly Network[]): Promise<void> {
    const record = this.#options.record;
    if (record === undefined) return;
    for (const network of networks) {
      try {
        const last = await record.load(network);
        if (last !== undefined && !this.#current.has(network)) this.#current.set(network, last);
      } catch (err) {
        this.#options.onError?.(err);
      }
    }
  }

  /** The identity entries of network are served under; undefined while unknown. */
  current(network: Network): string | undefined {
    return this.#current.get(network);
  }

  /** An upstream's /v2/info named this identity: learned, recorded, and a change reported. */
  learn(network: Network, identity: string | undefined): void {
    if (identity === undefined) return;
    const known = this.#current.get(network);
    if (known === identity) return;
    this.#current.set(network, identity);
    if (known !== undefined) this.#options.onChange?.(network, known, identity);
    this.#options.record?.save(network, identity).catch((err: unknown) => this.#options.onError?.(err));
  }
}
