/**
 * The admin API, registered only when ADMIN_TOKEN is set: cache invalidation (one entry, a
 * contract, a function, everything), ABI warming and statistics. Every route needs
 * `Authorization: Bearer <ADMIN_TOKEN>`: admission checks it (src/http/admission/admission.ts)
 * before anything else runs, with the other rules about who may ask, and these routes only
 * ever see a request it let in. They refuse to be registered behind an admission that does
 * not check the token.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ok } from '../../api/envelope.js';
import { EXAMPLE_CONTRACT_ID, EXAMPLE_PATH_PARAMS, EXAMPLE_READ_ONLY_BODY } from '../../api/examples.js';
import {
  AbiParams,
  ErrorEnvelope,
  ReadOnlyBody,
  ReadOnlyParams,
  successEnvelope,
} from '../../api/schemas.js';
import type { KeyUse } from '../../observability/key-metrics.js';
import type { CacheAdmin } from '../../service/cache-admin.js';
import { parseContractRef } from '../../service/contract-ref.js';
import type { Admission } from '../admission/admission.js';

export interface AdminOptions {
  /** The admission path in front of every route, which lets an admin request in only with ADMIN_TOKEN. */
  readonly admission: Pick<Admission, 'checksAdminToken'>;
  readonly admin: CacheAdmin;
  /** Each API key's use (by name) in the current minute; undefined when no keys file is set. */
  readonly keyUses?: (() => KeyUse[]) | undefined;
}

const Deleted = successEnvelope(Type.Object({ deleted: Type.Integer() }));
const errors = { '4xx': ErrorEnvelope, '5xx': ErrorEnvelope };
const security = [{ bearerAuth: [] }];

export const adminRoutes: FastifyPluginAsyncTypebox<AdminOptions> = async (
  app,
  { admission, admin, keyUses },
) => {
  // Unprotected admin routes would be a silent hole: fail at start-up instead.
  if (!admission.checksAdminToken)
    throw new Error('the admin API needs an admission path that checks ADMIN_TOKEN');

  app.delete(
    '/admin/cache',
    {
      schema: {
        summary: 'Remove every cached result and ABI',
        tags: ['admin'],
        security,
        response: { 200: Deleted, ...errors },
      },
    },
    async () => ok({ deleted: await admin.invalidateAll() }),
  );

  app.delete(
    '/admin/cache/contracts/:contractAddress/:contractName',
    {
      schema: {
        summary: 'Remove every cached result of a contract (and its ABI with ?abi=true)',
        tags: ['admin'],
        security,
        params: AbiParams,
        querystring: Type.Object({
          abi: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')])),
        }),
        response: { 200: Deleted, ...errors },
      },
    },
    async (request) => {
      const ref = parseContractRef(request.params.contractAddress, request.params.contractName);
      return ok({ deleted: await admin.invalidateContract(ref, undefined, request.query.abi === 'true') });
    },
  );

  app.delete(
    '/admin/cache/contracts/:contractAddress/:contractName/functions/:functionName',
    {
      schema: {
        summary: 'Remove every cached result of one function of a contract',
        tags: ['admin'],
        security,
        params: ReadOnlyParams,
        response: { 200: Deleted, ...errors },
      },
    },
    async (request) => {
      const ref = parseContractRef(request.params.contractAddress, request.params.contractName);
      return ok({ deleted: await admin.invalidateContract(ref, request.params.functionName) });
    },
  );

  app.post(
    '/admin/cache/invalidate',
    {
      schema: {
        summary: 'Remove the one cached result a read-only request maps to',
        description:
          'The body is a read-only request body plus contractAddress, contractName and functionName.',
        tags: ['admin'],
        security,
        body: Type.Composite(
          [
            Type.Object({
              contractAddress: Type.String(),
              contractName: Type.String(),
              functionName: Type.String(),
            }),
            Type.Omit(ReadOnlyBody, ['cacheControl', 'strictJsonCompat', 'preserveContainers']),
          ],
          {
            examples: [
              {
                contractAddress: EXAMPLE_PATH_PARAMS.contractAddress,
                contractName: EXAMPLE_PATH_PARAMS.contractName,
                functionName: EXAMPLE_PATH_PARAMS.functionName,
                ...EXAMPLE_READ_ONLY_BODY,
              },
            ],
          },
        ),
        response: { 200: Deleted, ...errors },
      },
    },
    async (request) => ok({ deleted: await admin.invalidateCall(request.body) }),
  );

  app.post(
    '/admin/abis/warm',
    {
      schema: {
        summary: 'Fetch and cache the ABIs of a list of contracts',
        tags: ['admin'],
        security,
        body: Type.Object(
          {
            contracts: Type.Array(Type.String({ description: 'address.contract-name' }), {
              minItems: 1,
              maxItems: 100,
            }),
          },
          {
            examples: [
              { contracts: [EXAMPLE_CONTRACT_ID, `${EXAMPLE_PATH_PARAMS.contractAddress}.demo-nft`] },
            ],
          },
        ),
        response: {
          200: successEnvelope(
            Type.Object({
              results: Type.Array(
                Type.Object({
                  contract: Type.String(),
                  ok: Type.Boolean(),
                  outcome: Type.Optional(Type.String()),
                  error: Type.Optional(Type.Object({ code: Type.String(), message: Type.String() })),
                }),
              ),
            }),
          ),
          ...errors,
        },
      },
    },
    async (request) => ok({ results: await admin.warm(request.body.contracts) }),
  );

  app.get(
    '/admin/cache/stats',
    {
      schema: {
        summary: 'Cache statistics',
        tags: ['admin'],
        security,
        response: { 200: successEnvelope(Type.Object({}, { additionalProperties: true })), ...errors },
      },
    },
    async () => ok(await admin.stats()),
  );

  app.get(
    '/admin/keys',
    {
      schema: {
        summary: 'Use of each API key (by name) on this instance, in the current minute and since start',
        tags: ['admin'],
        security,
        response: {
          200: successEnvelope(
            Type.Object({
              keys: Type.Array(
                Type.Object({
                  name: Type.String(),
                  admitted: Type.Integer(),
                  refused: Type.Integer(),
                  windowStart: Type.String({ format: 'date-time' }),
                  windowAdmitted: Type.Integer(),
                  windowRefused: Type.Integer(),
                }),
              ),
            }),
          ),
          ...errors,
        },
      },
    },
    async () =>
      ok({
        keys: (keyUses?.() ?? []).map((u) => ({ ...u, windowStart: new Date(u.windowStart).toISOString() })),
      }),
  );
};
