/** GET /contract-calls/abi/{contractAddress}/{contractName} and GET /contract-calls/known-contracts */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ok } from '../../api/envelope.js';
import {
  AbiParams,
  ErrorEnvelope,
  KnownContractsData,
  KnownContractsQuery,
  successEnvelope,
} from '../../api/schemas.js';
import { GatewayError } from '../../errors.js';
import {
  type AbiRegistry,
  KNOWN_CONTRACTS_DEFAULT_LIMIT,
  KNOWN_CONTRACTS_MAX_LIMIT,
} from '../../service/abi-registry.js';
import { sendAnswer } from '../reply.js';
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
      return sendAnswer(reply, answer);
    },
  );

  app.get(
    '/contract-calls/known-contracts',
    {
      schema: {
        summary: 'List the contracts whose ABI is cached (local data only), a page at a time',
        tags: ['contract-calls'],
        querystring: KnownContractsQuery,
        response: { 200: successEnvelope(KnownContractsData), '4xx': ErrorEnvelope, '5xx': ErrorEnvelope },
      },
    },
    async (request) => {
      const page = await abis.known({
        limit: parseLimit(request.query.limit),
        ...(request.query.cursor === undefined ? {} : { cursor: request.query.cursor }),
      });
      return ok({
        stats: { total: page.total, cached: page.total },
        contracts: { cached: page.contracts },
        ...(page.nextCursor === undefined ? {} : { nextCursor: page.nextCursor }),
      });
    },
  );
};

/** ?limit=: a whole number from 1 to KNOWN_CONTRACTS_MAX_LIMIT; absent = the default page. */
function parseLimit(raw: string | undefined): number {
  if (raw === undefined) return KNOWN_CONTRACTS_DEFAULT_LIMIT;
  const n = /^\d{1,6}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(n >= 1 && n <= KNOWN_CONTRACTS_MAX_LIMIT)) {
    throw new GatewayError(
      'VALIDATION_ERROR',
      `limit must be a whole number from 1 to ${KNOWN_CONTRACTS_MAX_LIMIT}, got "${raw}"`,
      { limit: raw },
    );
  }
  return n;
}
