/**
 * Request and response types of the client, written out here so that the package needs
 * nothing of the server (not even its schema library). The server checks at compile time that
 * they match the TypeBox schemas its routes validate with (src/api/client-contract.ts): a
 * field added or renamed there without the same change here fails `tsc`.
 */

/** A Clarity value as the gateway accepts it: `{type, value}` (simplified or stacks.js JSON) or 0x hex. */
export type ClarityInput = string | { type: string; [key: string]: unknown };

/**
 * A Clarity argument as the client accepts it: what the gateway accepts, plus native stacks.js
 * values whose integers are bigints (sent as decimal strings, which the gateway accepts).
 */
// biome-ignore lint/suspicious/noExplicitAny: native stacks.js objects are any shape with a type
export type ClarityArg = ClarityInput | { readonly type: string; readonly [key: string]: any };

/** How the cache may answer one call (docs/freshness.md). */
export interface CacheControlOptions {
  /** Bypass the cache and fetch fresh. */
  bustCache?: boolean;
  /** Do not store this result. */
  skipCache?: boolean;
  /** Seconds to keep the result; 0 = until removed. */
  ttl?: number;
  /** Serve a cached latest-state result only if at most this many blocks were mined since. */
  maxBlocks?: number;
  /** Seconds after freshness during which a result is answered while one refresh runs. */
  staleWhileRevalidate?: number;
  /** Seconds after freshness during which a result is answered when the upstream fails. */
  staleIfError?: number;
}

/** Options of a read-only call: every field of the request body except the arguments. */
export interface ReadOnlyOptions {
  network?: 'mainnet' | 'testnet';
  /** The call's tx-sender (default: the gateway's). */
  senderAddress?: string;
  /** Integers as decimal strings (default true). */
  strictJsonCompat?: boolean;
  preserveContainers?: boolean;
  cacheControl?: CacheControlOptions;
  /** Read at this block (an index block hash), or "latest" (the default). */
  tip?: string;
}

/** Options of decode(): every field of the decode body except the value. */
export interface DecodeOptions {
  /** Integers as decimal strings (default true). */
  strictJsonCompat?: boolean;
  preserveContainers?: boolean;
}

/**
 * One page of the known-contracts listing: `limit` contracts (1 to 10000, the gateway's
 * default 1000) after `cursor`, the `nextCursor` of the previous page. Without either, the
 * first page, which for a small cache is the whole listing.
 */
export interface KnownContractsOptions {
  readonly limit?: number;
  readonly cursor?: string;
}

export interface DecodeResult {
  /** The value exactly as submitted. */
  readonly original: unknown;
  /** Its plain JSON form (docs/api.md). */
  readonly decoded: unknown;
}

export interface KnownContracts {
  stats: { total: number; cached: number };
  contracts: {
    cached: Array<{ contractAddress: string; contractName: string; network: 'mainnet' | 'testnet' }>;
  };
  /** Only when the listing continues: the `cursor` of the next page. */
  nextCursor?: string;
}

/** The deployed contract's ABI document (docs/api.md). */
export interface ContractAbi {
  readonly functions: ReadonlyArray<{
    readonly name: string;
    readonly access: 'private' | 'public' | 'read_only' | string;
    readonly args: ReadonlyArray<{ readonly name: string; readonly type: AbiType }>;
    readonly outputs: { readonly type: AbiType };
  }>;
  readonly variables?: ReadonlyArray<{
    readonly name: string;
    readonly type: AbiType;
    readonly access: string;
  }>;
  readonly maps?: ReadonlyArray<{ readonly name: string; readonly key: AbiType; readonly value: AbiType }>;
  readonly epoch?: string;
  readonly clarity_version?: string;
  readonly [key: string]: unknown;
}

/** An ABI type descriptor: a plain name (uint128, principal, ...) or a one-key object. */
export type AbiType = string | { readonly [kind: string]: unknown };

export interface ErrorRecord {
  id: string;
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

export interface ErrorEnvelope {
  success: false;
  error: ErrorRecord;
}

/** The envelope every endpoint answers in. */
export type Envelope<T> = { readonly success: true; readonly data: T } | ErrorEnvelope;

/**
 * One call of a batch (docs/batch.md): the read-only body plus where to call, and
 * optionally its own `tip`. `contractAddress` may carry `addr.name`, leaving out `contractName`.
 */
export type BatchCall = ReadOnlyOptions & {
  readonly contractAddress: string;
  readonly contractName?: string;
  readonly functionName: string;
  readonly functionArgs?: readonly ClarityArg[];
  readonly tip?: string;
};

export interface BatchOptions {
  /** An index block hash that pins every call without its own, or "consistent". */
  readonly tip?: string;
}

/** One batch item: exactly the single endpoint's envelope, plus what its headers would say. */
export type BatchItem = Envelope<unknown> & {
  readonly meta: {
    readonly status: number;
    readonly cacheStatus?: string;
    readonly tipHeight?: number | null;
  };
};

export interface BatchResult {
  readonly results: readonly BatchItem[];
  /** With tip "consistent": the block every result describes. */
  readonly tip?: { readonly height: number; readonly indexBlockHash: string };
}

/** What the answer's headers say about the cache (docs/api.md, docs/freshness.md). */
export interface AnswerMeta {
  /** `Cache-Status` (RFC 9211), e.g. `clarity-cache; hit`. */
  readonly cacheStatus: string | undefined;
  /** `Age` in seconds, when the answer came from the cache. */
  readonly age: number | undefined;
  /** `X-Canonical-Stacks-Tip-Height`, when the upstream told it. */
  readonly tipHeight: number | undefined;
  /**
   * `Clarity-Cache-Cost`: the units this answer cost the key it was sent with (docs/usage.md:
   * a hit 1, a miss 10 by default, a refusal or an error 0); undefined when the answer has no
   * such header (a route that is not metered, or a gateway without metering).
   */
  readonly cost: number | undefined;
}

/** A whole answer: HTTP status, the envelope, and the cache headers. */
export interface ClientResponse<T> {
  readonly status: number;
  readonly envelope: Envelope<T>;
  readonly meta: AnswerMeta;
  readonly headers: Headers;
}

/**
 * One read of a watch (POST /subscriptions): a batch call without `tip` or `cacheControl`,
 * since a watch reads every block's value afresh at that block.
 */
export type WatchRead = Omit<BatchCall, 'tip' | 'cacheControl'>;

/** The answer to a subscription: its id, where its events are, and a key per read. */
export interface Subscription {
  readonly id: string;
  /** The events stream's path, `/subscriptions/{id}/events`. */
  readonly events: string;
  readonly reads: ReadonlyArray<{ readonly index: number; readonly key: string }>;
}

/** One read's value at a block: decoded as the read-only endpoint decodes it, and as hex. */
export interface WatchedValue {
  /** The read's position in the list given to watch(), from 0. */
  readonly index: number;
  readonly value: unknown;
  /** The serialized Clarity value, 0x hex. */
  readonly raw: string;
}

/** One read that failed at a block, with the error record the read-only endpoint would answer. */
export interface WatchedError {
  readonly index: number;
  readonly error: {
    readonly code: string;
    readonly message: string;
    readonly details?: Record<string, unknown>;
    readonly [key: string]: unknown;
  };
}

/**
 * A `values` event: on connecting, every read at the tip; then, for each block where some read
 * changed, only those reads.
 */
export interface WatchValuesEvent {
  /** `<height>:<index block hash>`: what Last-Event-ID names to resume after this block. */
  readonly id: string;
  readonly tipHeight: number;
  readonly indexBlockHash: string;
  readonly values: ReadonlyArray<WatchedValue | WatchedError>;
}

/**
 * A `reset` event: the block a resumed watch named is unknown to the gateway or no longer on
 * the canonical chain, so every read's value follows, not only the changed ones.
 */
export interface WatchReset {
  readonly reason: 'unknown' | 'not-canonical' | (string & {});
}

/** What usage rows may be grouped by (docs/usage.md), in the order rows are sorted by them. */
export type UsageDimension = 'key' | 'day' | 'route' | 'function' | 'outcome';

/** The four figures of a usage row, and of the totals. */
export interface UsageFigures {
  readonly requests: number;
  readonly units: number;
  /** Exchanges with the upstream made for the answers (retries, hedges, ABIs, votes included). */
  readonly upstreamRequests: number;
  /** Body bytes sent. */
  readonly bytesSent: number;
}

/** One group of usage: the fields grouped by (only those) and the figures summed over it. */
export interface UsageRow extends UsageFigures {
  /** The key's name; null for anonymous requests. */
  readonly key?: string | null;
  /** UTC day, `YYYY-MM-DD`. */
  readonly day?: string;
  /** The route's path template, e.g. `/contract-calls/read-only/{contractAddress}/{contractName}/{functionName}`. */
  readonly route?: string;
  /** `<address>.<contract>::<function>`, `<address>.<contract>`, or '' when the route has none. */
  readonly function?: string;
  readonly outcome?: 'hit' | 'miss' | 'error' | 'refused' | (string & {});
}

/** The answer of `GET /usage` (and `GET /admin/usage`): the period, the grouping, rows and totals. */
export interface UsageReport {
  /** First UTC day, inclusive. */
  readonly from: string;
  /** Last UTC day, inclusive. */
  readonly to: string;
  readonly groupBy: readonly UsageDimension[];
  readonly rows: readonly UsageRow[];
  readonly totals: UsageFigures;
}

/** What `usage()` asks for; the gateway's defaults: the retention period up to today, by key and day. */
export interface UsageOptions {
  /** First UTC day, `YYYY-MM-DD`, inclusive. */
  readonly from?: string;
  /** Last UTC day, `YYYY-MM-DD`, inclusive. */
  readonly to?: string;
  /** Dimensions of a row, at most once each (default key, day); an empty list: totals only. */
  readonly groupBy?: readonly UsageDimension[];
}
