/** TypeBox schemas of the public routes: request validation, and the OpenAPI document later. */
import { type TSchema, Type } from '@sinclair/typebox';
import {
  EXAMPLE_CONTRACT_ID,
  EXAMPLE_DECODE_BODY,
  EXAMPLE_HOLDER,
  EXAMPLE_HOLDER_HEX,
  EXAMPLE_PATH_PARAMS,
  EXAMPLE_READ_ONLY_BODY,
} from './examples.js';

/** Longest ttl accepted (seconds): ten years; 0 or omitted means "until removed". */
const MAX_TTL_SECONDS = 315_360_000;
/** Most function arguments accepted in one call. */
const MAX_FUNCTION_ARGS = 256;

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
  { additionalProperties: true, examples: [EXAMPLE_DECODE_BODY] },
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
    maxBlocks: Type.Optional(
      Type.Integer({
        minimum: 0,
        description:
          'serve a cached latest-state result only if the chain has advanced at most this many blocks since it was read (0 = read at the current tip); default CACHE_MAX_BLOCKS (unset = no block bound)',
      }),
    ),
    staleWhileRevalidate: Type.Optional(
      Type.Integer({
        minimum: 0,
        description:
          'seconds after a result stops being fresh during which it is answered at once while one background refresh runs; default CACHE_STALE_WHILE_REVALIDATE_S',
      }),
    ),
    staleIfError: Type.Optional(
      Type.Integer({
        minimum: 0,
        description:
          'seconds after a result stops being fresh during which it is answered when the upstream fails transiently; default CACHE_STALE_IF_ERROR_S',
      }),
    ),
  },
  { additionalProperties: false },
);

const ContractAddress = Type.String({ examples: [EXAMPLE_PATH_PARAMS.contractAddress] });
const ContractName = Type.String({ examples: [EXAMPLE_PATH_PARAMS.contractName] });

export const ReadOnlyParams = Type.Object({
  contractAddress: ContractAddress,
  contractName: ContractName,
  functionName: Type.String({ examples: [EXAMPLE_PATH_PARAMS.functionName] }),
});

export const ReadOnlyBody = Type.Object(
  {
    functionArgs: Type.Array(ClarityInput, { maxItems: MAX_FUNCTION_ARGS }),
    network: Type.Optional(Type.Union([Type.Literal('mainnet'), Type.Literal('testnet')])),
    senderAddress: Type.Optional(Type.String({ minLength: 1, maxLength: 170 })),
    strictJsonCompat: Type.Optional(Type.Boolean()),
    preserveContainers: Type.Optional(Type.Boolean()),
    cacheControl: Type.Optional(CacheControl),
    tip: Type.Optional(
      Type.String({
        description:
          'read at this block: an index block hash (64 hex digits, with or without 0x, any case), or "latest" (the default) for the current state',
        examples: ['latest', '0x7d1c8e0f2b4a6c3e5d9f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7'],
      }),
    ),
  },
  { additionalProperties: true, examples: [EXAMPLE_READ_ONLY_BODY] },
);

export const AbiParams = Type.Object({ contractAddress: ContractAddress, contractName: ContractName });

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

// --- batch (docs/batch.md) ----------------------------------------------------------

const BATCH_CALL_EXAMPLE = {
  contractAddress: EXAMPLE_CONTRACT_ID,
  functionName: EXAMPLE_PATH_PARAMS.functionName,
  ...EXAMPLE_READ_ONLY_BODY,
};

/**
 * The batch body. The calls are deliberately not checked by this schema: each one is checked
 * on its own, as the single endpoint checks its path and body, so that one malformed call
 * fails only its own result.
 */
export function batchBody(maxCalls: number) {
  return Type.Object(
    {
      calls: Type.Array(
        Type.Unknown({
          description:
            'A read-only call: the fields of a read-only request body (functionArgs, network, senderAddress, strictJsonCompat, preserveContainers, cacheControl, tip) plus contractAddress, contractName and functionName. contractName may instead be given as addr.name in contractAddress. Checked one by one: a malformed call gets its own VALIDATION_ERROR result.',
          examples: [BATCH_CALL_EXAMPLE],
        }),
        { minItems: 1, maxItems: maxCalls, description: `1 to ${maxCalls} calls (BATCH_MAX_CALLS)` },
      ),
      tip: Type.Optional(
        Type.String({
          examples: [
            'consistent',
            'latest',
            '0x7d1c8e0f2b4a6c3e5d9f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7',
          ],
          description:
            'An index block hash pins every call without a tip of its own; "consistent" pins them all to the current tip, learned once, and reports it in data.tip',
        }),
      ),
    },
    {
      additionalProperties: true,
      examples: [
        {
          calls: [
            BATCH_CALL_EXAMPLE,
            { ...BATCH_CALL_EXAMPLE, functionName: 'get-decimals', functionArgs: [] },
          ],
          tip: 'consistent',
        },
      ],
    },
  );
}

const BatchMeta = Type.Object({
  status: Type.Integer({ description: 'the HTTP status the single endpoint would answer' }),
  cacheStatus: Type.Union([Type.String(), Type.Null()], { description: 'its Cache-Status header' }),
  tipHeight: Type.Union([Type.Integer(), Type.Null()], {
    description: 'its X-Canonical-Stacks-Tip-Height header: the tip height the result was read at',
  }),
});

export const BatchData = Type.Object({
  results: Type.Array(
    Type.Union([
      Type.Object({ success: Type.Literal(true), data: Type.Unknown(), meta: BatchMeta }),
      Type.Object({ success: Type.Literal(false), error: ErrorRecord, meta: BatchMeta }),
    ]),
    { description: "one per call, in order: the single endpoint's envelope plus meta" },
  ),
  tip: Type.Optional(
    Type.Union([Type.Object({ height: Type.Integer(), indexBlockHash: Type.String() }), Type.Null()], {
      description: 'with tip "consistent": the block every call was read at (null when no call needed one)',
    }),
  ),
});

// --- node-compatible endpoints (docs/node-routes.md) --------------------------------------

export const NodeCallReadBody = Type.Object(
  {
    sender: Type.String({ minLength: 1, maxLength: 170, description: 'the principal used as tx-sender' }),
    arguments: Type.Array(Type.String({ description: 'a serialized Clarity value: 0x followed by hex' }), {
      maxItems: MAX_FUNCTION_ARGS,
    }),
  },
  {
    additionalProperties: true,
    examples: [
      {
        sender: EXAMPLE_HOLDER,
        arguments: [EXAMPLE_HOLDER_HEX],
      },
    ],
  },
);

export const NodeCallReadAnswer = Type.Union(
  [
    Type.Object({ okay: Type.Literal(true), result: Type.String({ description: 'the result, 0x hex' }) }),
    Type.Object({ okay: Type.Literal(false), cause: Type.String({ description: "the node's reason" }) }),
  ],
  { examples: [{ okay: true, result: '0x0100000000000000000000000000000005' }] },
);

/**
 * The body of POST /subscriptions. The reads are checked one by one (as batch calls are), so
 * that an error names the item it is about.
 */
export function subscriptionBody(maxReads: number) {
  return Type.Object(
    {
      reads: Type.Array(
        Type.Unknown({
          description:
            'A read-only call shaped as a batch call (contractAddress, contractName, functionName, functionArgs, senderAddress...), at the latest state: a tip or cacheControl member is refused.',
          examples: [BATCH_CALL_EXAMPLE],
        }),
        { minItems: 1, maxItems: maxReads, description: `1 to ${maxReads} reads (WATCH_MAX_READS)` },
      ),
    },
    { additionalProperties: true, examples: [{ reads: [BATCH_CALL_EXAMPLE] }] },
  );
}

export const SubscriptionData = Type.Object({
  id: Type.String({
    description: 'the subscription id: at least 128 random bits, the event stream’s credential',
  }),
  events: Type.String({ description: 'the path of its event stream' }),
  reads: Type.Array(
    Type.Object({
      index: Type.Integer(),
      key: Type.String({ description: 'the read’s cache key (identical calls, identical keys)' }),
    }),
  ),
});

export const SubscriptionParams = Type.Object({
  id: Type.String({
    minLength: 1,
    maxLength: 128,
    description: 'the id POST /subscriptions answered',
    examples: ['pV3n0Qm9c2Wk7rT1yH5sXe4L'],
  }),
});
