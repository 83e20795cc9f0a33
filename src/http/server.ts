/**
 * The Fastify server and the hooks every request goes through: options (body limit, request
 * ids, lazy child loggers, JSON parsing, Ajv), one log line and one metric per request, and
 * closing keep-alive connections while draining. Routes are registered by createGateway.
 */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, {
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify';
import pino from 'pino';
import type { Config } from '../config/index.js';
import { loggedUrl, redactSecrets } from '../config/redact.js';
import { admissionOf } from './admission/hook.js';
import { routeKind, takesKeys } from './admission/routes.js';
import { clientErrorHandler, frameworkErrors, refuseConnect } from './client-errors.js';
import { splitContractId } from './contract-id-url.js';
import { lazyChildLogger } from './lazy-logger.js';
import { onAbandonedStream } from './metering.js';
import { cacheOutcomeOf, upstreamUsageOf } from './request-context.js';
import { nextRequestId } from './request-ids.js';

type ServerConfig = Pick<
  Config,
  'logLevel' | 'bodyLimitBytes' | 'httpHeadersTimeoutMs' | 'httpRequestTimeoutMs' | 'httpMaxConnections'
>;

/**
 * Longest path parameter the router accepts. Far above any valid one (an `addr.name` is at
 * most 41 + 1 + 128 characters), so that a valid name is never refused for its length by the
 * router; longer ones reach the handlers, which refuse them with a precise error.
 */
const MAX_PARAM_LENGTH = 2048;

export function createServer(config: ServerConfig) {
  const app = Fastify({
    // ISO timestamps: readable in a terminal and sortable, unlike epoch milliseconds.
    logger: {
      level: config.logLevel,
      timestamp: pino.stdTimeFunctions.isoTime,
      // The last net under every log line, whatever put a configured secret in it (an error's
      // message, a URL): the line as written, unchanged when it holds none.
      hooks: { streamWrite: redactSecrets },
    },
    // One line per request is written by our onResponse hook instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: config.bodyLimitBytes,
    // No trustProxy here: the client's address is decided once, by the admission path
    // (src/http/admission/), for the fast lane and the routes alike.
    genReqId: nextRequestId,
    childLoggerFactory: (logger, bindings, options) => lazyChildLogger(logger, bindings, options),
    requestIdHeader: false,
    // See installJsonParsing: tuple keys such as `constructor` are plain data.
    onProtoPoisoning: 'ignore',
    onConstructorPoisoning: 'ignore',
    ajv: {
      customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: true, allErrors: false },
    },
    // `/health/` is `/health`; `addr.name` is `addr/name` (see contract-id-url.ts).
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PARAM_LENGTH },
    rewriteUrl: (req) => splitContractId(req.url ?? '/'),
    // Answers of the HTTP parser and the router, in the envelope too (client-errors.ts).
    clientErrorHandler,
    // While closing, Fastify would answer every request that arrives on an open connection
    // with a bare 503 of its own: the gateway's drain answers them itself (hits as usual, the
    // upstream's waits in the envelope, each with Connection: close; connections.ts).
    return503OnClosing: false,
    frameworkErrors,
    // Slow or stalled senders are cut off (408) and cannot hold sockets: the header section
    // must arrive within HTTP_HEADERS_TIMEOUT_MS, the whole request within
    // HTTP_REQUEST_TIMEOUT_MS. Node checks these every connectionsCheckingInterval, so the
    // interval follows the smaller limit.
    requestTimeout: config.httpRequestTimeoutMs,
    http: {
      headersTimeout: config.httpHeadersTimeoutMs,
      requestTimeout: config.httpRequestTimeoutMs,
      connectionsCheckingInterval: Math.max(10, Math.min(1000, Math.floor(config.httpHeadersTimeoutMs / 4))),
      // Checked in requireHostHeader instead, so that the answer is an envelope.
      requireHostHeader: false,
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  // Beyond this many open connections Node drops new ones at once.
  app.server.maxConnections = config.httpMaxConnections;
  refuseConnect(app.server);
  return app;
}

export interface RequestHooksOptions {
  readonly logLevel: Config['logLevel'];
  /** Told of every answered request (metrics). */
  readonly onAnswered: (route: string, method: string, status: number, seconds: number) => void;
  /** Whether the gateway is shutting down. */
  readonly isDraining: () => boolean;
}

/** Whether one access log line is written per request at this level. */
export function logsRequests(level: Config['logLevel']): boolean {
  return ['info', 'debug', 'trace'].includes(level);
}

export function installRequestHooks(app: FastifyInstance, options: RequestHooksOptions): void {
  // Draining: answers given while closing end their keep-alive connection, so that
  // server.close() is not held open by clients that would otherwise reuse it.
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (options.isDraining()) reply.header('connection', 'close');
    done(null, payload);
  });
  const logRequests = logsRequests(options.logLevel);
  const reported = new WeakSet<FastifyRequest>();
  const answered = (request: FastifyRequest, reply: FastifyReply): void => {
    if (reported.has(request)) return;
    reported.add(request);
    const ms = reply.elapsedTime;
    options.onAnswered(request.routeOptions.url ?? 'unmatched', request.method, reply.statusCode, ms / 1000);
    if (logRequests) {
      request.log.info(
        {
          method: request.method,
          url: accessLogUrl(request.url),
          statusCode: reply.statusCode,
          ms: Math.round(ms * 100) / 100,
          ...cacheAndUpstreamFields(request, reply),
        },
        'request',
      );
    }
  };
  app.addHook('onResponse', (request, reply, done) => {
    answered(request, reply);
    done();
  });
  // An event stream its client left: logged and counted once, as every answer.
  onAbandonedStream(app, answered);
}

/**
 * A request's URL as log lines show it: no configured secret anywhere, and the query's values
 * only on the public API routes (a read's `tip`, `ttl`...; credential-named ones hidden there
 * too). Any other route's values are `[redacted]`: `/admin/...?token=` must not put the admin
 * token in the log, and neither must a misspelt or percent-encoded admin path.
 */
export function accessLogUrl(url: string): string {
  const q = url.indexOf('?');
  return loggedUrl(url, takesKeys(routeKind(q < 0 ? url : url.slice(0, q))));
}

/**
 * The access line's cache outcome (from the answer's Cache-Status) and what the request spent
 * upstream: `upstreamMs` (sum of its attempts), `upstreamAttempts`, `upstream` (id) and
 * `upstreamHost`. A request that made no upstream attempt of its own (a hit, or a coalesced
 * joiner: the leader's line carries the call) has no upstream fields.
 */
function cacheAndUpstreamFields(request: FastifyRequest, reply: FastifyReply): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  const key = admissionOf(request)?.key;
  if (key !== undefined) fields['key'] = key.name;
  const cache = cacheOutcomeOf(reply);
  if (cache !== undefined) fields['cache'] = cache;
  const usage = upstreamUsageOf(request);
  if (usage !== undefined && usage.attempts > 0) {
    fields['upstreamMs'] = Math.round(usage.ms * 100) / 100;
    fields['upstreamAttempts'] = usage.attempts;
    fields['upstream'] = usage.upstream;
    fields['upstreamHost'] = usage.host;
  }
  return fields;
}
