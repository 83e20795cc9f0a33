/**
 * The node's own endpoints, served from the gateway's cache (docs/node-routes.md), so
 * that any Stacks client can use the gateway as its node (stacks.js `fetchCallReadOnlyFunction`
 * with `client: { baseUrl }`, Clarigen, curl):
 *
 * - POST /v2/contracts/call-read/{address}/{contract}/{function}[?tip=]: a thin shell around
 *   ReadOnlyService.nodeAnswer, the same lookup as the read-only endpoint;
 * - GET /v2/contracts/interface/{address}/{contract}: the stored ABI document as the node
 *   sends it.
 *
 * Errors the gateway raises itself keep the envelope and its statuses (the error handler).
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import {
  ErrorEnvelope,
  NodeCallReadAnswer,
  NodeCallReadBody,
  NodeCallReadParams,
  NodeCallReadQuery,
  NodeInterfaceParams,
} from '../../api/schemas.js';
import type { AbiRegistry } from '../../service/abi-registry.js';
import type { ReadOnlyService } from '../../service/read-only.js';
import { offerReplay } from '../fast-lane.js';
import { requestContext } from '../request-context.js';
import { requestText, sendAnswer } from '../send-answer.js';

export const nodeCompatRoutes: FastifyPluginAsyncTypebox<{
  service: ReadOnlyService;
  abis: AbiRegistry;
}> = async (app, { service, abis }) => {
  app.post(
    '/v2/contracts/call-read/:address/:contract/:function',
    {
      schema: {
        summary: 'Node-compatible read-only call (cached)',
        description:
          "The Stacks node's own call-read endpoint, answered from the gateway's cache with the same coalescing, budget, freshness defaults and headers (Cache-Status, Age, X-Canonical-Stacks-Tip-Height) as POST /contract-calls/read-only. Answers in the node's shape: {okay:true,result} (an (err …) result included) or the node's {okay:false,cause}. The network follows the address. Errors the gateway raises itself (malformed input, no budget, upstream down) are envelopes with their statuses.",
        tags: ['node-compatible'],
        params: NodeCallReadParams,
        querystring: NodeCallReadQuery,
        body: NodeCallReadBody,
        response: { 200: NodeCallReadAnswer, '4xx': ErrorEnvelope, '5xx': ErrorEnvelope },
      },
    },
    async (request, reply) => {
      const { address, contract, function: functionName } = request.params;
      const { sender, arguments: args } = request.body;
      // An empty ?tip= is no tip (as `tip=` reads in a URL); anything else is checked strictly.
      const tip = request.query.tip === '' ? undefined : request.query.tip;
      const answer = await service.nodeAnswer(
        {
          contractAddress: address,
          contractName: contract,
          functionName,
          functionArgs: args,
          senderAddress: sender,
          ...(tip === undefined ? {} : { tip }),
        },
        requestText(request),
        requestContext(request),
      );
      offerReplay(request, answer.reuse);
      return sendAnswer(reply, answer);
    },
  );

  app.get(
    '/v2/contracts/interface/:address/:contract',
    {
      schema: {
        summary: "Node-compatible contract ABI (the node's JSON, cached indefinitely)",
        tags: ['node-compatible'],
        params: NodeInterfaceParams,
        response: {
          200: Type.Object({}, { additionalProperties: true, description: 'the contract ABI document' }),
          '4xx': ErrorEnvelope,
          '5xx': ErrorEnvelope,
        },
      },
    },
    async (request, reply) => {
      const answer = await abis.nodeAnswer(
        request.params.address,
        request.params.contract,
        requestContext(request),
      );
      return sendAnswer(reply, answer);
    },
  );
};
