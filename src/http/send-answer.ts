/**
 * A service's RenderedAnswer onto the wire, the one way every route sends one: status, headers,
 * and the body text as it is (already JSON: Fastify sends a string payload without its response
 * serializer, so nothing is parsed or stringified again).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RenderedAnswer } from '../service/answer.js';
import type { RequestText } from '../service/prepared-call.js';

export function sendAnswer(reply: FastifyReply, answer: RenderedAnswer): FastifyReply {
  return reply
    .code(answer.status)
    .headers(answer.headers)
    .send(answer.body as never);
}

/** The request's exact text (URL and raw body), which memoizes its preparation; undefined without a body. */
export function requestText(request: FastifyRequest): RequestText | undefined {
  const raw = request.rawBody;
  return raw === undefined ? undefined : { url: request.url, body: raw };
}
