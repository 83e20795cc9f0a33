/**
 * The upstreams the gateway may ask, and the one place that chooses which one serves an
 * attempt. The attempt loop asks `pick()` once per attempt, retries included; nothing else
 * knows how many upstreams there are.
 *
 * Today each network has exactly one upstream (STACKS_API_URL_MAINNET / _TESTNET with
 * STACKS_API_KEY), so pick() returns it, and behaviour is what it was before the pool
 * existed. Several upstreams (issue 13, extensions.md section 3) fit without touching the
 * loop: the list comes from the config, each Upstream already has its own budget and stats,
 * and selection (skip open breakers and lagging nodes for latest-state reads, prefer a
 * budget token now, then lower priority, then lower recent latency) goes into pick(). A
 * hedged attempt is a second pick() that avoids the first upstream.
 */
import type { Config, Network } from '../config.js';
import type { Budget } from './budget/budget.js';
import { UpstreamStats } from './stats.js';
import type { Destination } from './transport.js';

export interface Upstream extends Destination {
  /**
   * Stable and credential-free: the name in logs, metric labels, answers (AnswerMeta) and the
   * budget's Redis key. A network's default upstream is named after the network, which keeps
   * the Redis keys of single-upstream deployments as they were.
   */
  readonly id: string;
  /** The base URL without credentials or query, for /ready and messages. */
  readonly label: string;
  readonly network: Network;
  /** Lower is preferred (the list order). */
  readonly priority: number;
  /** Every attempt sent here first takes one of its tokens. */
  readonly budget: Budget;
  readonly stats: UpstreamStats;
}

/** How to describe one upstream to the pool; `budget` is built by the caller (local or Redis). */
export interface UpstreamSpec {
  readonly id: string;
  readonly network: Network;
  /** Base URL (a path prefix is kept, credentials in it are never sent nor shown). */
  readonly url: string;
  readonly apiKey?: string | undefined;
  readonly priority?: number;
  readonly budget: Budget;
}

export interface PickOptions {
  /**
   * Upstreams to avoid when another can serve: those that already failed this request, or the
   * one a hedged attempt is racing. Avoided upstreams are still picked when nothing else can
   * serve, because retrying the same node is better than not answering (and is all a
   * single-upstream deployment can do).
   */
  readonly avoid?: ReadonlySet<Upstream>;
}

export class UpstreamPool {
  readonly #byNetwork = new Map<Network, Upstream[]>();

  constructor(specs: readonly UpstreamSpec[]) {
    const ids = new Set<string>();
    for (const spec of specs) {
      if (ids.has(spec.id)) throw new Error(`upstream id "${spec.id}" is used twice`);
      ids.add(spec.id);
      const upstream = toUpstream(spec);
      const list = this.#byNetwork.get(spec.network) ?? [];
      list.push(upstream);
      // Stable: equal priorities keep the list order.
      list.sort((a, b) => a.priority - b.priority);
      this.#byNetwork.set(spec.network, list);
    }
  }

  /** The upstream for the next attempt on `network`. Throws if the network has none (a wiring bug). */
  pick(network: Network, options: PickOptions = {}): Upstream {
    const list = this.#byNetwork.get(network);
    if (list === undefined || list.length === 0) throw new Error(`no upstream configured for ${network}`);
    const avoid = options.avoid;
    if (avoid !== undefined && avoid.size > 0) {
      const other = list.find((u) => !avoid.has(u));
      if (other !== undefined) return other;
    }
    return list[0]!;
  }

  /** Every upstream of one network (or of all), in preference order: for /ready, metrics, shutdown. */
  upstreams(network?: Network): readonly Upstream[] {
    if (network !== undefined) return this.#byNetwork.get(network) ?? [];
    return [...this.#byNetwork.values()].flat();
  }
}

/** The config slice the default pool is built from. */
export type PoolConfig = Pick<Config, 'upstreamUrls' | 'stacksApiKey'>;

/**
 * Today's pool: one upstream per network, id = the network's name, its URL from
 * STACKS_API_URL_<NETWORK>, STACKS_API_KEY for both, and the network's budget.
 */
export function createDefaultPool(
  config: PoolConfig,
  budgets: Readonly<Record<Network, Budget>>,
): UpstreamPool {
  const networks = Object.keys(config.upstreamUrls) as Network[];
  return new UpstreamPool(
    networks.map((network) => ({
      id: network,
      network,
      url: config.upstreamUrls[network],
      apiKey: config.stacksApiKey,
      budget: budgets[network],
    })),
  );
}

function toUpstream(spec: UpstreamSpec): Upstream {
  const url = new URL(spec.url);
  const pathPrefix = url.pathname.replace(/\/+$/, '');
  return {
    id: spec.id,
    label: url.origin + pathPrefix,
    network: spec.network,
    origin: url.origin,
    pathPrefix,
    apiKey: spec.apiKey,
    priority: spec.priority ?? 0,
    budget: spec.budget,
    stats: new UpstreamStats(),
  };
}
