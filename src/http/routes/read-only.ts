/** POST /contract-calls/read-only/{contractAddress}/{contractName}/{functionName} */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { ReadOnlyService } from '../../service/read-only.js';
import { cacheHeaders } from '../cache-status.js';
import { ok } from '../envelope.js';
import { ErrorEnvelope, ReadOnlyBody, ReadOnlyParams, successEnvelope } from '../schemas.js';

export const readOnlyRoute: FastifyPluginAsyncTypebox<{ service: ReadOnlyService }> = async (
  app,
  { service },
) => {
  app.post(
    '/contract-calls/read-only/:contractAddress/:contractName/:functionName',
    {
      schema: {
        summary: 'Call a read-only contract function (cached)',
        description:
          'Validates the arguments against the contract ABI, answers from the cache when it can, and otherwise makes one (coalesced) upstream call. Carries Cache-Status and Age headers.',
        tags: ['contract-calls'],
        params: ReadOnlyParams,
        body: ReadOnlyBody,
        response: {
          200: successEnvelope(Type.Unknown({ description: 'the decoded return value' })),
          '4xx': ErrorEnvelope,
          '5xx': ErrorEnvelope,
        },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const result = await service.lookup({ ...request.params, ...body });
      // Set before rendering, so a cached (err ...) raised as CONTRACT_ERROR still says where it came from.
      reply.headers(cacheHeaders(result));
      return ok(service.render(result.value, body));
    },
  );
};
