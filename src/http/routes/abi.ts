/** GET /contract-calls/abi/{contractAddress}/{contractName} and GET /contract-calls/known-contracts */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AbiRegistry } from '../../service/abi-registry.js';
import { parseContractRef } from '../../service/contract-ref.js';
import { ok } from '../envelope.js';
import { AbiParams } from '../schemas.js';

export const abiRoutes: FastifyPluginAsyncTypebox<{ abis: AbiRegistry }> = async (app, { abis }) => {
  app.get('/contract-calls/abi/:contractAddress/:contractName', { schema: { params: AbiParams } }, async (request, reply) => {
    const ref = parseContractRef(request.params.contractAddress, request.params.contractName);
    const { json } = await abis.get(ref);
    // The stored ABI is already JSON: splice it into the envelope instead of parse + stringify.
    return reply.type('application/json; charset=utf-8').send(`{"success":true,"data":${json}}`);
  });

  app.get('/contract-calls/known-contracts', async () => {
    const cached = await abis.known();
    return ok({ stats: { total: cached.length, cached: cached.length }, contracts: { cached } });
  });
};
