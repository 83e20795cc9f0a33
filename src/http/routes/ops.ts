/** GET /health (liveness), GET /ready (readiness with checks), GET /metrics (Prometheus). */

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ok } from '../../api/envelope.js';
import { ErrorEnvelope, successEnvelope } from '../../api/schemas.js';
import type { CacheStore } from '../../cache/store.js';
import { probeStore } from '../../cache/stores/health.js';
import type { EventObserverStatus } from '../../chain/observer/start.js';
import { NETWORKS } from '../../config/index.js';
import { GatewayError } from '../../errors.js';
import type { Network } from '../../network.js';
import type { Metrics } from '../../observability/metrics.js';
import type { UpstreamHealth } from '../../observability/upstream-health.js';
import { readyPage } from '../ready-page.js';
import { sendError } from '../reply.js';

/** A browser navigating asks for HTML before anything else; API clients (curl: `*\/*`) do not. */
function wantsHtml(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  const first = accept.split(',')[0]?.trim().toLowerCase() ?? '';
  return first.startsWith('text/html');
}

export interface OpsOptions {
  /** Each network's believed tip height, for the page. */
  readonly tipHeight?: ((network: Network) => number | undefined) | undefined;
  readonly store: CacheStore;
  readonly metrics: Metrics;
  readonly upstream: UpstreamHealth;
  readonly isDraining: () => boolean;
  readonly startedAt: number;
  /** The event observer's state, when it runs (docs/events.md). */
  readonly observer?: (() => EventObserverStatus) | undefined;
}

/** /ready's view of the event observer: the last block it received and how long ago. */
function observerCheck(status: EventObserverStatus) {
  return {
    network: status.network,
    ...(status.listening === undefined ? {} : { listening: status.listening }),
    ...(status.lastBlock === undefined
      ? {}
      : { lastBlock: { ...status.lastBlock, ageMs: Math.round(status.lastBlock.ageMs) } }),
  };
}

const ReadyData = Type.Object({
  status: Type.Union([Type.Literal('ready'), Type.Literal('degraded')]),
  checks: Type.Object({
    store: Type.Object({ ok: Type.Boolean(), kind: Type.String(), error: Type.Optional(Type.String()) }),
    upstream: Type.Record(
      Type.String(),
      Type.Object({ state: Type.String() }, { additionalProperties: true }),
    ),
    observer: Type.Optional(
      Type.Object({
        network: Type.String(),
        listening: Type.Optional(Type.String()),
        lastBlock: Type.Optional(
          Type.Object({ height: Type.Integer(), indexBlockHash: Type.String(), ageMs: Type.Integer() }),
        ),
      }),
    ),
  }),
});

export const opsRoutes: FastifyPluginAsyncTypebox<OpsOptions> = async (app, opts) => {
  app.get(
    '/health',
    {
      schema: {
        summary: 'Liveness: the process is up and answering',
        tags: ['operations'],
        response: {
          200: successEnvelope(Type.Object({ status: Type.Literal('ok'), uptimeSeconds: Type.Number() })),
        },
      },
    },
    async () =>
      ok({ status: 'ok' as const, uptimeSeconds: Math.round((Date.now() - opts.startedAt) / 1000) }),
  );

  app.get(
    '/ready',
    {
      schema: {
        summary: 'Readiness: store reachable, Redis degraded or not, per-network upstream state',
        description:
          'Answers 200 with status "ready", or "degraded" while the persistent store (e.g. Redis) or an upstream is failing but requests are still answered; 503 while the process is shutting down.',
        tags: ['operations'],
        response: { 200: successEnvelope(ReadyData), 503: ErrorEnvelope },
      },
    },
    async (request, reply) => {
      if (opts.isDraining()) {
        return sendError(
          request,
          reply,
          new GatewayError('SERVICE_UNAVAILABLE', 'shutting down', { draining: true }),
        );
      }
      const store = await probeStore(opts.store);
      const upstream = Object.fromEntries(NETWORKS.map((n) => [n, opts.upstream.state(n)]));
      const healthy =
        store.ok && Object.values(upstream).every((u) => u.state === 'up' || u.state === 'unknown');
      const status = healthy ? ('ready' as const) : ('degraded' as const);
      const observer = opts.observer === undefined ? undefined : observerCheck(opts.observer());
      // A person's browser asks for HTML first: the same facts as a page (src/http/ready-page.ts).
      if (wantsHtml(request.headers.accept)) {
        // A string is sent as it is (the JSON schema serializes objects only).
        return reply.type('text/html; charset=utf-8').send(
          readyPage({
            status,
            store,
            networks: NETWORKS.map((n) => ({
              network: n,
              state: upstream[n]!.state,
              tipHeight: opts.tipHeight?.(n),
              upstreams: opts.upstream.upstreams(n),
            })),
            entriesInMemory: opts.store.hotEntries?.() ?? 0,
            recent: opts.metrics.recentCache(),
            observer: observer?.lastBlock,
          }) as never,
        );
      }
      return ok({
        status,
        checks: {
          store,
          upstream,
          ...(observer === undefined ? {} : { observer }),
        },
      });
    },
  );

  app.get(
    '/metrics',
    { schema: { summary: 'Prometheus metrics (text exposition format)', tags: ['operations'] } },
    async (_request, reply) => {
      const text = await opts.metrics.registry.metrics();
      return reply.type(opts.metrics.registry.contentType).send(text);
    },
  );
};
