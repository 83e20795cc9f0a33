/**
 * Wiring step: the routes, each a thin caller of a service. In two parts, because the
 * operator routes show the event observer's state and the observer is started between them.
 * The order of registration is the order of the OpenAPI document and the endpoint index.
 */

import type { FastifyInstance } from 'fastify';
import type { CacheStore } from '../cache/store.js';
import type { EventObserver } from '../chain/observer/start.js';
import type { Config } from '../config/index.js';
import { explorerRoutes } from '../explorer/plugin.js';
import { registerOpenApi } from '../http/openapi.js';
import type { EndpointLine } from '../http/route-table.js';
import { abiRoutes } from '../http/routes/abi.js';
import { type AdminOptions, adminRoutes } from '../http/routes/admin.js';
import { batchRoute } from '../http/routes/batch.js';
import { decodeRoute } from '../http/routes/decode.js';
import { endpointIndexRoutes } from '../http/routes/endpoint-index.js';
import { nodeRoutes } from '../http/routes/node-routes.js';
import { opsRoutes } from '../http/routes/ops.js';
import { readOnlyRoute } from '../http/routes/read-only.js';
import { type SubscriptionRoutesOptions, subscriptionRoutes } from '../http/routes/subscriptions.js';
import type { Network } from '../network.js';
import type { Metrics } from '../observability/metrics.js';
import type { UpstreamHealth } from '../observability/upstream-health.js';
import type { Services } from './services.js';

/** The documentation, the explorer and every route a client reads through. */
export async function registerApiRoutes(
  app: FastifyInstance,
  config: Config,
  endpoints: readonly EndpointLine[],
  { abis, readOnly, routes, batch }: Services,
  watch: SubscriptionRoutesOptions,
): Promise<void> {
  await registerOpenApi(app, { admin: config.adminToken !== undefined });
  await app.register(endpointIndexRoutes, { endpoints });
  await app.register(explorerRoutes);
  await app.register(decodeRoute);
  await app.register(readOnlyRoute, { service: readOnly });
  await app.register(abiRoutes, { abis });
  await app.register(batchRoute, { batch, maxCalls: config.batchMaxCalls, costs: config.costs });
  await app.register(subscriptionRoutes, watch);
  await app.register(nodeRoutes, { service: readOnly, abis, routes });
}

/** Health, readiness and metrics; the admin API only when ADMIN_TOKEN is set. */
export async function registerOperatorRoutes(
  app: FastifyInstance,
  config: Config,
  ops: {
    readonly tipHeight: (network: Network) => number | undefined;
    readonly observer: EventObserver | undefined;
    readonly store: CacheStore;
    readonly metrics: Metrics;
    readonly upstream: UpstreamHealth;
    readonly isDraining: () => boolean;
    readonly startedAt: number;
  },
  admin: () => AdminOptions,
): Promise<void> {
  const { observer } = ops;
  await app.register(opsRoutes, {
    tipHeight: ops.tipHeight,
    observer: observer === undefined ? undefined : () => observer.status(),
    store: ops.store,
    metrics: ops.metrics,
    upstream: ops.upstream,
    isDraining: ops.isDraining,
    startedAt: ops.startedAt,
  });
  if (config.adminToken !== undefined) await app.register(adminRoutes, admin());
}
