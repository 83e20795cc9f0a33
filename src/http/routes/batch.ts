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
import type { CacheView } from '../../cache/view.js';
import type { BatchService, CallShell } from '../../service/batch.js';
import type { ReadOnlyRequest } from '../../service/read-only.js';
import { toGatewayError } from '../error-handler.js';
import { type Costs, itemUnits, meterAs } from '../metering.js';
import { batchItemText, CACHE_STATUS_HEADER, cacheHeaders, errorEnvelope, sendAnswer } from '../reply.js';
import { requestContext } from '../request-context.js';

export const batchRoute: FastifyPluginAsyncTypebox<{
  batch: BatchService;
  maxCalls: number;
  /** Costs of answers (docs/usage.md): a batch costs the sum of its items. */
  costs?: Costs | undefined;
}> = async (app, options) => {
  const { batch, maxCalls } = options;
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
      const shell = callShell(request, options.costs);
      const answer = await batch.answer(request.body, shell);
      // A batch costs the sum of its items, and needed the upstream if any item did.
      if (options.costs !== undefined) meterAs(request, shell.spent.miss ? 'miss' : 'hit', shell.spent.units);
      return sendAnswer(reply, answer);
    },
  );
};

/** The single endpoint's validation and rendering, for the calls of one batch request. */
function callShell(
  request: FastifyRequest,
  costs: Costs | undefined,
): CallShell & { readonly spent: { miss: boolean; units: number } } {
  const spent = { miss: false, units: 0 };
  // What each item costs, as the single endpoint would have charged it (a failed item: 0).
  const count = (cache: CacheView | undefined): void => {
    if (costs === undefined) return;
    const item = itemUnits(
      200,
      cache === undefined ? undefined : cacheHeaders(cache)[CACHE_STATUS_HEADER],
      costs,
    );
    spent.units += item.units;
    spent.miss ||= item.miss;
  };
  // Compiled once per route by Fastify (it memoizes by schema), with the route's own compiler.
  const params = request.compileValidationSchema(ReadOnlyParams, 'params');
  const body = request.compileValidationSchema(ReadOnlyBody, 'body');
  const check = (validate: typeof body, part: 'params' | 'body', call: unknown): void => {
    if (!validate(call)) throw toGatewayError({ validation: validate.errors, validationContext: part });
  };
  return {
    spent,
    context: requestContext(request),
    validate(call) {
      // A call that is not an object is a body that is not one ("body must be object");
      // otherwise Fastify's order: the path parameters first, then the body.
      if (typeof call !== 'object' || call === null || Array.isArray(call)) check(body, 'body', call);
      check(params, 'params', call);
      check(body, 'body', call);
      return call as ReadOnlyRequest;
    },
    item(outcome) {
      if ('answer' in outcome) {
        count(outcome.answer.cache);
        return batchItemText(outcome);
      }
      const error = toGatewayError(outcome.error);
      return batchItemText({ error, envelope: JSON.stringify(errorEnvelope(request.log, error)) });
    },
  };
}
