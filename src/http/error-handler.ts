/**
 * Maps every failure to a gateway error, whose code (and variant) the error table gives a
 * status: gateway errors, Fastify's own (schema validation, malformed JSON, oversized bodies,
 * bad media types) and anything unexpected (INTERNAL_ERROR, logged as a bug). reply.ts sends
 * it in the envelope, under a fresh id written to the log line of that error.
 */

import type { FastifyError, FastifyInstance } from 'fastify';
import { type ErrorVariant, GatewayError, isGatewayError, variantWithStatus } from '../errors.js';
import { sendError } from './reply.js';
import type { RouteMethods } from './route-table.js';

/** Fastify error codes that are the client's fault, and what we answer for them. */
const FASTIFY_CLIENT_ERRORS: Record<
  string,
  { variant?: ErrorVariant<'VALIDATION_ERROR'>; message: (e: FastifyError) => string }
> = {
  FST_ERR_CTP_BODY_TOO_LARGE: {
    variant: 'content-too-large',
    message: () => 'request body is larger than the limit',
  },
  FST_ERR_CTP_INVALID_JSON_BODY: { message: (e) => `malformed JSON body: ${e.message}` },
  FST_ERR_CTP_EMPTY_JSON_BODY: { message: () => 'request body is empty; a JSON object is required' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    variant: 'unsupported-media-type',
    message: () => 'unsupported or malformed Content-Type; send application/json',
  },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { message: () => 'Content-Length does not match the body' },
  FST_ERR_CTP_INVALID_TYPE: { message: () => 'Content-Type header is invalid' },
};

/**
 * The values a field accepts when it failed a `const`/`enum` check (a union of literals such
 * as `network` fails one `const` per branch), so the message can name them all.
 */
function acceptedValues(
  validation: ReadonlyArray<{ keyword?: string; params?: unknown }>,
  path: string | undefined,
  issues: ReadonlyArray<{ path: string }>,
): unknown[] {
  const out: unknown[] = [];
  validation.forEach((v, i) => {
    if (issues[i]?.path !== path) return;
    const params = v.params as { allowedValue?: unknown; allowedValues?: unknown } | undefined;
    if (v.keyword === 'const' && params !== undefined) out.push(params.allowedValue);
    if (v.keyword === 'enum' && Array.isArray(params?.allowedValues)) out.push(...params.allowedValues);
  });
  return out;
}

export function toGatewayError(err: unknown): GatewayError {
  if (isGatewayError(err)) return err;
  const fe = err as FastifyError & {
    validation?: Array<{ instancePath?: string; message?: string; params?: unknown; keyword?: string }>;
  };
  if (fe !== null && typeof fe === 'object') {
    if (Array.isArray(fe.validation)) {
      const issues = fe.validation.map((v) => ({
        path: `${fe.validationContext ?? 'body'}${(v.instancePath ?? '').replaceAll('/', '.')}`,
        message: v.message ?? 'is invalid',
        ...(v.params !== undefined ? { params: v.params } : {}),
      }));
      const first = issues[0];
      const accepted = first === undefined ? [] : acceptedValues(fe.validation, issues[0]?.path, issues);
      return new GatewayError(
        'VALIDATION_ERROR',
        first === undefined
          ? 'request validation failed'
          : accepted.length > 0
            ? `${first.path} must be one of ${accepted.map((a) => JSON.stringify(a)).join(', ')}`
            : `${first.path} ${first.message}`,
        accepted.length > 0 ? { issues, accepted } : { issues },
      );
    }
    const known = typeof fe.code === 'string' ? FASTIFY_CLIENT_ERRORS[fe.code] : undefined;
    if (known !== undefined) {
      return new GatewayError('VALIDATION_ERROR', known.message(fe), undefined, { variant: known.variant });
    }
    if (fe instanceof SyntaxError && fe.statusCode === 400) {
      return new GatewayError('VALIDATION_ERROR', `malformed JSON body: ${fe.message}`);
    }
    // Another refusal of the framework or a plugin (the static files of /docs: 403, 412, 416):
    // the variant of its status, 400 when the table names none.
    if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
      return new GatewayError('VALIDATION_ERROR', fe.message, undefined, {
        variant: variantWithStatus('VALIDATION_ERROR', fe.statusCode),
      });
    }
  }
  return new GatewayError('INTERNAL_ERROR', 'internal error', undefined, { cause: err });
}

export function installErrorHandling(app: FastifyInstance, routes: Iterable<RouteMethods>): void {
  app.setErrorHandler((error, request, reply) => sendError(request, reply, toGatewayError(error)));
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? request.url;
    const allowed = new Set<string>();
    for (const { pattern, methods } of routes)
      if (pattern.test(path)) for (const m of methods) allowed.add(m);
    // Messages show the path as the client sent it (before `addr.name` was split).
    const shown = request.originalUrl.split('?')[0] ?? path;
    // A path that looks like a route of this very method but was not routed (a segment the
    // router refuses) is not found: "GET is not allowed ...; use GET" would contradict itself.
    if (allowed.size > 0 && !allowed.has(request.method)) {
      const allow = [...allowed].sort().join(', ');
      return sendError(
        request,
        reply,
        new GatewayError(
          'METHOD_NOT_ALLOWED',
          `${request.method} is not allowed on ${shown}; use ${allow}`,
          { allow: [...allowed].sort() },
          {
            headers: { allow },
          },
        ),
      );
    }
    return sendError(
      request,
      reply,
      new GatewayError('NOT_FOUND', `Route ${request.method} ${shown} not found`),
    );
  });
}
