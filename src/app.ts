/**
 * Assembles the gateway: store, caching rules, upstream client, services, observability and
 * routes. Dependencies can be injected (tests inject stores or a node API); by default they
 * are built from the configuration.
 */

import type { FastifyInstance } from 'fastify';
import { createChainTracker } from './app/chain-tracker.js';
import { installFront } from './app/front.js';
import { wireObserver } from './app/observer.js';
import { registerApiRoutes, registerOperatorRoutes } from './app/route-registration.js';
import { createServices } from './app/services.js';
import { closeInOrder } from './app/shutdown.js';
import { createCache, openStore } from './app/storage.js';
import {
  createNodeClient,
  createUpstreamPool,
  type GatewayNode,
  pinVotes,
  startupRoundOf,
} from './app/upstream-client.js';
import { createUsage } from './app/usage.js';
import { createWatch } from './app/watch.js';
import type { ReadThroughCache } from './cache/read-through.js';
import type { CacheStore } from './cache/store.js';
import { hotEntries } from './cache/stores/health.js';
import type { EventObserver } from './chain/observer/start.js';
import type { ChainTracker } from './chain/tracker.js';
import type { ContractSourcePort } from './clarity/analysis/index.js';
import type { Config } from './config/index.js';
import { registerSecret } from './config/redact.js';
import { configuredSecrets } from './config/secrets.js';
import { MemoryQuota } from './http/admission/quota-store.js';
import type { FastLane } from './http/fast-lane.js';
import { usageRoutes } from './http/routes/usage.js';
import { createServer } from './http/server.js';
import { Metrics } from './observability/metrics.js';
import { UpstreamHealth } from './observability/upstream-health.js';
import { CacheAdmin } from './service/cache-admin.js';
import { createUpstreamBuckets } from './upstream/budget/local.js';
import type { Budget } from './upstream/budget/upstream-budget.js';
import type { Upstream, UpstreamPool } from './upstream/pool.js';

export interface GatewayDeps {
  readonly store?: CacheStore;
  readonly node?: GatewayNode;
  /** The budget of each upstream, by upstream id (a network's first upstream has the network's name). */
  readonly budgets?: Record<string, Budget>;
  /** Contract sources for the event observer's dependency analysis (default: the network's first upstream). */
  readonly contractSource?: ContractSourcePort;
}

export interface Gateway {
  readonly app: FastifyInstance;
  readonly config: Config;
  readonly store: CacheStore;
  readonly cache: ReadThroughCache;
  readonly metrics: Metrics;
  /** The upstreams and their state (undefined when a node API was injected). */
  readonly upstreams: UpstreamPool | undefined;
  /**
   * The start-up round (main.ts): one GET /v2/info of each upstream, which names each
   * network's chain and its first tip (the median of the first three answers). The upstreams
   * that did not answer, with why. Absent when a node API was injected.
   */
  readonly startupRound?: (() => Promise<Array<{ upstream: Upstream; failure: string }>>) | undefined;
  /** What the gateway knows of each network's tip (and currentBlock() for pinning a batch). */
  readonly chain: ChainTracker;
  /** The exact-repeat fast lane in front of the router (src/http/fast-lane.ts). */
  readonly lane: FastLane;
  /** The event observer and its block ledger, when EVENT_OBSERVER_PORT is set (docs/events.md). */
  readonly observer: EventObserver | undefined;
  /** Stop accepting, finish what is in flight, then release the store and upstream pools. */
  close(): Promise<void>;
}

/**
 * Each step below is one file of src/app/. The order is the wiring's: what a step uses is
 * built by an earlier one, except the few values read lazily (marked where they are bound).
 */
export async function createGateway(config: Config, deps: GatewayDeps = {}): Promise<Gateway> {
  const startedAt = Date.now();
  // What no answer, error or log line may show, whoever echoes it (docs/access-control.md).
  const secretValues = configuredSecrets(config);
  for (const secret of secretValues) registerSecret(secret);
  const app = createServer(config);
  const log = app.log;

  // CACHE_STORE=redis: one upstream budget and coalescing across every instance on that Redis.
  // Loaded only then: ioredis costs start-up time the other stores do not need to pay.
  const scaleOut =
    config.cacheStore === 'redis'
      ? await (await import('./scale-out.js')).createRedisScaleOut(config, log)
      : undefined;
  const budgets: Record<string, Budget> =
    deps.budgets ?? scaleOut?.budgets ?? createUpstreamBuckets(config.upstreams, config);

  // Metrics read the store, the pool and the tips lazily, so they can be created first.
  let store: CacheStore | undefined = deps.store;
  let pool: UpstreamPool | undefined;
  let chain: ChainTracker | undefined;
  const metrics = new Metrics({
    pool: () => pool,
    hotEntries: () => (store === undefined ? 0 : hotEntries(store)),
    tipHeight: (network) => chain?.known(network)?.height,
  });
  const onStoreError = (err: unknown, op: string): void => {
    metrics.storeError(op);
    log.warn({ err, op }, 'cache store operation failed');
  };
  const ownedStore = await openStore(config, deps.store, scaleOut, onStoreError);
  store = ownedStore;
  const { identities, cache } = await createCache(ownedStore, {
    metrics,
    log,
    coalescer: scaleOut?.coalescer,
    onStoreError,
    // Bound late: a new chain's tips start again; the tracker is built below.
    onNewChain: (network) => chain?.tips.forget(network),
    consensus: config.upstreamConsensus,
  });

  if (deps.node === undefined) pool = createUpstreamPool(config, budgets, { scaleOut, metrics, log });
  const upstreamPool = pool;
  if (upstreamPool !== undefined) {
    // Which upstreams "every upstream" is, and which one serves another chain (src/chain/identity.ts).
    identities.upstreamsOf = (network) => upstreamPool.upstreams(network).map((u) => u.id);
    upstreamPool.wrongChain = (u) => identities.mismatch(u.network, u.id);
  }
  const upstreamHealth = new UpstreamHealth(() => upstreamPool);
  const rawNode: GatewayNode =
    deps.node ??
    createNodeClient(config, upstreamPool!, {
      metrics,
      health: upstreamHealth,
      log,
      secretValues,
      identities,
      // Bound late: the tip tracker is built just below, from this client's answers.
      plausibleTip: (network, height) => chain?.tips.plausible(network, height) ?? true,
      strikeSync: scaleOut?.strikes,
    });
  const tracker = createChainTracker(config, rawNode, ownedStore, { scaleOut, metrics, log });
  chain = tracker;
  // Attested answers are voted at a block the tracker knows (docs/consensus.md).
  pinVotes(rawNode, tracker, config.chainTipMaxAgeMs);
  const services = createServices(config, cache, rawNode, tracker, metrics);

  let draining = false;
  const isDraining = (): boolean => draining;
  // Usage metered per key, in the cache's own store (docs/usage.md).
  const usage = createUsage(config, ownedStore, log);
  const front = installFront(app, config, {
    metrics,
    quota: scaleOut?.quota ?? new MemoryQuota(),
    isDraining,
    usage,
    monthUnits: (name) => usage.monthUnits(name),
  });
  const observed = await wireObserver(config, deps.contractSource, services, tracker, {
    metrics,
    log,
    scaleOut,
  });
  const observer = observed?.observer;
  const watch = createWatch(config, services, tracker, {
    observed,
    scaleOut,
    contractSource: deps.contractSource,
    metrics,
    log,
  });
  await registerApiRoutes(app, config, front.endpoints, services, {
    watch,
    maxUnsentBytes: config.watchMaxUnsentBytes,
    cors: front.cors,
    onEnded: (code) => metrics.watch.dropped(code === 'SLOW_CONSUMER' ? 'slow-consumer' : 'deleted'),
    usage,
  });
  await app.register(usageRoutes, { usage, admin: config.adminToken !== undefined });
  await registerOperatorRoutes(
    app,
    config,
    {
      tipHeight: (network) => tracker.known(network)?.height,
      observer,
      store: ownedStore,
      metrics,
      upstream: upstreamHealth,
      isDraining,
      startedAt,
    },
    () => {
      const keys = front.apiKeys;
      return {
        admission: front.admission,
        admin: new CacheAdmin(cache, services.abis, services.readOnly),
        keyUses: keys === undefined ? undefined : () => metrics.keys.uses(keys.list().map((k) => k.name)),
      };
    },
  );

  const close = closeInOrder(config, {
    drain: () => {
      draining = true;
    },
    app,
    node: rawNode,
    pool: upstreamPool,
    budgets,
    observer,
    scaleOut,
    store: ownedStore,
    watch,
    usage,
  });
  return {
    app,
    config,
    store: ownedStore,
    cache,
    metrics,
    upstreams: upstreamPool,
    startupRound: startupRoundOf(rawNode, upstreamPool, tracker),
    chain: tracker,
    lane: front.lane,
    observer,
    close,
  };
}
