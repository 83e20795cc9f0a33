/**
 * POST /contract-calls/batch: a thin shell around BatchService. The shell's part is what only
 * the HTTP layer knows: the whole-batch refusals (the route schema), and for each call the
 * single endpoint's own validation (its params and body schemas, compiled by the same
 * validator compiler, so the error texts are the same) and its error envelopes.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import {
  BatchData,
  batchBody,
  ErrorEnvelope,
  ReadOnlyBody,
  ReadOnlyParams,
  successEnvelope,
} from '../../api/schemas.js';
import { JSON_CONTENT_TYPE } from '../../service/answer.js';
import type { BatchService, CallShell } from '../../service/batch.js';
import type { ReadOnlyRequest } from '../../service/read-only.js';
import { errorEnvelope, toGatewayError } from '../error-handler.js';

export const batchRoute: FastifyPluginAsyncTypebox<{ batch: BatchService; maxCalls: number }> = async (
  app,
  { batch, maxCalls },
) => {
  app.post(
    '/contract-calls/batch',
    {
      schema: {
        summary: 'Many read-only calls in one request, optionally all at one block',
        description:
          'Each call is answered exactly as POST /contract-calls/read-only would answer it (its envelope, success or error), plus meta {status, cacheStatus, tipHeight}, in order. One call failing never fails another. Identical calls share one upstream call. The whole batch is refused (VALIDATION_ERROR 400) only when the body is not an object, calls is not a non-empty array, or it holds more than BATCH_MAX_CALLS calls.',
        tags: ['contract-calls'],
        body: batchBody(maxCalls),
        response: { 200: successEnvelope(BatchData), '4xx': ErrorEnvelope, '5xx': ErrorEnvelope },
      },
    },
    async (request, reply) => {
      const answer = await batch.answer(request.body, callShell(request));
      return reply
        .code(answer.status)
        .headers(answer.headers)
        .send(answer.body as never);
    },
  );
};

/** The single endpoint's validation and error answers, for the calls of one batch request. */
function callShell(request: FastifyRequest): CallShell {
  // Compiled once per route by Fastify (it memoizes by schema), with the route's own compiler.
  const checks = [
    ['params', request.compileValidationSchema(ReadOnlyParams, 'params')],
    ['body', request.compileValidationSchema(ReadOnlyBody, 'body')],
  ] as const;
  return {
    validate(call) {
      // Fastify checks the path parameters first, then the body; so does a call.
      for (const [part, check] of checks) {
        if (!check(call)) throw toGatewayError({ validation: check.errors, validationContext: part });
      }
      return call as ReadOnlyRequest;
    },
    fail(err) {
      const error = toGatewayError(err);
      return {
        status: error.status,
        headers: { ...error.headers, 'content-type': JSON_CONTENT_TYPE },
        body: JSON.stringify(errorEnvelope(request.log, error)),
      };
    },
  };
}
