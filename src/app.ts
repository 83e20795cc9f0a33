/**
 * Assembles the gateway: store, caching rules, upstream client, services, observability and
 * routes. Dependencies can be injected (tests inject stores or a node API); by default they
 * are built from the configuration.
 */
import type { FastifyInstance } from 'fastify';
import { ReadThroughCache } from './cache/read-through.js';
import type { CacheStore } from './cache/store.js';
import { createStore } from './cache/stores/create.js';
import { hotEntries } from './cache/stores/health.js';
import { type Config, NETWORKS, type Network } from './config.js';
import { requireHostHeader } from './http/client-errors.js';
import { installCors } from './http/cors.js';
import { installErrorHandling } from './http/error-handler.js';
import { FastLane } from './http/fast-lane.js';
import { registerOpenApi } from './http/openapi.js';
import { installJsonParsing } from './http/raw-body.js';
import { nextRequestId } from './http/request-ids.js';
import { trackEndpoints, trackRoutes } from './http/route-table.js';
import { abiRoutes } from './http/routes/abi.js';
import { adminRoutes } from './http/routes/admin.js';
import { decodeRoute } from './http/routes/decode.js';
import { endpointIndexRoutes } from './http/routes/endpoint-index.js';
import { opsRoutes } from './http/routes/ops.js';
import { readOnlyRoute } from './http/routes/read-only.js';
import { createServer, installRequestHooks, logsRequests } from './http/server.js';
import { instrumentBudget, Metrics } from './observability/metrics.js';
import { UpstreamHealth } from './observability/upstream-health.js';
import { AbiRegistry } from './service/abi-registry.js';
import { CacheAdmin } from './service/cache-admin.js';
import { ReadOnlyService } from './service/read-only.js';
import type { AttemptEvent } from './upstream/attempts.js';
import type { Budget } from './upstream/budget/budget.js';
import { createTokenBuckets } from './upstream/budget/local.js';
import type { NodeApi } from './upstream/node-api.js';
import { createDefaultPool } from './upstream/pool.js';
import { StacksNodeClient } from './upstream/stacks-node.js';

export interface GatewayDeps {
  readonly store?: CacheStore;
  readonly node?: NodeApi & { close?(): Promise<void> | void };
  /** The budget of each network's default upstream (today the only one). */
  readonly budgets?: Record<Network, Budget>;
}

export interface Gateway {
  readonly app: FastifyInstance;
  readonly config: Config;
  readonly store: CacheStore;
  readonly cache: ReadThroughCache;
  readonly metrics: Metrics;
  /** The exact-repeat fast lane in front of the router (src/http/fast-lane.ts). */
  readonly lane: FastLane;
  /** Stop accepting, finish what is in flight, then release the store and upstream pools. */
  close(): Promise<void>;
}

export async function createGateway(config: Config, deps: GatewayDeps = {}): Promise<Gateway> {
  const startedAt = Date.now();
  const app = createServer(config);
  const log = app.log;

  // Metrics read the store and budgets lazily, so they can be created first.
  let store: CacheStore | undefined = deps.store;
  // CACHE_STORE=redis: one upstream budget and coalescing across every instance on that Redis.
  // Loaded only then: ioredis costs start-up time the other stores do not need to pay.
  const scaleOut =
    config.cacheStore === 'redis'
      ? await (await import('./redis/scale-out.js')).createRedisScaleOut(config, log)
      : undefined;
  const rawBudgets: Record<Network, Budget> =
    deps.budgets ?? scaleOut?.budgets ?? createTokenBuckets(NETWORKS, config);
  const metrics = new Metrics({
    budgets: rawBudgets,
    hotEntries: () => (store === undefined ? 0 : hotEntries(store)),
  });
  const onStoreError = (err: unknown, op: string): void => {
    metrics.storeError(op);
    log.warn({ err, op }, 'cache store operation failed');
  };
  if (store === undefined) {
    const created = await createStore(config, {
      onError: onStoreError,
      ...(scaleOut === undefined ? {} : { onSharedChange: (key: string) => scaleOut.hotTier.announce(key) }),
    });
    // A store with a hot tier in front of the shared Redis: other instances' writes evict from it.
    if (scaleOut !== undefined && created.evictHot !== undefined) {
      scaleOut.hotTier.bind({ evictHot: created.evictHot.bind(created) });
    }
    store = created;
  }
  const cache = new ReadThroughCache(store, {
    onStoreError,
    onOutcome: (outcome, key) => metrics.cache(key.startsWith('abi:') ? 'abi' : 'read-only', outcome),
    coalescer: scaleOut?.coalescer,
  });

  const upstreamHealth = new UpstreamHealth();
  const budgets = Object.fromEntries(
    NETWORKS.map((n) => [n, instrumentBudget(n, rawBudgets[n], metrics)]),
  ) as Record<Network, Budget>;
  const onAttempt = (event: AttemptEvent): void => {
    metrics.upstreamAttempt(event);
    upstreamHealth.record(event);
  };
  // One upstream per network today; the pool is where several will be chosen from (issue 13).
  const pool = createDefaultPool(config, budgets);
  const node = deps.node ?? new StacksNodeClient({ config, pool, logger: log, onAttempt });

  const abis = new AbiRegistry(cache, node, config.abiMemoMaxBytes);
  const readOnly = new ReadOnlyService(cache, abis, node);

  installJsonParsing(app);

  const routeTable = trackRoutes(app);
  installErrorHandling(app, routeTable);
  requireHostHeader(app);
  installCors(app, config.corsOrigins, routeTable);
  const endpoints = trackEndpoints(app);

  let draining = false;
  installRequestHooks(app, {
    logLevel: config.logLevel,
    onAnswered: (route, method, status, seconds) => metrics.request(route, method, status, seconds),
    isDraining: () => draining,
  });
  // Last of the root hooks: it captures answers with the headers every other hook added.
  const lane = new FastLane({
    isDraining: () => draining,
    onAnswered: (route, method, status, seconds) => metrics.request(route, method, status, seconds),
    logRequest: logsRequests(config.logLevel)
      ? (fields) => log.info({ reqId: nextRequestId(), ...fields }, 'request')
      : undefined,
  });
  lane.install(app);

  await registerOpenApi(app, { admin: config.adminToken !== undefined });
  await app.register(endpointIndexRoutes, { endpoints });
  await app.register(decodeRoute);
  await app.register(readOnlyRoute, { service: readOnly });
  await app.register(abiRoutes, { abis });
  await app.register(opsRoutes, {
    store,
    metrics,
    upstream: upstreamHealth,
    isDraining: () => draining,
    startedAt,
  });
  if (config.adminToken !== undefined) {
    await app.register(adminRoutes, {
      token: config.adminToken,
      admin: new CacheAdmin(cache, abis, readOnly),
    });
  }

  const ownedStore = store;
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      draining = true;
      await app.close();
      await node.close?.();
      for (const b of Object.values(rawBudgets)) b.close();
      await scaleOut?.close();
      await ownedStore.close();
    })();
    return closing;
  };
  return { app, config, store, cache, metrics, lane, close };
}
