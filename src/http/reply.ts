/**
 * The one place where values become an HTTP answer (docs/http.md): a service's answer, a batch
 * item's meta, an error (on Fastify's path, or written raw to a socket the parser refused) and a
 * fast-lane replay get their status and headers here, and nowhere else.
 *
 * - The status: 200 for an answer, the node's own for a forwarded node route, and for an error
 *   its code's row in the error table (src/errors.ts), or the row's entry for its variant.
 * - `Cache-Status` (RFC 9211) and `Age` (RFC 9111) from what the cache did (a CacheView), the
 *   tip header from the tip the answer was read at, `Retry-After` from an error's retry time.
 * - The content type of the answer's shape.
 *
 * Services return values (src/service/answer.ts, node-route-service.ts) and never write a header; a
 * replay repeats what this module sent, with the headers that move per answer made here too.
 *
 * Cache-Status, by what the cache did:
 *   hit                      -> `clarity-cache; hit; ttl=<seconds left>` (ttl only when finite)
 *   miss                     -> `clarity-cache; fwd=miss[; stored][; ttl=N]`
 *   coalesced miss           -> `clarity-cache; fwd=miss; collapsed[; stored]`
 *   bustCache (bypass)       -> `clarity-cache; fwd=request[; stored]`
 *   stale entry refetched    -> `clarity-cache; fwd=stale[; collapsed][; stored][; ttl=N]`
 *   stale-while-revalidate   -> `clarity-cache; hit; ttl=-<seconds stale>; detail=stale-while-revalidate`
 *   stale-if-error           -> `clarity-cache; fwd=stale; ttl=-<seconds stale>; detail=stale-if-error`
 *
 * A negative ttl is RFC 9211's way of saying how long ago the answer stopped being fresh. A
 * stale-if-error answer went forward (the refetch failed), so it says fwd=stale, not hit.
 */
import { type ServerResponse, STATUS_CODES } from 'node:http';
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import { fail } from '../api/envelope.js';
import type { CacheEntry } from '../cache/entry.js';
import { type CacheView, votesOf } from '../cache/view.js';
import { redact } from '../config/redact.js';
import { type GatewayError, newErrorId } from '../errors.js';
import type { LaneReuse, RenderedAnswer } from '../service/answer.js';
import type { NodeRouteAnswer } from '../service/node-route-service.js';

export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';
/** The cache's name in Cache-Status (RFC 9211: the first member names the cache). */
export const CACHE_NAME = 'clarity-cache';
/** Read back by the access line (request-context.ts, the fast lane): what the client was told. */
export const CACHE_STATUS_HEADER = 'cache-status';
/** The tip height an answer was read at, or is current at (docs/freshness.md). */
export const TIP_HEIGHT_HEADER = 'x-canonical-stacks-tip-height';
const AGE_HEADER = 'age';
const RETRY_AFTER_HEADER = 'retry-after';
/** The headers of an answer a browser's script may read (CORS), as they are usually spelt. */
export const EXPOSED_ANSWER_HEADERS =
  'Cache-Status, Age, Retry-After, X-Canonical-Stacks-Tip-Height, Clarity-Cache-Cost, RateLimit-Policy, RateLimit';

// --- answers ------------------------------------------------------------------------------------

/** An answer in the gateway's envelope (JSON text sent as it is: nothing is stringified again). */
export function sendAnswer(reply: FastifyReply, answer: RenderedAnswer): FastifyReply {
  return reply
    .code(200)
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
    .code(200)
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

function headersOf(
  contentType: string,
  cache: CacheView | undefined,
  tipHeight: number | undefined,
): Record<string, string> {
  return { 'content-type': contentType, ...originHeaders(cache, tipHeight) };
}

/** Cache-Status, Age and the tip header of an answer (or an error) a cache gave. */
function originHeaders(cache: CacheView | undefined, tipHeight: number | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  if (cache !== undefined) Object.assign(headers, cacheHeaders(cache));
  if (tipHeight !== undefined) headers[TIP_HEIGHT_HEADER] = String(tipHeight);
  return headers;
}

// --- errors -------------------------------------------------------------------------------------

/** A gateway error in the envelope under a fresh id, logged with that id. */
export function sendError(request: FastifyRequest, reply: FastifyReply, err: GatewayError): FastifyReply {
  if (err.retryAfter !== undefined) reply.header(RETRY_AFTER_HEADER, String(err.retryAfter));
  if (err.headers !== undefined) reply.headers(err.headers);
  if (err.origin !== undefined) reply.headers(originHeaders(err.origin.cache, err.origin.tipHeight));
  return reply.code(err.status).type(JSON_CONTENT_TYPE).send(errorEnvelope(request.log, err));
}

/** The envelope of a gateway error under a fresh id, logged with that id (a batch item's error, too). */
export function errorEnvelope(log: FastifyBaseLogger, err: GatewayError): ReturnType<typeof fail> {
  const id = newErrorId();
  const logFields = { errorId: id, code: err.code, status: err.status, details: err.details };
  if (err.upstreamText !== undefined && (log.level === 'debug' || log.level === 'trace'))
    log.debug({ errorId: id, upstreamText: redact(err.upstreamText) }, 'upstream error text');
  if (err.code === 'INTERNAL_ERROR') log.error({ ...logFields, err: err.cause ?? err }, err.message);
  else if (err.status >= 500 || err.code === 'RATE_LIMIT_EXCEEDED') log.warn(logFields, err.message);
  else log.info(logFields, err.message);
  return fail({
    id,
    code: err.code,
    message: err.message,
    ...(err.details !== undefined ? { details: err.details } : {}),
  });
}

/**
 * A gateway error as a raw HTTP/1.1 answer that closes its connection, for a socket with no
 * reply object (the parser refused the request, or a CONNECT): only its envelope, no
 * Retry-After or cache headers, which such a refusal never has.
 */
export function rawErrorResponse(err: GatewayError): string {
  const status = err.status;
  const body = JSON.stringify(fail({ id: newErrorId(), code: err.code, message: err.message }));
  return [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}`,
    `Content-Type: ${JSON_CONTENT_TYPE}`,
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    '',
    body,
  ].join('\r\n');
}

// --- batch items --------------------------------------------------------------------------------

/** One batch item as values: the single endpoint's answer, or the error it would answer. */
export type BatchItem =
  | { readonly answer: RenderedAnswer }
  | { readonly error: GatewayError; readonly envelope: string };

/**
 * A batch item's text: the single endpoint's envelope with `meta` added, the status, Cache-Status
 * and tip height that endpoint would have sent as headers.
 */
export function batchItemText(item: BatchItem): string {
  if ('answer' in item) {
    const { body, cache, tipHeight } = item.answer;
    return withMeta(body, 200, cache, tipHeight);
  }
  // A cached (err …) says where it came from, as the single endpoint's headers do.
  const { error } = item;
  return withMeta(item.envelope, error.status, error.origin?.cache, error.origin?.tipHeight);
}

function withMeta(
  envelope: string,
  status: number,
  cache: CacheView | undefined,
  tipHeight: number | undefined,
): string {
  const cacheStatus = cache === undefined ? undefined : cacheHeaders(cache)[CACHE_STATUS_HEADER];
  const meta = `{"status":${status},"cacheStatus":${cacheStatus === undefined ? 'null' : JSON.stringify(cacheStatus)},"tipHeight":${tipHeight !== undefined && Number.isSafeInteger(tipHeight) ? tipHeight : 'null'}}`;
  // Every envelope is a JSON object: splice meta in before its closing brace (no re-parse).
  return `${envelope.slice(0, envelope.lastIndexOf('}'))},"meta":${meta}}`;
}

// --- replays ------------------------------------------------------------------------------------

/**
 * The headers that change per replay of an offered answer (Cache-Status, Age and a tip that
 * moves with the chain), made once per offer: undefined when nothing changes (an answer no
 * cache gave, e.g. a decode).
 */
export function replayHeaders(reuse: LaneReuse): ((now: number) => readonly string[]) | undefined {
  return reuse.hit === undefined ? undefined : hitHeaderPairs(reuse.hit, reuse.tipHeight);
}

/**
 * A replay: the status and headers this module rendered for the full path's answer (with the
 * per-replay ones recomputed), and its body bytes. Nothing is built here per answer.
 */
export function sendReplay(
  res: ServerResponse,
  status: number,
  headers: readonly string[],
  body: Buffer,
): void {
  res.writeHead(status, headers as string[]);
  res.end(body);
}

// --- Cache-Status and Age -----------------------------------------------------------------------

export function cacheHeaders(view: CacheView, now = Date.now()): { 'cache-status': string; age: string } {
  const votes = votesOf(view);
  if (votes === undefined) return cacheStatusOf(view, now);
  // Attested answers (docs/consensus.md): how many upstreams gave the bytes served.
  const plain = cacheStatusOf(view, now);
  return { 'cache-status': `${plain['cache-status']}; attested=${votes}`, age: plain.age };
}

function cacheStatusOf(view: CacheView, now: number): { 'cache-status': string; age: string } {
  if (view.outcome === 'hit' && view.entry !== undefined) {
    const { storedAt, staleAt } = view.entry;
    const age = String(Math.max(0, Math.floor((now - storedAt) / 1000)));
    if (view.stale === 'while-revalidate' || view.stale === 'if-error') {
      const staleFor = Math.max(0, Math.floor((now - (view.staleSince ?? now)) / 1000));
      const ttl = staleFor === 0 ? '0' : `-${staleFor}`;
      const head = view.stale === 'if-error' ? 'fwd=stale' : 'hit';
      return {
        'cache-status': `${CACHE_NAME}; ${head}; ttl=${ttl}; detail=stale-${view.stale}`,
        age,
      };
    }
    // RFC 9211 ttl: the freshness left, which ends at staleAt (equal to expiresAt without a stale window).
    const ttl = staleAt === null ? '' : `; ttl=${Math.max(0, Math.floor((staleAt - now) / 1000))}`;
    return { 'cache-status': `${CACHE_NAME}; hit${ttl}`, age };
  }
  const fwd = view.outcome === 'bypass' ? 'request' : view.stale === 'refetch' ? 'stale' : 'miss';
  const collapsed = view.outcome === 'coalesced' ? '; collapsed' : '';
  const stored = view.stored ? '; stored' : '';
  const ttl = view.stored && view.ttlMs !== undefined ? `; ttl=${Math.floor(view.ttlMs / 1000)}` : '';
  return { 'cache-status': `${CACHE_NAME}; fwd=${fwd}${collapsed}${stored}${ttl}`, age: '0' };
}

/**
 * The hit headers of one entry as flat name/value pairs (and the tip it tells, when it moves
 * with the chain), for an answer replayed many times a second: the same array object while Age
 * and ttl have not moved to another whole second, so a replay builds no text (the fast lane also
 * keeps its joined header list by that identity).
 */
export function hitHeaderPairs(
  entry: CacheEntry,
  tipHeight?: () => number | undefined,
): (now: number) => readonly string[] {
  let age = Number.NaN;
  let ttl = Number.NaN;
  let tip: number | undefined;
  let pairs: readonly string[] = [];
  return (now) => {
    const a = Math.floor((now - entry.storedAt) / 1000);
    const t = entry.staleAt === null ? 0 : Math.floor((entry.staleAt - now) / 1000);
    const h = tipHeight?.();
    if (a !== age || t !== ttl || h !== tip || pairs.length === 0) {
      const c = cacheHeaders({ outcome: 'hit', entry, stored: false, ttlMs: undefined }, now);
      pairs =
        h === undefined
          ? [CACHE_STATUS_HEADER, c['cache-status'], AGE_HEADER, c.age]
          : [CACHE_STATUS_HEADER, c['cache-status'], AGE_HEADER, c.age, TIP_HEIGHT_HEADER, String(h)];
      age = a;
      ttl = t;
      tip = h;
    }
    return pairs;
  };
}
