/**
 * Which chain each network's upstreams serve (docs/freshness.md, "Chain identity"): the
 * `network_id` and `genesis_chainstate_hash` of their /v2/info. Cache entries record the
 * identity they were read under and are served only under the same one, so that a testnet
 * reset, a local chain started afresh, or a store shared with a demo or another chain's
 * gateway is never answered from.
 *
 * Learned from every /v2/info the gateway makes (start-up, tip refreshes, lag checks); no
 * polling of its own. The network's identity is recorded in the store, so that a process whose
 * upstreams have not answered yet serves the entries of the chain the store last belonged to.
 *
 * Several upstreams of one network may disagree (a testnet node listed as mainnet, a local
 * chain among public nodes): each upstream's last report is kept apart, and the network's
 * identity is not whichever answered last (docs/upstreams.md, "Chain identity"):
 *
 * - it is the first one believed: the store's record, else the first report;
 * - an upstream reporting another one is excluded from serving the network (mismatch), and
 *   serves again once it reports the network's one;
 * - it changes only when every upstream of the network reports another one (a reset, or the
 *   whole list pointed elsewhere): then to the identity most of them report, ties to the
 *   preferred upstream. An upstream that has not reported yet has not reported another one, so
 *   a single dissenting node never takes a network over while another upstream is unheard.
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
  /**
   * An upstream's report now differs from its network's identity (`reported`), or agrees with
   * it again (`reported` undefined): told once per change, for the log.
   */
  readonly onMismatch?:
    | ((network: Network, upstream: string, reported: string | undefined, expected: string) => void)
    | undefined;
}

/** An upstream excluded because it serves another chain than its network's. */
export interface ChainMismatch {
  readonly reported: string;
  readonly expected: string;
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
  /** Each upstream's last reported identity, by network and upstream id. */
  readonly #reports = new Map<Network, Map<string, string>>();
  /** Upstreams whose last report differs from their network's identity. */
  readonly #mismatched = new Map<Network, Map<string, ChainMismatch>>();
  readonly #options: ChainIdentityOptions;
  /**
   * Each network's upstream ids in order of preference (bound once the pool exists): who
   * "every upstream" is, and who wins a tie. Without it, the upstreams that reported.
   */
  upstreamsOf: ((network: Network) => readonly string[]) | undefined;

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

  /** Why an upstream must not serve its network: it reports another chain; undefined when it may. */
  mismatch(network: Network, upstream: string): ChainMismatch | undefined {
    return this.#mismatched.get(network)?.get(upstream);
  }

  /**
   * An upstream's /v2/info named this identity: kept as its report; the network's identity
   * believed, kept or changed by the rule of the module comment; the upstreams that differ
   * from it marked. Without `upstream` (a caller that cannot say who answered), the report
   * stands for every upstream of the network, as a single node's would.
   */
  learn(network: Network, identity: string | undefined, upstream?: string): void {
    if (identity === undefined) return;
    let reports = this.#reports.get(network);
    if (reports === undefined) {
      reports = new Map();
      this.#reports.set(network, reports);
    }
    if (upstream === undefined) {
      for (const id of this.#upstreams(network)) reports.set(id, identity);
      reports.set('', identity);
    } else {
      reports.set(upstream, identity);
    }
    const known = this.#current.get(network);
    const next = known === undefined ? identity : this.#successor(network, known, reports);
    if (next !== known) {
      this.#current.set(network, next);
      if (known !== undefined) this.#options.onChange?.(network, known, next);
      this.#options.record?.save(network, next).catch((err: unknown) => this.#options.onError?.(err));
    }
    this.#mark(network, next, reports);
  }

  /** The identity after a report: the known one while any upstream reports it or is unheard. */
  #successor(network: Network, known: string, reports: ReadonlyMap<string, string>): string {
    const ids = this.#upstreams(network);
    const heard = ids.length === 0 ? [...reports.keys()] : ids;
    const said = heard.map((id) => reports.get(id));
    if (said.some((identity) => identity === undefined || identity === known)) return known;
    // Every upstream reports another chain: the one most of them report, ties to the first listed.
    const votes = new Map<string, number>();
    for (const identity of said) votes.set(identity!, (votes.get(identity!) ?? 0) + 1);
    let best = said[0]!;
    for (const identity of said) if (votes.get(identity!)! > votes.get(best)!) best = identity!;
    return best;
  }

  /** Mark the upstreams whose report differs from the network's identity; tell each change once. */
  #mark(network: Network, expected: string, reports: ReadonlyMap<string, string>): void {
    let marked = this.#mismatched.get(network);
    if (marked === undefined) {
      marked = new Map();
      this.#mismatched.set(network, marked);
    }
    for (const [upstream, reported] of reports) {
      if (upstream === '') continue;
      const was = marked.get(upstream);
      if (reported === expected) {
        if (was === undefined) continue;
        marked.delete(upstream);
        this.#options.onMismatch?.(network, upstream, undefined, expected);
      } else if (was === undefined || was.reported !== reported || was.expected !== expected) {
        marked.set(upstream, { reported, expected });
        this.#options.onMismatch?.(network, upstream, reported, expected);
      }
    }
  }

  #upstreams(network: Network): readonly string[] {
    return this.upstreamsOf?.(network) ?? [];
  }
}
