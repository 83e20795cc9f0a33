/**
 * A node route's typed answer onto the wire (docs/node-routes.md): the node's status, content
 * type and body bytes as it gave them, with Cache-Status and Age on cached routes and the tip
 * the answer was read at on latest-state ones. The service never writes a header.
 */
import type { FastifyReply } from 'fastify';
import type { RenderedAnswer } from '../service/answer.js';
import { cacheHeaders } from '../service/cache-status.js';
import type { NodeRouteAnswer } from '../service/node-routes.js';
import { TIP_HEIGHT_HEADER } from '../service/read-only.js';

export function sendNodeAnswer(reply: FastifyReply, answer: NodeRouteAnswer): FastifyReply {
  const headers: Record<string, string> = { 'content-type': answer.contentType };
  if (answer.cache !== undefined) Object.assign(headers, cacheHeaders(answer.cache));
  if (answer.tipHeight !== undefined) headers[TIP_HEIGHT_HEADER] = String(answer.tipHeight);
  // As bytes: Fastify would add "; charset=utf-8" to a bare application/json for a string, and
  // the node's content type is passed through exactly.
  return reply.code(answer.status).headers(headers).send(Buffer.from(answer.body, 'utf8'));
}

/**
 * An answer rendered in the node's own shape (call-read, the contract interface) with the
 * node's content type, `application/json` without a charset, as bytes for the same reason.
 */
export function sendNodeShaped(reply: FastifyReply, answer: RenderedAnswer): FastifyReply {
  return reply
    .code(answer.status)
    .headers({ ...answer.headers, 'content-type': 'application/json' })
    .send(Buffer.from(answer.body, 'utf8'));
}
