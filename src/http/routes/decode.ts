/** POST /contract-calls/decode-clarity-value */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { okJson } from '../../api/envelope.js';
import { DecodeBody, ErrorEnvelope, successEnvelope } from '../../api/schemas.js';
import { decodeClarityHex, parseClarityValue, renderClarityValue } from '../../clarity/index.js';
import type { LaneReuse } from '../../service/answer.js';
import { offerReplay } from '../fast-lane.js';
import { sendAnswer } from '../reply.js';

/** A decode answer is a pure function of the request body: an identical body gets it again. */
const PURE: LaneReuse = { valid: () => true };

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
    async (request, reply) => {
      const { clarityValue, strictJsonCompat = true, preserveContainers = false } = request.body;
      const cv =
        typeof clarityValue === 'string' ? decodeClarityHex(clarityValue) : parseClarityValue(clarityValue);
      const decoded = renderClarityValue(cv, { integers: 'decode', strictJsonCompat, preserveContainers });
      offerReplay(request, PURE);
      // Sent as JSON text (the schema's fields are Unknown: its serializer would only call
      // JSON.stringify on them, after walking the envelope).
      return sendAnswer(reply, { body: okJson(JSON.stringify({ original: clarityValue, decoded })) });
    },
  );
};
