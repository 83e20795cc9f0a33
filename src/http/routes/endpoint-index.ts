/**
 * GET /contract-calls and GET /: what this gateway answers, one line per endpoint (from the
 * route summaries, so the list cannot drift from the routes). GET / sends browsers to the
 * explorer page instead.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ok } from '../../api/envelope.js';
import { successEnvelope } from '../../api/schemas.js';
import type { EndpointLine } from '../route-table.js';

const EXPLORER_PATH = '/explorer';

const IndexData = Type.Object({
  endpoints: Type.Array(
    Type.Object({ method: Type.String(), path: Type.String(), description: Type.String() }),
  ),
  openapi: Type.String({ description: 'where the OpenAPI document is' }),
});

/** A browser navigating asks for HTML first; API clients (curl: `*\/*`) do not. */
function wantsHtml(accept: string | undefined): boolean {
  return accept !== undefined && /(^|,)\s*text\/html\b/i.test(accept);
}

export const endpointIndexRoutes: FastifyPluginAsyncTypebox<{ endpoints: readonly EndpointLine[] }> = async (
  app,
  { endpoints },
) => {
  const listing = () =>
    ok({
      endpoints: [...endpoints].sort(
        (a, b) => a.path.localeCompare(b.path) || a.method.localeCompare(b.method),
      ),
      openapi: '/openapi.json',
    });

  app.get(
    '/contract-calls',
    {
      schema: {
        summary: 'List the endpoints (method, path, one line each)',
        tags: ['contract-calls'],
        response: { 200: successEnvelope(IndexData) },
      },
    },
    async () => listing(),
  );

  app.get(
    '/',
    {
      schema: {
        summary: 'Browsers (Accept: text/html) are sent to /explorer; others get the endpoint list',
        tags: ['contract-calls'],
        response: {
          200: successEnvelope(IndexData),
          303: successEnvelope(Type.Object({ location: Type.String() })),
        },
      },
    },
    async (request, reply) => {
      reply.header('vary', 'Accept');
      if (wantsHtml(request.headers.accept)) {
        return reply
          .code(303)
          .header('location', EXPLORER_PATH)
          .send(ok({ location: EXPLORER_PATH }));
      }
      return listing();
    },
  );
};
