/**
 * Wiring step: everything a request meets before a route, in the order it meets it. Admission
 * decides every request in the front listener the fast lane installs, before the lane or
 * Fastify sees it (docs/access-control.md); Fastify's onRequest hooks then run in this order:
 * the Host check (malformed HTTP/1.1 is answered 400 whatever the verdict), the refusal of a
 * refused request, the CORS preflight (which, like every CORS header, follows the verdict).
 */

import type { FastifyInstance } from 'fastify';
import type { Config } from '../config/index.js';
import { Admission, type Verdict } from '../http/admission/admission.js';
import { type ApiKeyRing, loadApiKeys } from '../http/admission/api-keys.js';
import { installAdmission } from '../http/admission/hook.js';
import type { QuotaStore } from '../http/admission/quota-store.js';
import { requireHostHeader } from '../http/client-errors.js';
import { manageConnections } from '../http/connections.js';
import { type CorsHeaders, installCors } from '../http/cors.js';
import { installErrorHandling } from '../http/error-handler.js';
import { FastLane } from '../http/fast-lane.js';
import { installMetering, type UsageSink } from '../http/metering.js';
import { installJsonParsing } from '../http/raw-body.js';
import { nextRequestId } from '../http/request-ids.js';
import { type EndpointLine, trackEndpoints, trackRoutes } from '../http/route-table.js';
import { accessLogUrl, installRequestHooks, logsRequests } from '../http/server.js';
import type { Metrics } from '../observability/metrics.js';

export interface Front {
  readonly admission: Admission;
  /** API_KEYS_FILE's keys, when it is set. */
  readonly apiKeys: ApiKeyRing | undefined;
  readonly lane: FastLane;
  /** Every route registered from here on, for the endpoint index. */
  readonly endpoints: readonly EndpointLine[];
  /** The CORS headers of an answer written outside Fastify's hooks (an event stream). */
  readonly cors: CorsHeaders;
}

export function installFront(
  app: FastifyInstance,
  config: Config,
  wiring: {
    readonly metrics: Metrics;
    readonly quota: QuotaStore;
    readonly isDraining: () => boolean;
    /** Where each metered answer's usage goes (docs/usage.md); undefined: not recorded. */
    readonly usage?: UsageSink | undefined;
    /** A key's units recorded this UTC month (unitsPerMonth quotas). */
    readonly monthUnits?: ((name: string) => number) | undefined;
  },
): Front {
  const { metrics, isDraining } = wiring;
  const log = app.log;
  installJsonParsing(app);

  const routeTable = trackRoutes(app);
  installErrorHandling(app, routeTable);
  const apiKeys = config.apiKeysFile === undefined ? undefined : loadApiKeys(config.apiKeysFile);
  const admission = new Admission({
    trustProxy: config.trustProxy,
    adminToken: config.adminToken,
    keys: apiKeys,
    keysRequired: config.apiKeysRequired,
    anonymousPerMinute: config.anonymousRequestsPerMinute,
    quota: wiring.quota,
    onKeyUse: (name, admitted) => metrics.keys.record(name, admitted),
    monthUnits: wiring.monthUnits,
  });
  requireHostHeader(app);
  installAdmission(app, admission);
  const cors = installCors(app, config.corsOrigins, routeTable);
  const endpoints = trackEndpoints(app);

  installRequestHooks(app, {
    logLevel: config.logLevel,
    onAnswered: (route, method, status, seconds) => metrics.request(route, method, status, seconds),
    isDraining,
  });
  // Every metered answer's cost (a header) and usage (a record), before the lane captures it.
  const charge = (verdict: Verdict, units: number): void => admission.charge(verdict, units);
  installMetering(app, config.costs, wiring.usage, charge);
  // Last of the root hooks: it captures answers with the headers every other hook added.
  const lane = new FastLane({
    admission,
    isDraining,
    costs: config.costs,
    usage: wiring.usage,
    charge,
    onAnswered: (route, method, status, seconds) => metrics.request(route, method, status, seconds),
    logRequest: logsRequests(config.logLevel)
      ? (fields) =>
          log.info(
            {
              reqId: nextRequestId(),
              ...fields,
              ...(typeof fields['url'] === 'string' ? { url: accessLogUrl(fields['url']) } : {}),
            },
            'request',
          )
      : undefined,
  });
  lane.install(app);
  // After the lane: connections end without a reset, answered requests first (connections.ts).
  manageConnections(app.server);
  return { admission, apiKeys, lane, endpoints, cors };
}
