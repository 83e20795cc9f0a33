/**
 * The node's own routes (docs/node-routes.md), one Fastify route per descriptor of the endpoint
 * table, each also under /mainnet and /testnet (a client's base URL `http://gateway/testnet`
 * fixes the network for all of them). Every other path under /v2/ and /v3/ is NOT_FOUND: the
 * gateway never forwards a node's write or peer routes, whatever the method, type or body.
 *
 * Every route's schema derives from its descriptor alone. Call-read and the contract interface
 * keep their services (the read-only cache and the ABI registry), which the descriptor names;
 * every other route is the generic cached read of src/service/node-route-service.ts. Errors the
 * gateway raises itself keep the envelope (the error handler).
 */

import { type TSchema, Type } from '@sinclair/typebox';
import type {
  FastifyInstance,
  FastifyPluginAsync,
  FastifyReply,
  FastifyRequest,
  FastifySchema,
} from 'fastify';
import { ErrorEnvelope, NodeCallReadAnswer, NodeCallReadBody } from '../../api/schemas.js';
import { parseTipQuery } from '../../chain/block-id.js';
import { GatewayError } from '../../errors.js';
import type { Network } from '../../network.js';
import type { AbiRegistry } from '../../service/abi-registry.js';
import type { NodeRouteService } from '../../service/node-route-service.js';
import type { ReadOnlyService } from '../../service/read-only.js';
import { NETWORK_PREFIXES, NODE_ENDPOINTS, type NodeEndpoint } from '../../upstream/endpoints.js';
import { offerReplay } from '../fast-lane.js';
import { sendNodeAnswer, sendNodeShaped } from '../reply.js';
import { requestContext } from '../request-context.js';
import { requestText } from '../request-text.js';

/**
 * The node's answer for a contract it does not know, when the node's own bytes are not at hand
 * (a failure shared by another instance, a remembered 404 written before they were kept): only
 * this answer of the node is ever read as "unknown contract" (stacks-node.ts), so it is the one
 * the node gave.
 */
const NODE_NO_INTERFACE = {
  status: 404,
  contentType: 'text/plain',
  body: 'No contract interface data found',
} as const;

export interface NodeRoutesOptions {
  readonly service: ReadOnlyService;
  readonly abis: AbiRegistry;
  /** The generic cached read; absent when the node API forwards no route (some tests). */
  readonly routes: NodeRouteService | undefined;
}

const TAGS = ['node-compatible'];
const ERRORS = { '4xx': ErrorEnvelope, '5xx': ErrorEnvelope };

export const nodeRoutes: FastifyPluginAsync<NodeRoutesOptions> = async (app, options) => {
  // A broadcast transaction's bytes, passed through as received.
  app.addContentTypeParser('application/octet-stream', { parseAs: 'buffer' }, (_req, body, done) => {
    done(null, body);
  });
  for (const prefix of ['', ...NETWORK_PREFIXES]) {
    const network = prefix === '' ? undefined : (prefix.slice(1) as Network);
    for (const endpoint of NODE_ENDPOINTS) {
      if (endpoint.service === undefined && options.routes === undefined) continue;
      register(app, endpoint, prefix, network, options);
    }
    // Any other node path: never forwarded. Refused before its body is read.
    for (const root of ['/v2/*', '/v3/*']) {
      app.route({
        method: ['GET', 'POST', 'PUT', 'DELETE', 'PATCH'],
        url: `${prefix}${root}`,
        schema: { hide: true },
        onRequest: async (request) => {
          throw new GatewayError(
            'NOT_FOUND',
            `${request.method} ${request.url.split('?')[0]} is not a route of this gateway`,
            {
              method: request.method,
            },
          );
        },
        handler: async () => undefined,
      });
    }
  }
};

function register(
  app: FastifyInstance,
  endpoint: NodeEndpoint,
  prefix: string,
  network: Network | undefined,
  options: NodeRoutesOptions,
): void {
  app.route({
    method: endpoint.method,
    url: `${prefix}${endpoint.path}`,
    // The prefixed copies answer alike; the OpenAPI document and the index list each route once.
    schema: schemaOf(endpoint, prefix !== ''),
    handler: handlerOf(endpoint, network, options),
  });
}

/** The route's schema, all of it from its descriptor: parameters, query, body, answers. */
function schemaOf(endpoint: NodeEndpoint, hide: boolean): FastifySchema & Record<string, unknown> {
  return {
    summary: endpoint.summary,
    description:
      endpoint.description ??
      `Forwarded to the node as ${endpoint.method} ${endpoint.path.replace(/:([A-Za-z]+)/g, '{$1}')} and answered with its status, content type and body; cache class: ${endpoint.cache}.`,
    tags: TAGS,
    hide,
    params: Type.Object(
      Object.fromEntries(
        Object.keys(endpoint.params).map((name) => {
          const example = endpoint.example.params?.[name];
          return [name, Type.String(example === undefined ? {} : { examples: [example] })];
        }),
      ),
    ),
    ...(endpoint.body === 'none' ? {} : { body: bodySchema(endpoint) }),
    ...(endpoint.query.length === 0
      ? {}
      : {
          querystring: Type.Object(
            Object.fromEntries(
              endpoint.query.map((name) => [name, Type.Optional(Type.String({ description: QUERY[name] }))]),
            ),
            { additionalProperties: true },
          ),
        }),
    response: { ...ANSWERS[endpoint.service ?? 'node'], ...ERRORS },
  };
}

const QUERY: Record<NodeEndpoint['query'][number], string> = {
  tip: 'index block hash to read at (empty: the current state)',
  proof: '0 or 1: whether the node adds its Merkle proof',
};

/** What a 200 looks like: the node's shape for the two routes the gateway answers itself. */
const ANSWERS: Record<NonNullable<NodeEndpoint['service']> | 'node', Record<number, TSchema>> = {
  'read-only': { 200: NodeCallReadAnswer },
  abi: { 200: Type.Object({}, { additionalProperties: true, description: 'the contract ABI document' }) },
  node: {},
};

function bodySchema(endpoint: NodeEndpoint): TSchema {
  const examples = [endpoint.example.body];
  switch (endpoint.body) {
    case 'call':
      // Checked here (sender, arguments), then sent to the node in its own form.
      return { ...NodeCallReadBody, examples };
    case 'transaction':
      return Type.Unknown({
        description:
          'the transaction: its bytes as application/octet-stream, or {"tx":"<hex>"} as application/json',
        examples,
      });
    default:
      return Type.Unknown({ description: "the node's JSON body, forwarded as received", examples });
  }
}

/** The service a descriptor names answers it; every other route is the generic cached read. */
function handlerOf(
  endpoint: NodeEndpoint,
  network: Network | undefined,
  options: NodeRoutesOptions,
): (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply> {
  switch (endpoint.service) {
    case 'read-only':
      return async (request, reply) => {
        const params = request.params as Record<string, string>;
        const { sender, arguments: args } = request.body as { sender: string; arguments: string[] };
        // The same ?tip= rule as every node route (an empty one is the current state); the
        // service checks a non-empty one strictly.
        const tip = parseTipQuery((request.query as { tip?: unknown }).tip);
        const answer = await options.service.nodeAnswer(
          {
            contractAddress: params['address']!,
            contractName: params['contract']!,
            functionName: params['function']!,
            functionArgs: args,
            senderAddress: sender,
            ...(network === undefined ? {} : { network }),
            ...(tip === undefined ? {} : { tip }),
          },
          requestText(request),
          requestContext(request),
        );
        offerReplay(request, answer.reuse);
        return sendNodeShaped(reply, answer);
      };
    case 'abi':
      return async (request, reply) => {
        const params = request.params as Record<string, string>;
        // The node's status, content type and bytes: its ABI, or its 404 for an unknown contract.
        const answer = await options.abis.nodeAnswer(
          params['address']!,
          params['contract']!,
          requestContext(request),
          network,
        );
        if (answer.kind === 'document') return sendNodeShaped(reply, answer);
        return sendNodeAnswer(reply, {
          ...(answer.node ?? NODE_NO_INTERFACE),
          cache: answer.cache,
          tipHeight: answer.tipHeight,
        });
      };
    case undefined: {
      const routes = options.routes!;
      return async (request, reply) => {
        const answer = await routes.answer(
          {
            endpoint,
            params: request.params as Record<string, string>,
            query: request.query as Record<string, string | undefined>,
            body: bodyOf(endpoint, request),
            network,
          },
          requestContext(request),
        );
        return sendNodeAnswer(reply, answer);
      };
    }
  }
}

/** The body as received, with its content type: bytes as they came, JSON as its exact text. */
function bodyOf(
  endpoint: NodeEndpoint,
  request: FastifyRequest,
): { data: string | Uint8Array; contentType: string } | undefined {
  if (endpoint.body === 'none') return undefined;
  if (Buffer.isBuffer(request.body)) {
    return { data: request.body, contentType: 'application/octet-stream' };
  }
  const text = request.rawBody;
  if (text === undefined) {
    throw new GatewayError('VALIDATION_ERROR', `${endpoint.method} ${endpoint.path} needs a body`, {
      field: 'body',
    });
  }
  return { data: text, contentType: 'application/json' };
}
