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
import { sendAnswer } from '../reply.js';
import { requestContext } from '../request-context.js';
import { requestText } from '../request-text.js';

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
          'Validates the arguments against the contract ABI, answers from the cache when it can, and otherwise makes one (coalesced) upstream call. Carries Cache-Status (RFC 9211: hit, fwd=miss, fwd=request, fwd=stale; detail=stale-while-revalidate or detail=stale-if-error for a stale answer) and Age headers, and X-Canonical-Stacks-Tip-Height: the chain tip height the result was read at (for a hit, the height stored with it), when known. `tip` pins the read to a block (index block hash); cacheControl.maxBlocks bounds how many blocks old a cached result may be; cacheControl.staleWhileRevalidate / staleIfError allow a stale answer (see the README, "Freshness"). An unknown tip is UPSTREAM_API_ERROR 404 with details.tip.',
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
      const answer = await service.answer(
        { ...request.params, ...request.body },
        requestText(request),
        requestContext(request),
      );
      offerReplay(request, answer.reuse);
      return sendAnswer(reply, answer);
    },
  );
};
