/** GET /contract-calls/abi/{contractAddress}/{contractName} and GET /contract-calls/known-contracts */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ok } from '../../api/envelope.js';
import { AbiParams, ErrorEnvelope, KnownContractsData, successEnvelope } from '../../api/schemas.js';
import type { AbiRegistry } from '../../service/abi-registry.js';

export const abiRoutes: FastifyPluginAsyncTypebox<{ abis: AbiRegistry }> = async (app, { abis }) => {
  app.get(
    '/contract-calls/abi/:contractAddress/:contractName',
    {
      schema: {
        summary: "Fetch a deployed contract's ABI (cached indefinitely)",
        tags: ['contract-calls'],
        params: AbiParams,
        response: {
          200: successEnvelope(
            Type.Object({}, { additionalProperties: true, description: 'the contract ABI document' }),
          ),
          '4xx': ErrorEnvelope,
          '5xx': ErrorEnvelope,
        },
      },
    },
    async (request, reply) => {
      const answer = await abis.answer(request.params.contractAddress, request.params.contractName);
      // Already JSON: Fastify sends a string payload as it is, without the response serializer.
      return reply
        .code(answer.status)
        .headers(answer.headers)
        .send(answer.body as never);
    },
  );

  app.get(
    '/contract-calls/known-contracts',
    {
      schema: {
        summary: 'List the contracts whose ABI is cached (local data only)',
        tags: ['contract-calls'],
        response: { 200: successEnvelope(KnownContractsData), '5xx': ErrorEnvelope },
      },
    },
    async () => {
      const cached = await abis.known();
      return ok({ stats: { total: cached.length, cached: cached.length }, contracts: { cached } });
    },
  );
};
