/** POST /contract-calls/read-only/{contractAddress}/{contractName}/{functionName} */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ReadOnlyService } from '../../service/read-only.js';
import { ok } from '../envelope.js';
import { ReadOnlyBody, ReadOnlyParams } from '../schemas.js';

export const readOnlyRoute: FastifyPluginAsyncTypebox<{ service: ReadOnlyService }> = async (app, { service }) => {
  app.post(
    '/contract-calls/read-only/:contractAddress/:contractName/:functionName',
    { schema: { params: ReadOnlyParams, body: ReadOnlyBody } },
    async (request) => {
      const { data } = await service.call({ ...request.params, ...request.body });
      return ok(data);
    },
  );
};
