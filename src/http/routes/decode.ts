/** POST /contract-calls/decode-clarity-value */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ok } from '../../api/envelope.js';
import { DecodeBody, ErrorEnvelope, successEnvelope } from '../../api/schemas.js';
import { decodeClarityHex, parseClarityValue, renderClarityValue } from '../../clarity/index.js';

export const decodeRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/contract-calls/decode-clarity-value',
    {
      schema: {
        summary: 'Decode a Clarity value (object or 0x hex) into plain JSON',
        tags: ['contract-calls'],
        body: DecodeBody,
        response: {
          200: successEnvelope(Type.Object({ original: Type.Unknown(), decoded: Type.Unknown() })),
          '4xx': ErrorEnvelope,
          '5xx': ErrorEnvelope,
        },
      },
    },
    async (request) => {
      const { clarityValue, strictJsonCompat = true, preserveContainers = false } = request.body;
      const cv =
        typeof clarityValue === 'string' ? decodeClarityHex(clarityValue) : parseClarityValue(clarityValue);
      const decoded = renderClarityValue(cv, { integers: 'decode', strictJsonCompat, preserveContainers });
      return ok({ original: clarityValue, decoded });
    },
  );
};
