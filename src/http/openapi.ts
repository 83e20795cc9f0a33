/**
 * OpenAPI 3.1, generated from the route schemas (@fastify/swagger), served at /openapi.json,
 * with an interactive reference at /docs (@fastify/swagger-ui). Registered before the routes
 * so that every route is captured.
 */
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { EXAMPLE_PATH_PARAMS } from '../api/examples.js';

const PAIR = '{contractAddress}/{contractName}';

interface Parameter {
  in?: string;
  name?: string;
  [key: string]: unknown;
}

interface Operation {
  summary?: string;
  parameters?: Parameter[];
  [key: string]: unknown;
}

/**
 * The `addr.name` form of every path with `{contractAddress}/{contractName}` (contract-id-url.ts
 * splits it before routing, so it has no route of its own to be documented from): the same
 * operations, with one `{contractId}` path parameter instead of the two.
 */
function withContractIdPaths(
  paths: Record<string, Record<string, Operation>>,
): Record<string, Record<string, Operation>> {
  const out = { ...paths };
  for (const [path, operations] of Object.entries(paths)) {
    if (!path.includes(PAIR)) continue;
    const alias: Record<string, Operation> = {};
    for (const [method, op] of Object.entries(operations)) {
      const parameters = (op.parameters ?? []).filter(
        (p) => !(p.in === 'path' && (p.name === 'contractAddress' || p.name === 'contractName')),
      );
      parameters.push({
        in: 'path',
        name: 'contractId',
        required: true,
        description: 'the contract as `contractAddress.contractName`',
        schema: { type: 'string' },
        example: EXAMPLE_PATH_PARAMS.contractId,
      });
      alias[method] = {
        ...op,
        summary: `${op.summary ?? ''} (contract as addr.name)`.trim(),
        parameters,
      };
    }
    out[path.replace(PAIR, '{contractId}')] = alias;
  }
  return out;
}

export async function registerOpenApi(app: FastifyInstance, options: { admin: boolean }): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'clarity-cache',
        version: '0.1.0',
        description:
          'HTTP/JSON caching gateway in front of the Stacks node API for Clarity smart contracts. Every response is an envelope: {success, data} or {success: false, error: {id, code, message, details}}. Wherever a path has {contractAddress}/{contractName}, the contract may also be given as one segment {contractAddress}.{contractName}. Trailing slashes are ignored. Request bodies are JSON, sent as application/json, text/plain or without a Content-Type (other types: 415). Public routes allow CORS (CORS_ORIGINS); admin routes never do.',
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
        { name: 'usage', description: "An API key's own usage (the key in X-API-Key)" },
        ...(options.admin ? [{ name: 'admin', description: 'Cache administration (bearer token)' }] : []),
      ],
      components: {
        securitySchemes: {
          // GET /usage: a key's own figures (docs/usage.md).
          apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'a key of API_KEYS_FILE' },
          ...(options.admin
            ? { bearerAuth: { type: 'http', scheme: 'bearer', description: 'ADMIN_TOKEN' } }
            : {}),
        },
      },
    },
    transformObject: (documentObject) => {
      const doc = (documentObject as { openapiObject: { paths?: Record<string, Record<string, Operation>> } })
        .openapiObject;
      return { ...doc, paths: withContractIdPaths(doc.paths ?? {}) } as never;
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
