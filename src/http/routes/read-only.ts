/** POST /contract-calls/read-only/{contractAddress}/{contractName}/{functionName} */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorEnvelope, ReadOnlyBody, ReadOnlyParams, successEnvelope } from '../../api/schemas.js';
import { cacheHeaders } from '../../service/cache-status.js';
import type { ReadOnlyService } from '../../service/read-only.js';
import { RenderedBodies, successBody } from '../../service/rendered-bodies.js';

/** Longest request body whose prepared form is memoized (longer ones are rare and re-prepared). */
const MAX_MEMO_BODY = 4096;

export const readOnlyRoute: FastifyPluginAsyncTypebox<{ service: ReadOnlyService }> = async (
  app,
  { service },
) => {
  const rendered = new RenderedBodies();
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
      const raw = request.rawBody;
      // Identical requests (same URL, same body text) prepare identically: memoize by their text.
      const memoKey = raw !== undefined && raw.length <= MAX_MEMO_BODY ? `${request.url}\n${raw}` : undefined;
      const result = await service.lookup({ ...request.params, ...body }, memoKey);
      // Set before rendering, so a cached (err ...) raised as CONTRACT_ERROR still says where it came from.
      reply.headers(cacheHeaders(result));
      const render = () => service.render(result.value, body);
      const text =
        result.entry === undefined
          ? successBody(render())
          : rendered.body(
              result.entry,
              (body.strictJsonCompat === false ? 1 : 0) | (body.preserveContainers ? 2 : 0),
              render,
            );
      // Already JSON: Fastify sends a string payload as it is.
      return reply.type('application/json; charset=utf-8').send(text as never);
    },
  );
};
