/**
 * CORS for the public routes (CORS_ORIGINS): browsers on other origins may call the gateway
 * and read its cache headers. A small hook rather than @fastify/cors, because the rules are
 * narrow and fixed: admin routes never send CORS headers (a browser page must never be able
 * to drive the admin API with a token it found), preflights are answered only for paths
 * that exist, and the allowed methods and headers are the same everywhere.
 *
 * Which requests are preflights and which answers may carry CORS headers is admission's word
 * (its verdict's `kind` and `cors`, src/http/admission/admission.ts), not decided again here:
 * one classification of routes, made before anything else.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { admissionOf } from './admission/hook.js';
import { EXPOSED_ANSWER_HEADERS } from './reply.js';
import type { RouteMethods } from './route-table.js';

/** DELETE: a page ends the watched-read subscription it made (docs/watch.md). */
const CORS_ALLOW_METHODS = 'GET, POST, DELETE, OPTIONS';
/**
 * The request headers browsers may send, each by name (a `*` never covers `authorization`):
 * those node clients such as stacks.js send (its `x-hiro-product` and `x-hiro-version`), and
 * an API key in `x-api-key` or `authorization` (docs/access-control.md), and `last-event-id`,
 * which a fetch-based client sends to resume a watched read's stream (docs/watch.md).
 */
export const CORS_ALLOW_HEADERS =
  'content-type, authorization, x-api-key, x-hiro-product, x-hiro-version, accept, last-event-id';
const CORS_EXPOSE_HEADERS = EXPOSED_ANSWER_HEADERS;
/** How long a browser may reuse a preflight answer (seconds). */
const PREFLIGHT_MAX_AGE = '600';

/** Add a name to Vary, keeping what the route set (GET / varies on Accept). */
function addVary(reply: FastifyReply, name: string): void {
  const current = reply.getHeader('vary');
  const names =
    current === undefined
      ? []
      : String(current)
          .split(',')
          .map((v) => v.trim());
  if (!names.some((v) => v.toLowerCase() === name.toLowerCase())) names.push(name);
  reply.header('vary', names.filter((v) => v !== '').join(', '));
}

function pathOf(request: FastifyRequest): string {
  const url = request.raw.url ?? request.url;
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

/** The CORS headers an answer to this request carries (for an answer written outside Fastify's hooks). */
export type CorsHeaders = (request: FastifyRequest) => Record<string, string>;

/**
 * Installs CORS on every answer, and returns the headers a request's answer gets, for the one
 * answer that bypasses the onSend hook (a watched read's event stream writes its own head).
 */
export function installCors(
  app: FastifyInstance,
  origins: readonly string[],
  routes: Iterable<RouteMethods>,
): CorsHeaders {
  if (origins.length === 0) return () => ({}); // CORS_ORIGINS=none
  const any = origins.includes('*');
  const allowed = new Set(origins);

  /** The Access-Control-Allow-Origin value for this request, or undefined for none. */
  const allowOrigin = (request: FastifyRequest): string | undefined => {
    if (any) return '*';
    const origin = request.headers.origin;
    return origin !== undefined && allowed.has(origin) ? origin : undefined;
  };

  const corsHeaders = (request: FastifyRequest, reply: FastifyReply): boolean => {
    // With a list the answer depends on Origin: caches must keep one copy per origin.
    if (!any) addVary(reply, 'Origin');
    const origin = allowOrigin(request);
    if (origin === undefined) return false;
    reply.header('access-control-allow-origin', origin);
    return true;
  };

  const knownPath = (path: string): boolean => {
    for (const { pattern } of routes) if (pattern.test(path)) return true;
    return false;
  };

  // Preflights: OPTIONS has no route of its own, so it is answered here, before routing
  // ends in the not-found handler (whose root-level onRequest hooks run too). Registered after
  // admission's hook: a preflight is answered only once admitted as one (an OPTIONS on an admin
  // route is the admin rule's, and is never a preflight).
  app.addHook('onRequest', (request, reply, done) => {
    const verdict = admissionOf(request);
    if (verdict?.ok !== true || verdict.kind !== 'preflight' || !knownPath(pathOf(request))) return done();
    corsHeaders(request, reply);
    reply
      .code(204)
      .header('access-control-allow-methods', CORS_ALLOW_METHODS)
      .header('access-control-allow-headers', CORS_ALLOW_HEADERS)
      .header('access-control-max-age', PREFLIGHT_MAX_AGE)
      .send();
  });

  // Every other answer, refusals included (a browser page reads why it was refused), unless
  // the verdict says none: admin routes, and requests no verdict could be given for. A
  // preflight answered above has its headers already; one on a path no route serves (404)
  // gets none, as the browser would not use them.
  app.addHook('onSend', (request, reply, payload, done) => {
    const verdict = admissionOf(request);
    if (verdict?.cors === true && verdict.kind !== 'preflight' && corsHeaders(request, reply)) {
      reply.header('access-control-expose-headers', CORS_EXPOSE_HEADERS);
    }
    done(null, payload);
  });

  return (request) => {
    if (admissionOf(request)?.cors !== true) return {};
    const headers: Record<string, string> = any ? {} : { vary: 'Origin' };
    const origin = allowOrigin(request);
    if (origin === undefined) return headers;
    return {
      ...headers,
      'access-control-allow-origin': origin,
      'access-control-expose-headers': CORS_EXPOSE_HEADERS,
    };
  };
}
