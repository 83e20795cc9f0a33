/**
 * The admission verdict on Fastify's path. The front listener (src/http/fast-lane.ts) decided
 * it before the lane or the router ran; this hook raises a refusal as the envelope. It is
 * Fastify's second onRequest hook: only the Host check runs before it, because a request
 * without Host is malformed HTTP/1.1 and is answered 400 whatever the verdict, as the parser's
 * own refusals are (the verdict is already there for every answer's CORS headers). The CORS
 * preflight answer and everything else come after it. A request whose front-door decision
 * failed is decided again here, and whatever went wrong is answered by the error handler.
 */

import type { ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { loggedUrl } from '../../config/redact.js';
import { type Admission, type Verdict, verdictOf } from './admission.js';

const RESPONSES = new WeakMap<FastifyRequest, ServerResponse>();

export function installAdmission(app: FastifyInstance, admission: Admission): void {
  app.addHook('onRequest', async (request, reply) => {
    RESPONSES.set(request, reply.raw);
    const verdict = verdictOf(request.raw) ?? (await admission.admit(request.raw));
    if (verdict.ok) return;
    if (verdict.rule === 'admin-token') {
      request.log.warn(
        {
          admin: true,
          method: request.method,
          // An admin route's query values are never logged, as on its access line (server.ts).
          url: loggedUrl(request.url, false),
          ip: request.ip,
          hadCredentials: request.headers.authorization !== undefined,
        },
        'admin request refused: missing or wrong bearer token',
      );
    }
    throw verdict.error;
  });
}

/** The admission verdict of a request on Fastify's path (undefined only if none could be made). */
export function admissionOf(request: FastifyRequest): Verdict | undefined {
  return verdictOf(request.raw);
}

/** The raw response of a request on Fastify's path: its 'close' tells when the client left. */
export function responseOf(request: FastifyRequest): ServerResponse | undefined {
  return RESPONSES.get(request);
}
