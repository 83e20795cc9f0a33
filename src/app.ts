/**
 * Assembles the gateway: store, caching rules, upstream client, services and routes.
 * Dependencies can be injected (tests inject stores or a node API); by default they are
 * built from the configuration.
 */
import { randomUUID } from 'node:crypto';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance, LogController } from 'fastify';
import { ReadThroughCache } from './cache/read-through.js';
import type { CacheStore } from './cache/store.js';
import { createStore } from './cache/stores.js';
import { type Config, NETWORKS, type Network } from './config.js';
import { installErrorHandling } from './http/error-handler.js';
import { trackRoutes } from './http/route-table.js';
import { abiRoutes } from './http/routes/abi.js';
import { decodeRoute } from './http/routes/decode.js';
import { readOnlyRoute } from './http/routes/read-only.js';
import { AbiRegistry } from './service/abi-registry.js';
import type { NodeApi } from './service/node-api.js';
import { ReadOnlyService } from './service/read-only.js';
import { StacksNodeClient } from './upstream/stacks-client.js';
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
  /** Stop accepting, finish what is in flight, then release the store and upstream pools. */
  close(): Promise<void>;
}

export async function createGateway(config: Config, deps: GatewayDeps = {}): Promise<Gateway> {
  const app = Fastify({
    logger: { level: config.logLevel },
    // One line per request is written by our onResponse hook instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: config.bodyLimitBytes,
    genReqId: () => randomUUID(),
    requestIdHeader: false,
    // Tuple keys such as __proto__ are plain data here: JSON.parse makes them own properties,
    // and the codec never assigns through them.
    onProtoPoisoning: 'ignore',
    onConstructorPoisoning: 'ignore',
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: true, allErrors: false } },
  }).withTypeProvider<TypeBoxTypeProvider>();

  const log = app.log;
  const store =
    deps.store ??
    (await createStore(config, { onError: (err, op) => log.warn({ err, op }, 'cache store operation failed') }));
  const cache = new ReadThroughCache(store, (err, op) => log.warn({ err, op }, 'cache store operation failed'));

  const budgets: Record<Network, Budget> = deps.budgets ?? createTokenBuckets(NETWORKS, config);
  const node = deps.node ?? new StacksNodeClient({ config, budgets, logger: log });

  const abis = new AbiRegistry(cache, node);
  const readOnly = new ReadOnlyService(cache, abis, node);

  // Any body is parsed as JSON whatever its Content-Type: `curl -d` sends form encoding by default.
  const jsonParser = app.getDefaultJsonParser('ignore', 'ignore');
  app.addContentTypeParser('*', { parseAs: 'string' }, jsonParser);

  const routeMethods = trackRoutes(app);
  installErrorHandling(app, routeMethods);
  // Draining: answers given while closing end their keep-alive connection, so that
  // server.close() is not held open by clients that would otherwise reuse it.
  let draining = false;
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (draining) reply.header('connection', 'close');
    done(null, payload);
  });
  app.addHook('onResponse', (request, reply, done) => {
    request.log.info(
      { method: request.method, url: request.url, statusCode: reply.statusCode, ms: Math.round(reply.elapsedTime * 100) / 100 },
      'request',
    );
    done();
  });

  await app.register(decodeRoute);
  await app.register(readOnlyRoute, { service: readOnly });
  await app.register(abiRoutes, { abis });

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      draining = true;
      await app.close();
      await node.close?.();
      for (const b of Object.values(budgets)) b.close();
      await store.close();
    })();
    return closing;
  };
  return { app, config, store, cache, close };
}
