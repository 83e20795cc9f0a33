/**
 * The one place where a service's answer becomes status, headers and bytes (docs/http.md):
 * Cache-Status and Age from what the cache did, X-Canonical-Stacks-Tip-Height from the tip the
 * answer was read at, the content type of its shape. Services return values (src/service/
 * answer.ts, node-routes.ts) and never write a header.
 */
import type { FastifyReply } from 'fastify';
import { JSON_CONTENT_TYPE, type RenderedAnswer } from '../service/answer.js';
import { type CacheView, cacheHeaders, TIP_HEIGHT_HEADER } from '../service/cache-status.js';
import type { NodeRouteAnswer } from '../service/node-routes.js';

function headersOf(
  contentType: string,
  cache: CacheView | undefined,
  tipHeight: number | undefined,
): Record<string, string> {
  return { 'content-type': contentType, ...originHeaders(cache, tipHeight) };
}

/** Cache-Status, Age and X-Canonical-Stacks-Tip-Height of an answer (or an error) a cache gave. */
export function originHeaders(
  cache: CacheView | undefined,
  tipHeight: number | undefined,
): Record<string, string> {
  const headers: Record<string, string> = {};
  if (cache !== undefined) Object.assign(headers, cacheHeaders(cache));
  if (tipHeight !== undefined) headers[TIP_HEIGHT_HEADER] = String(tipHeight);
  return headers;
}

/** An answer in the gateway's envelope (JSON text sent as it is: nothing is stringified again). */
export function sendAnswer(reply: FastifyReply, answer: RenderedAnswer): FastifyReply {
  return reply
    .code(answer.status)
    .headers(headersOf(JSON_CONTENT_TYPE, answer.cache, answer.tipHeight))
    .send(answer.body as never);
}

/**
 * An answer rendered in the node's own shape (call-read, the contract interface) with the
 * node's content type, `application/json` without a charset, sent as bytes: Fastify would add
 * "; charset=utf-8" to a bare application/json for a string.
 */
export function sendNodeShaped(reply: FastifyReply, answer: RenderedAnswer): FastifyReply {
  return reply
    .code(answer.status)
    .headers(headersOf('application/json', answer.cache, answer.tipHeight))
    .send(Buffer.from(answer.body, 'utf8'));
}

/** A forwarded node route's answer: the node's status, content type and body bytes as it gave them. */
export function sendNodeAnswer(reply: FastifyReply, answer: NodeRouteAnswer): FastifyReply {
  return reply
    .code(answer.status)
    .headers(headersOf(answer.contentType, answer.cache, answer.tipHeight))
    .send(Buffer.from(answer.body, 'utf8'));
}
