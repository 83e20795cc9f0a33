/**
 * JSON body parsing that keeps the raw text beside the parsed body: the read-only service uses
 * it as a memo key, so a repeated identical request skips re-validating and re-hashing its
 * arguments. Any Content-Type is parsed as JSON (`curl -d` sends form encoding by default).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';

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
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, keepingRaw);
  app.addContentTypeParser('*', { parseAs: 'string' }, keepingRaw);
}
