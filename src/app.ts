/**
 * Assembles the gateway: store, caching rules, upstream client, services, observability and
 * routes. Dependencies can be injected (tests inject stores or a node API); by default they
 * are built from the configuration.
 */
import { randomUUID } from 'node:crypto';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance, LogController } from 'fastify';
import { ReadThroughCache } from './cache/read-through.js';
import type { CacheStore } from './cache/store.js';
import { hotEntries } from './cache/store-health.js';
import { createStore } from './cache/stores.js';
import { TieredStore } from './cache/tiered-store.js';
import { type Config, NETWORKS, type Network } from './config.js';
import { explorerRoutes } from './explorer/plugin.js';
import { installErrorHandling } from './http/error-handler.js';
import { lazyChildLogger } from './http/lazy-logger.js';
import { registerOpenApi } from './http/openapi.js';
import { installJsonParsing } from './http/raw-body.js';
import { trackRoutes } from './http/route-table.js';
import { abiRoutes } from './http/routes/abi.js';
import { adminRoutes } from './http/routes/admin.js';
import { decodeRoute } from './http/routes/decode.js';
import { opsRoutes } from './http/routes/ops.js';
import { readOnlyRoute } from './http/routes/read-only.js';
import { instrumentBudget, Metrics } from './observability/metrics.js';
import { UpstreamHealth } from './observability/upstream-health.js';
import { AbiRegistry } from './service/abi-registry.js';
import { CacheAdmin } from './service/cache-admin.js';
import type { NodeApi } from './service/node-api.js';
import { ReadOnlyService } from './service/read-only.js';
import { type AttemptEvent, StacksNodeClient } from './upstream/stacks-client.js';
import { type Budget, createTokenBuckets } from './upstream/token-bucket.js';

export interface GatewayDeps {
  readonly store?: CacheStore;
  readonly node?: NodeApi & { close?(): Promise<void> | void };
  readonly budgets?: Record<Network, Budget>;
}

export interface Gateway {
  readonly app: FastifyInstance;
  readonly config: Config;
  readonly store: CacheStore;
  readonly cache: ReadThroughCache;
  readonly metrics: Metrics;
  /** Stop accepting, finish what is in flight, then release the store and upstream pools. */
  close(): Promise<void>;
}

export async function createGateway(config: Config, deps: GatewayDeps = {}): Promise<Gateway> {
  const startedAt = Date.now();
  const app = Fastify({
    logger: { level: config.logLevel },
    // One line per request is written by our onResponse hook instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: config.bodyLimitBytes,
    genReqId: () => randomUUID(),
    childLoggerFactory: (logger, bindings, options) => lazyChildLogger(logger, bindings, options),
    requestIdHeader: false,
    // See installJsonParsing: tuple keys such as `constructor` are plain data.
    onProtoPoisoning: 'ignore',
    onConstructorPoisoning: 'ignore',
    ajv: {
      customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: true, allErrors: false },
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  const log = app.log;

  // Metrics read the store and budgets lazily, so they can be created first.
  let store: CacheStore | undefined = deps.store;
  // CACHE_STORE=redis: one upstream budget and coalescing across every instance on that Redis.
  // Loaded only then: ioredis costs start-up time the other stores do not need to pay.
  const scaleOut =
    config.cacheStore === 'redis'
      ? await (await import('./redis-scale-out.js')).createRedisScaleOut(config, log)
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
    if (scaleOut !== undefined && created instanceof TieredStore) scaleOut.hotTier.bind(created);
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
  const node = deps.node ?? new StacksNodeClient({ config, budgets, logger: log, onAttempt });

  const abis = new AbiRegistry(cache, node);
  const readOnly = new ReadOnlyService(cache, abis, node);

  installJsonParsing(app);

  installErrorHandling(app, trackRoutes(app));

  // Draining: answers given while closing end their keep-alive connection, so that
  // server.close() is not held open by clients that would otherwise reuse it.
  let draining = false;
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (draining) reply.header('connection', 'close');
    done(null, payload);
  });
  const logRequests = ['info', 'debug', 'trace'].includes(config.logLevel);
  app.addHook('onResponse', (request, reply, done) => {
    const ms = reply.elapsedTime;
    metrics.request(request.routeOptions.url ?? 'unmatched', request.method, reply.statusCode, ms / 1000);
    if (logRequests) {
      request.log.info(
        {
          method: request.method,
          url: request.url,
          statusCode: reply.statusCode,
          ms: Math.round(ms * 100) / 100,
        },
        'request',
      );
    }
    done();
  });

  await registerOpenApi(app, { admin: config.adminToken !== undefined });
  await app.register(explorerRoutes);
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
  return { app, config, store, cache, metrics, close };
}
