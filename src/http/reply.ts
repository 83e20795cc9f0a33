/**
 * A node route's typed answer onto the wire (docs/node-routes.md): the node's status, content
 * type and body bytes as it gave them, with Cache-Status and Age on cached routes and the tip
 * the answer was read at on latest-state ones. The service never writes a header.
 */
import type { FastifyReply } from 'fastify';
import { cacheHeaders } from '../service/cache-status.js';
import type { NodeRouteAnswer } from '../service/node-routes.js';
import { TIP_HEIGHT_HEADER } from '../service/read-only.js';

export function sendNodeAnswer(reply: FastifyReply, answer: NodeRouteAnswer): FastifyReply {
  const headers: Record<string, string> = { 'content-type': answer.contentType };
  if (answer.cache !== undefined) Object.assign(headers, cacheHeaders(answer.cache));
  if (answer.tipHeight !== undefined) headers[TIP_HEIGHT_HEADER] = String(answer.tipHeight);
  return reply
    .code(answer.status)
    .headers(headers)
    .send(answer.body as never);
}
