/** The request's exact text, which memoizes a read-only call's preparation (src/service/prepared-call.ts). */
import type { FastifyRequest } from 'fastify';
import type { RequestText } from '../service/prepared-call.js';

/** The request's exact text (URL and raw body), which memoizes its preparation; undefined without a body. */
export function requestText(request: FastifyRequest): RequestText | undefined {
  const raw = request.rawBody;
  return raw === undefined ? undefined : { url: request.url, body: raw };
}
