/** TypeBox schemas of the public routes: request validation, and the OpenAPI document later. */
import { type TSchema, Type } from '@sinclair/typebox';

/** Longest ttl accepted (seconds): ten years; 0 or omitted means "until removed". */
export const MAX_TTL_SECONDS = 315_360_000;
/** Most function arguments accepted in one call. */
export const MAX_FUNCTION_ARGS = 256;

const ClarityInput = Type.Union(
  [
    Type.String({ description: 'a serialized Clarity value: 0x followed by hex' }),
    Type.Object(
      { type: Type.String() },
      { additionalProperties: true, description: 'a Clarity value object' },
    ),
  ],
  { description: 'a Clarity value object (simplified or native stacks.js form) or 0x hex' },
);

export const DecodeBody = Type.Object(
  {
    clarityValue: ClarityInput,
    strictJsonCompat: Type.Optional(Type.Boolean({ default: undefined, description: 'default true' })),
    preserveContainers: Type.Optional(Type.Boolean({ description: 'default false' })),
  },
  { additionalProperties: true },
);

export const CacheControl = Type.Object(
  {
    bustCache: Type.Optional(Type.Boolean({ description: 'bypass the cache and fetch fresh' })),
    skipCache: Type.Optional(Type.Boolean({ description: 'do not store this result' })),
    ttl: Type.Optional(
      Type.Number({
        minimum: 0,
        maximum: MAX_TTL_SECONDS,
        description: 'seconds to keep the result; 0 = until removed',
      }),
    ),
  },
  { additionalProperties: false },
);

export const ReadOnlyParams = Type.Object({
  contractAddress: Type.String(),
  contractName: Type.String(),
  functionName: Type.String(),
});

export const ReadOnlyBody = Type.Object(
  {
    functionArgs: Type.Array(ClarityInput, { maxItems: MAX_FUNCTION_ARGS }),
    network: Type.Optional(Type.Union([Type.Literal('mainnet'), Type.Literal('testnet')])),
    senderAddress: Type.Optional(Type.String({ minLength: 1, maxLength: 170 })),
    strictJsonCompat: Type.Optional(Type.Boolean()),
    preserveContainers: Type.Optional(Type.Boolean()),
    cacheControl: Type.Optional(CacheControl),
  },
  { additionalProperties: true },
);

export const AbiParams = Type.Object({ contractAddress: Type.String(), contractName: Type.String() });

const ErrorRecord = Type.Object({
  id: Type.String(),
  code: Type.String(),
  message: Type.String(),
  details: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
});

export const ErrorEnvelope = Type.Object({ success: Type.Literal(false), error: ErrorRecord });

export function successEnvelope<T extends TSchema>(data: T) {
  return Type.Object({ success: Type.Literal(true), data });
}

export const KnownContractsData = Type.Object({
  stats: Type.Object({ total: Type.Integer(), cached: Type.Integer() }),
  contracts: Type.Object({
    cached: Type.Array(
      Type.Object({
        contractAddress: Type.String(),
        contractName: Type.String(),
        network: Type.Union([Type.Literal('mainnet'), Type.Literal('testnet')]),
      }),
    ),
  }),
  /** Only when the listing continues: the `cursor` of the next page. */
  nextCursor: Type.Optional(Type.String()),
});

/** ?limit= and ?cursor= of the known-contracts listing (checked by the route for clear errors). */
export const KnownContractsQuery = Type.Object({
  limit: Type.Optional(Type.String({ description: 'contracts per page: 1 to 10000 (default 1000)' })),
  cursor: Type.Optional(Type.String({ maxLength: 512, description: 'the nextCursor of the previous page' })),
});
