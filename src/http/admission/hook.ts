/**
 * The admission verdict on Fastify's path: the front listener (src/http/fast-lane.ts) decided
 * it before the router ran; this hook raises a refusal as the envelope. Registered after the
 * Host and CORS hooks only so that a refusal carries CORS headers a browser can read; the
 * decision itself was made before anything else. A request that did not pass the front door
 * (a server without the lane, as in some tests) is decided here.
 */

import type { ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type Admission, type Verdict, verdictOf } from './admission.js';

const VERDICTS = new WeakMap<FastifyRequest, Verdict>();
const RESPONSES = new WeakMap<FastifyRequest, ServerResponse>();

export function installAdmission(app: FastifyInstance, admission: Admission): void {
  app.addHook('onRequest', async (request, reply) => {
    RESPONSES.set(request, reply.raw);
    const verdict = verdictOf(request.raw) ?? (await admission.admit(request.raw));
    VERDICTS.set(request, verdict);
    if (!verdict.ok) throw verdict.error;
  });
}

/** The admission verdict of a request on Fastify's path (undefined before its hook ran). */
export function admissionOf(request: FastifyRequest): Verdict | undefined {
  return VERDICTS.get(request) ?? verdictOf(request.raw);
}

/** The raw response of a request on Fastify's path: its 'close' tells when the client left. */
export function responseOf(request: FastifyRequest): ServerResponse | undefined {
  return RESPONSES.get(request);
}
