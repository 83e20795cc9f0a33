/**
 * Watched reads (docs/watch.md): POST /subscriptions, DELETE /subscriptions/{id} and the
 * event stream GET /subscriptions/{id}/events, thin shells around WatchService. The shell's
 * part is what only HTTP knows: each read checked as a batch call is (the read-only
 * endpoint's schemas and error texts, with the item's index), who asks (admission's
 * verdict), and the stream's bytes (sse.ts).
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import {
  ErrorEnvelope,
  ReadOnlyBody,
  ReadOnlyParams,
  SubscriptionData,
  SubscriptionParams,
  subscriptionBody,
  successEnvelope,
} from '../../api/schemas.js';
import { GatewayError, isGatewayError } from '../../errors.js';
import { withContractName } from '../../service/batch.js';
import type { ReadOnlyRequest } from '../../service/read-only.js';
import type { StreamEndCode } from '../../service/watch/types.js';
import type { WatchCaller, WatchService } from '../../service/watch/watch-service.js';
import { admissionOf } from '../admission/hook.js';
import type { CorsHeaders } from '../cors.js';
import { toGatewayError } from '../error-handler.js';
import {
  RATE_LIMIT_HEADER,
  RATE_LIMIT_POLICY_HEADER,
  rateLimitHeaders,
  type UsageSink,
} from '../metering.js';
import { requestContext } from '../request-context.js';
import { SseStream } from '../sse.js';

export interface SubscriptionRoutesOptions {
  readonly watch: WatchService;
  /** WATCH_MAX_UNSENT_BYTES. */
  readonly maxUnsentBytes: number;
  /** The CORS headers of the stream's answer (it is written outside Fastify's onSend hook). */
  readonly cors?: CorsHeaders;
  /** The gateway ended a stream (metrics). */
  readonly onEnded?: (code: StreamEndCode) => void;
  /** Where each event's usage goes (one unit each: docs/usage.md). */
  readonly usage?: UsageSink | undefined;
}

export const subscriptionRoutes: FastifyPluginAsyncTypebox<SubscriptionRoutesOptions> = async (
  app,
  options,
) => {
  const { watch, usage } = options;

  app.post(
    '/subscriptions',
    {
      schema: {
        summary: 'Watch reads: subscribe to values pushed when they change',
        description:
          'Checks each read as POST /contract-calls/read-only would (its errors, with details.index; nothing is stored then) and stores a subscription owned by the caller’s API key (or client address). Its event stream, GET /subscriptions/{id}/events, sends one `values` event per block at which a read’s answer changed. See the README, "Watch a read".',
        tags: ['watch'],
        body: subscriptionBody(watch.limits.maxReads),
        response: { 201: successEnvelope(SubscriptionData), '4xx': ErrorEnvelope, '5xx': ErrorEnvelope },
      },
    },
    async (request, reply) => {
      const reads = checkedReads(request, request.body.reads);
      const created = await watch.create(reads, callerOf(request), requestContext(request));
      return reply.code(201).send({ success: true, data: { ...created, reads: [...created.reads] } });
    },
  );

  app.delete(
    '/subscriptions/:id',
    {
      schema: {
        summary: 'End a subscription and its open streams',
        tags: ['watch'],
        params: SubscriptionParams,
        response: {
          200: successEnvelope(SubscriptionData.properties.id),
          '4xx': ErrorEnvelope,
          '5xx': ErrorEnvelope,
        },
      },
    },
    async (request, reply) => {
      await watch.delete(request.params.id, callerOf(request));
      return reply.send({ success: true, data: request.params.id });
    },
  );

  app.get(
    '/subscriptions/:id/events',
    {
      // Written after reply.hijack(): logged and metered even when its client leaves (metering.ts).
      config: { stream: true },
      schema: {
        summary: 'The event stream of a subscription (Server-Sent Events)',
        description:
          'text/event-stream: `retry: 2000`, then `values` events (id `<height>:<index block hash>`, data {tipHeight, indexBlockHash, values: [{index, value, raw} | {index, error}]}), `reset` and a last `error` event. Opens with no key (the id is the credential); with a key, only the owner’s. Send Last-Event-ID to resume.',
        tags: ['watch'],
        params: SubscriptionParams,
        response: {
          200: Type.Unknown({ description: 'text/event-stream' }),
          '4xx': ErrorEnvelope,
          '5xx': ErrorEnvelope,
        },
      },
    },
    async (request, reply) => {
      let open: { close(): void } | undefined;
      let over = false;
      const sse = new SseStream(reply.raw, {
        maxUnsentBytes: options.maxUnsentBytes,
        onClose: () => {
          over = true;
          open?.close();
        },
        ...(options.onEnded === undefined ? {} : { onEnded: options.onEnded }),
        ...(usage === undefined
          ? {}
          : { onEvent: eventMeter(usage, admissionOf(request)?.key?.name ?? null) }),
      });
      const lastEventId = request.headers['last-event-id'];
      try {
        open = await watch.open(
          request.params.id,
          callerOf(request),
          sse,
          typeof lastEventId === 'string' && lastEventId !== '' ? lastEventId : undefined,
        );
      } catch (err) {
        sse.abandon();
        throw err;
      }
      // The client left while the stream was being opened.
      if (over) open.close();
      // The stream writes to the response itself (an idle stream then costs the socket and
      // little more); Fastify's onResponse hook still logs and counts it when it ends.
      reply.hijack();
      // Its head is written here, not by Fastify's hooks: the quotas' headers too (0 units to open).
      const limits = rateLimitHeaders(admissionOf(request)?.quotas, 0);
      sse.start({
        ...options.cors?.(request),
        ...(limits === undefined
          ? {}
          : { [RATE_LIMIT_POLICY_HEADER]: limits[0], [RATE_LIMIT_HEADER]: limits[1] }),
      });
      return reply;
    },
  );
};

/**
 * An event stream's events in the usage rows: one unit each, no request of their own (the
 * stream's request is counted once, when it ends, as every answer is).
 */
function eventMeter(usage: UsageSink, key: string | null): (bytes: number) => void {
  return (bytes) =>
    usage.record({
      key,
      route: EVENTS_ROUTE,
      function: '',
      outcome: 'hit',
      requests: 0,
      units: 1,
      upstreamRequests: 0,
      bytesSent: bytes,
    });
}

const EVENTS_ROUTE = '/subscriptions/{id}/events';

/** Who asks, as admission decided it. */
function callerOf(request: FastifyRequest): WatchCaller {
  const verdict = admissionOf(request);
  return { keyName: verdict?.key?.name, clientId: verdict?.clientId ?? request.ip };
}

/**
 * Each read checked as a batch call is (the read-only endpoint's path and body schemas, the
 * same compiler and texts), latest state only; the first failure, with its index, refuses all.
 */
function checkedReads(request: FastifyRequest, reads: readonly unknown[]): ReadOnlyRequest[] {
  const params = request.compileValidationSchema(ReadOnlyParams, 'params');
  const body = request.compileValidationSchema(ReadOnlyBody, 'body');
  return reads.map((item, index) => {
    try {
      const read = withContractName(item);
      if (typeof read !== 'object' || read === null || Array.isArray(read)) {
        throw new GatewayError('VALIDATION_ERROR', 'each read must be an object shaped as a batch call', {
          field: 'reads',
        });
      }
      for (const member of ['tip', 'cacheControl'] as const) {
        if (member in read) {
          throw new GatewayError(
            'VALIDATION_ERROR',
            `a watched read follows the latest state: it takes no ${member} (remove the member)`,
            { field: member },
          );
        }
      }
      for (const [validate, part] of [
        [params, 'params'],
        [body, 'body'],
      ] as const) {
        if (!validate(read)) throw toGatewayError({ validation: validate.errors, validationContext: part });
      }
      return read as ReadOnlyRequest;
    } catch (err) {
      if (!isGatewayError(err)) throw err;
      throw err.rephrased(`reads[${index}]: ${err.message}`, { ...err.details, index });
    }
  });
}
