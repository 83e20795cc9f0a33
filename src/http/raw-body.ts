/**
 * JSON body parsing that keeps the raw text beside the parsed body: the read-only service uses
 * it as a memo key, so a repeated identical request skips re-validating and re-hashing its
 * arguments.
 *
 * Bodies are JSON. They are parsed as JSON when sent as `application/json`, as `text/plain`
 * (what a browser's `fetch` sends without preflight, and what many scripts send), or with no
 * Content-Type at all; any other type is refused with VALIDATION_ERROR and HTTP 415, so a
 * form-encoded or binary body is never guessed at.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { GatewayError } from '../errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The request body as received, when it was parsed as JSON. */
    rawBody?: string;
  }
}

export function installJsonParsing(app: FastifyInstance): void {
  // Tuple keys such as `constructor` stay plain data: JSON.parse makes them own properties and
  // the codec never assigns through them, so the poisoning checks are not needed.
  const parse = app.getDefaultJsonParser('ignore', 'ignore');
  const keepingRaw = (
    request: FastifyRequest,
    body: string | Buffer,
    done: (err: Error | null, body?: unknown) => void,
  ): void => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    request.rawBody = text;
    parse(request, text, done);
  };
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(['application/json', 'text/plain'], { parseAs: 'string' }, keepingRaw);
  // The catch-all also receives bodies sent without a Content-Type (Fastify looks up "").
  app.addContentTypeParser('*', { parseAs: 'string' }, (request, body, done) => {
    const type = request.headers['content-type'];
    if (type === undefined || type.trim() === '') return keepingRaw(request, body, done);
    done(
      new GatewayError(
        'VALIDATION_ERROR',
        `unsupported Content-Type ${JSON.stringify(type.slice(0, 100))}; send JSON as application/json (text/plain or no Content-Type are read as JSON too)`,
        { contentType: type.slice(0, 100), accepted: ['application/json', 'text/plain'] },
        { variant: 'unsupported-media-type' },
      ),
    );
  });
}
