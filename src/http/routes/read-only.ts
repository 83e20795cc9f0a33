/**
 * POST /contract-calls/read-only/{contractAddress}/{contractName}/{functionName}: a thin
 * shell around ReadOnlyService.answer, which does everything from validation to the
 * rendered envelope.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorEnvelope, ReadOnlyBody, ReadOnlyParams, successEnvelope } from '../../api/schemas.js';
import type { ReadOnlyService } from '../../service/read-only.js';
import { offerReplay } from '../fast-lane.js';

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
      const raw = request.rawBody;
      const answer = await service.answer(
        { ...request.params, ...request.body },
        raw === undefined ? undefined : { url: request.url, body: raw },
      );
      offerReplay(request, answer.reuse);
      // Already JSON: Fastify sends a string payload as it is.
      return reply
        .code(answer.status)
        .headers(answer.headers)
        .send(answer.body as never);
    },
  );
};
