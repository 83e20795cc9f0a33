/**
 * Wiring step: the cache store, the chain identities entries are recorded under, and the
 * read-through cache over both, with their metrics and log lines.
 */

import type { FastifyBaseLogger } from 'fastify';
import type { CrossInstanceCoalescer } from '../cache/cross-instance-coalescer.js';
import { networkOfKey } from '../cache/keys.js';
import { ReadThroughCache } from '../cache/read-through.js';
import type { CacheStore } from '../cache/store.js';
import { createStore } from '../cache/stores/create.js';
import { ChainIdentities } from '../chain/identity.js';
import type { Config } from '../config/index.js';
import { NETWORKS, type Network } from '../network.js';
import { cacheEndpointOf, type Metrics } from '../observability/metrics.js';
import type { RedisScaleOut } from '../scale-out.js';

export type StoreErrorHandler = (err: unknown, op: string) => void;

/** The injected store, or the one CACHE_STORE names (its hot tier kept in step with other instances'). */
export async function openStore(
  config: Config,
  injected: CacheStore | undefined,
  scaleOut: RedisScaleOut | undefined,
  onError: StoreErrorHandler,
): Promise<CacheStore> {
  if (injected !== undefined) return injected;
  const created = await createStore(config, {
    onError,
    ...(scaleOut === undefined ? {} : { onSharedChange: (key: string) => scaleOut.hotTier.announce(key) }),
  });
  // A store with a hot tier in front of the shared Redis: other instances' writes evict from it.
  if (scaleOut !== undefined && created.evictHot !== undefined) {
    scaleOut.hotTier.bind({ evictHot: created.evictHot.bind(created) });
  }
  return created;
}

export interface CacheParts {
  readonly identities: ChainIdentities;
  readonly cache: ReadThroughCache;
}

/**
 * Which chain entries belong to (docs/freshness.md): learned from every /v2/info, recorded in
 * the store, and the one entries are served under; then the read-through cache that serves
 * only entries of that chain. `onNewChain` runs when a network's upstreams serve another chain.
 */
export async function createCache(
  store: CacheStore,
  wiring: {
    readonly metrics: Metrics;
    readonly log: FastifyBaseLogger;
    readonly coalescer: CrossInstanceCoalescer | undefined;
    readonly onStoreError: StoreErrorHandler;
    readonly onNewChain: (network: Network) => void;
    /** Each network's attested answers (docs/consensus.md): entries need k votes under k/n. */
    readonly consensus?: Config['upstreamConsensus'] | undefined;
  },
): Promise<CacheParts> {
  const { metrics, log } = wiring;
  const identityKey = (network: Network) => `chain:id:${network}`;
  // Each network's "another chain's entries" warning is logged once per chain.
  const otherChainLogged = new Set<Network>();
  const identities = new ChainIdentities({
    record: {
      load: async (network) => (await store.get(identityKey(network)))?.value,
      save: (network, identity) => store.set(identityKey(network), identity),
    },
    onChange: (network, from, to) => {
      otherChainLogged.delete(network);
      wiring.onNewChain(network);
      log.warn(
        { network, from, to },
        'the upstreams now serve another chain: entries of the old one are no longer served',
      );
    },
    onError: (err) => log.debug({ err }, 'chain identity record: store operation failed'),
    // Once per change of an upstream's standing, not per report: /ready and the state gauge
    // say it for as long as it lasts.
    onMismatch: (network, upstream, reported, expected) => {
      if (reported === undefined) {
        log.info({ network, upstream, chain: expected }, "upstream serves the network's chain again");
      } else {
        log.warn(
          { network, upstream, reported, expected },
          `upstream ${upstream} reports another chain than ${network}'s: it no longer serves ${network}`,
        );
      }
    },
  });
  await identities.restore(NETWORKS);
  // Which cache a key's lookups count under: its namespace's (src/cache/keys.ts).
  const endpointOf = cacheEndpointOf;
  const cache = new ReadThroughCache(store, {
    onStoreError: wiring.onStoreError,
    onOutcome: (outcome, key) => metrics.cache(endpointOf(key), outcome),
    coalescer: wiring.coalescer,
    onCorrupt: () => metrics.storeCorrupt(),
    chain: {
      current: (key) => {
        const network = networkOfKey(key);
        return network === undefined ? undefined : identities.current(network);
      },
      onOtherChain: (key) => {
        const network = networkOfKey(key);
        if (network === undefined || otherChainLogged.has(network)) return;
        otherChainLogged.add(network);
        log.warn(
          { network, chain: identities.current(network) },
          'the store holds entries of another chain (a reset, a local chain, or a store shared with another gateway): they are not served',
        );
      },
    },
    attestation: {
      required: (key) => {
        const network = networkOfKey(key);
        const rule = network === undefined ? undefined : wiring.consensus?.[network];
        return rule === undefined || rule.n === 1 ? undefined : rule.k;
      },
    },
    stale: {
      onStale: (kind, key) => metrics.stale(endpointOf(key), kind),
      onRevalidate: (result, key, err) => {
        metrics.backgroundRefresh(endpointOf(key), result);
        if (err !== undefined) log.debug({ err, key }, 'background refresh failed; the stale entry stays');
      },
    },
  });
  return { identities, cache };
}
