/** GET /contract-calls/abi/{contractAddress}/{contractName} and GET /contract-calls/known-contracts */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ok } from '../../api/envelope.js';
import { AbiParams, ErrorEnvelope, KnownContractsData, successEnvelope } from '../../api/schemas.js';
import type { AbiRegistry } from '../../service/abi-registry.js';
import { requestContext } from '../request-context.js';

/** ABI query parameters; others are ignored (additional properties allowed). */
const AbiQuery = Type.Object(
  {
    network: Type.Optional(
      Type.Union([Type.Literal('mainnet'), Type.Literal('testnet')], {
        description: 'must agree with the address (SP/SM mainnet, ST/SN testnet)',
      }),
    ),
    bustCache: Type.Optional(
      Type.Union([Type.Literal('true'), Type.Literal('false')], {
        description: 'true: refetch the ABI upstream (spends upstream budget) and replace the cached copy',
      }),
    ),
  },
  { additionalProperties: true },
);

export const abiRoutes: FastifyPluginAsyncTypebox<{ abis: AbiRegistry }> = async (app, { abis }) => {
  app.get(
    '/contract-calls/abi/:contractAddress/:contractName',
    {
      schema: {
        summary: "Fetch a deployed contract's ABI (cached indefinitely)",
        tags: ['contract-calls'],
        description:
          'The contract may also be given as one segment, `/contract-calls/abi/{contractAddress}.{contractName}`. Unknown query parameters are ignored.',
        params: AbiParams,
        querystring: AbiQuery,
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
      const { network, bustCache } = request.query;
      const answer = await abis.answer(
        request.params.contractAddress,
        request.params.contractName,
        {
          network,
          bust: bustCache === 'true',
        },
        requestContext(request),
      );
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
