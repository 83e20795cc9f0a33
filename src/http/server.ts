/**
 * The Fastify server and the hooks every request goes through: options (body limit, request
 * ids, lazy child loggers, JSON parsing, Ajv), one log line and one metric per request, and
 * closing keep-alive connections while draining. Routes are registered by createGateway.
 */
import { randomUUID } from 'node:crypto';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance, LogController } from 'fastify';
import type { Config } from '../config.js';
import { lazyChildLogger } from './lazy-logger.js';

type ServerConfig = Pick<Config, 'logLevel' | 'bodyLimitBytes'>;

export function createServer(config: ServerConfig) {
  return Fastify({
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
}

export interface RequestHooksOptions {
  readonly logLevel: Config['logLevel'];
  /** Told of every answered request (metrics). */
  readonly onAnswered: (route: string, method: string, status: number, seconds: number) => void;
  /** Whether the gateway is shutting down. */
  readonly isDraining: () => boolean;
}

export function installRequestHooks(app: FastifyInstance, options: RequestHooksOptions): void {
  // Draining: answers given while closing end their keep-alive connection, so that
  // server.close() is not held open by clients that would otherwise reuse it.
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (options.isDraining()) reply.header('connection', 'close');
    done(null, payload);
  });
  const logRequests = ['info', 'debug', 'trace'].includes(options.logLevel);
  app.addHook('onResponse', (request, reply, done) => {
    const ms = reply.elapsedTime;
    options.onAnswered(request.routeOptions.url ?? 'unmatched', request.method, reply.statusCode, ms / 1000);
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
}
