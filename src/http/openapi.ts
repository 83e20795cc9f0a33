/**
 * OpenAPI 3.1, generated from the route schemas (@fastify/swagger), served at /openapi.json,
 * with an interactive reference at /docs (@fastify/swagger-ui). Registered before the routes
 * so that every route is captured.
 */
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';

export async function registerOpenApi(app: FastifyInstance, options: { admin: boolean }): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'clarity-cache',
        version: '0.1.0',
        description:
          'HTTP/JSON caching gateway in front of the Stacks node API for Clarity smart contracts. Every response is an envelope: {success, data} or {success: false, error: {id, code, message, details}}.',
      },
      tags: [
        {
          name: 'contract-calls',
          description: 'The four operations of the interface, and batches of read-only calls',
        },
        {
          name: 'node-compatible',
          description:
            "The Stacks node's own read endpoints, answered from the cache (point any Stacks client here)",
        },
        { name: 'operations', description: 'Health, readiness and metrics' },
        ...(options.admin ? [{ name: 'admin', description: 'Cache administration (bearer token)' }] : []),
      ],
      components: options.admin
        ? { securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'ADMIN_TOKEN' } } }
        : {},
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
