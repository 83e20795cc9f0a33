/**
 * Answers that Node's HTTP parser and Fastify's router would otherwise give on their own, in
 * the envelope: a request that breaks HTTP/1.1 framing (conflicting Content-Length and
 * Transfer-Encoding, a bad method, ...), a request line or header section over Node's header
 * size limit, a request not received within the time limits, and a path with malformed
 * percent-encoding, and an HTTP/1.1 request without a Host header.
 *
 * Parser-level errors happen before there is a request object, so the answer is written to
 * the socket as raw HTTP/1.1 and the connection is closed: after a framing error nothing
 * further on that connection can be trusted.
 */
import { type IncomingMessage, maxHeaderSize as nodeMaxHeaderSize, type Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type ErrorVariant, GatewayError } from '../errors.js';
import { rawErrorResponse, sendError } from './reply.js';

/** What each parser-level failure is answered with: a VALIDATION_ERROR, of which variant. */
interface ParserAnswer {
  readonly variant?: ErrorVariant<'VALIDATION_ERROR'>;
  readonly message: string;
}

/**
 * Node reports one "header overflow" for the request line and the headers together (both
 * count against --max-http-header-size). When no line of the request has ended yet, or the
 * first line alone is over the limit, it was the URL (414); otherwise the headers (431).
 */
function overflowAnswer(rawPacket: unknown, maxHeaderSize: number): ParserAnswer {
  const packet = Buffer.isBuffer(rawPacket) ? rawPacket : undefined;
  const firstLineEnd = packet?.indexOf('\r\n') ?? -1;
  const inRequestLine = packet !== undefined && (firstLineEnd < 0 || firstLineEnd >= maxHeaderSize);
  return inRequestLine
    ? { variant: 'uri-too-long', message: `request URL is longer than the limit (${maxHeaderSize} bytes)` }
    : {
        variant: 'request-header-fields-too-large',
        message: `request header section is larger than the limit (${maxHeaderSize} bytes)`,
      };
}

type ParserError = NodeJS.ErrnoException & { rawPacket?: unknown; reason?: unknown };

function parserAnswer(err: ParserError, maxHeaderSize: number): ParserAnswer {
  // llhttp's own explanation, e.g. "Transfer-Encoding can't be present with Content-Length".
  const reason = typeof err.reason === 'string' ? err.reason : (err.code ?? 'parse error');
  switch (err.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return {
        variant: 'request-timeout',
        message: 'the request was not received completely within the time limit',
      };
    case 'HPE_HEADER_OVERFLOW':
      return overflowAnswer(err.rawPacket, maxHeaderSize);
    case 'HPE_INVALID_TRANSFER_ENCODING':
      return /content-length/i.test(reason)
        ? { message: 'conflicting Content-Length and Transfer-Encoding headers' }
        : { message: `malformed HTTP request: ${reason}` };
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
      return { message: 'duplicate or conflicting Content-Length headers' };
    default:
      return { message: `malformed HTTP request: ${reason}` };
  }
}

/** Fastify's `clientErrorHandler`: every parser-level failure answered in the envelope. */
export function clientErrorHandler(this: FastifyInstance, err: ParserError, socket: Socket): void {
  // A reset connection has nobody left to answer.
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const { variant, message } = parserAnswer(err, nodeMaxHeaderSize);
  const answer = new GatewayError('VALIDATION_ERROR', message, undefined, { variant });
  this.log.debug({ code: err.code, status: answer.status }, `client error: ${message}`);
  // Close once the answer is flushed: the rest of the connection's bytes cannot be trusted.
  if (socket.writable) socket.end(rawErrorResponse(answer));
  socket.destroySoon();
}

/**
 * CONNECT (a proxy tunnel request) never reaches a request listener: Node hands it to the
 * server's 'connect' event and, with no listener, drops the connection without a word. The
 * gateway is no proxy; it answers the envelope's METHOD_NOT_ALLOWED like any other method it
 * does not serve, and closes the connection.
 */
export function refuseConnect(server: Server): void {
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => {
    if (socket.writable)
      socket.end(
        rawErrorResponse(new GatewayError('METHOD_NOT_ALLOWED', 'CONNECT is not served by this gateway')),
      );
    socket.on('error', () => {});
  });
}

/** Fastify's `frameworkErrors`: router-level failures (bad percent-encoding, ...) in the envelope. */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  // The path alone: the message is logged, and a query may hold a token.
  const path = (request.raw.url ?? '').split('?')[0] ?? '';
  const message =
    error.code === 'FST_ERR_BAD_URL'
      ? `the request path is not valid percent-encoding: ${JSON.stringify(path.slice(0, 200))}`
      : error.code === 'FST_ERR_MAX_PARAM_LENGTH'
        ? 'a path segment is longer than the limit'
        : error.message;
  const variant = error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'uri-too-long' : undefined;
  sendError(request, reply, new GatewayError('VALIDATION_ERROR', message, undefined, { variant }));
}

/**
 * HTTP/1.1 requires a Host header. Node answers a request without one with a bare 400 of its
 * own (`requireHostHeader`); the server is created with that check off and it is made here
 * instead, in the envelope.
 */
export function requireHostHeader(app: FastifyInstance): void {
  app.addHook('onRequest', (request, reply, done) => {
    const raw = request.raw;
    if (raw.httpVersionMajor === 1 && raw.httpVersionMinor === 1 && request.headers.host === undefined) {
      reply.header('connection', 'close');
      sendError(
        request,
        reply,
        new GatewayError('VALIDATION_ERROR', 'an HTTP/1.1 request needs a Host header'),
      );
      return;
    }
    done();
  });
}
