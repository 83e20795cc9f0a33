/** POST /contract-calls/decode-clarity-value */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { decodeClarityHex, parseClarityValue, renderClarityValue } from '../../clarity/index.js';
import { ok } from '../envelope.js';
import { DecodeBody } from '../schemas.js';

export const decodeRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/contract-calls/decode-clarity-value', { schema: { body: DecodeBody } }, async (request) => {
    const { clarityValue, strictJsonCompat = true, preserveContainers = false } = request.body;
    const cv = typeof clarityValue === 'string' ? decodeClarityHex(clarityValue) : parseClarityValue(clarityValue);
    const decoded = renderClarityValue(cv, { integers: 'decode', strictJsonCompat, preserveContainers });
    return ok({ original: clarityValue, decoded });
  });
};
