/**
 * The typed client of a clarity-cache gateway (`import { createClient } from 'clarity-cache/client'`).
 *
 * Every method returns the envelope's `data` and throws the error class of the envelope's
 * code (errors.ts). `client.raw` has the same methods but returns the whole answer (status,
 * envelope, Cache-Status / Age / tip height) and does not throw for error envelopes: the
 * explorer page and the command line's `--raw` use it.
 *
 * `watch()` keeps a subscription's event stream open and calls back with each block's changed
 * values (watch.ts).
 *
 * fetch only: runs in Node 18+, browsers, Deno and Bun.
 */
import {
  envelopeError,
  type RetryEvent,
  type RetryPolicy,
  send,
  type TransportOptions,
} from './transport.js';
import type {
  BatchCall,
  BatchOptions,
  BatchResult,
  ClarityArg,
  ClientResponse,
  ContractAbi,
  DecodeOptions,
  DecodeResult,
  KnownContracts,
  KnownContractsOptions,
  ReadOnlyOptions,
  Subscription,
  UsageOptions,
  UsageReport,
  WatchRead,
} from './types.js';
import { usagePath } from './usage.js';
import { subscribeRequest, unsubscribeRequest, type WatchHandle, type WatchOptions, watch } from './watch.js';

export {
  ArgumentTypeError,
  argumentFromText,
  formatAbiType,
  jsonToValue,
  literalToValue,
  type SimpleValue,
} from './abi-args.js';
export { type Literal, LiteralSyntaxError, parseClarityLiteral } from './clarity-literal.js';
export { type ContractId, splitContractId } from './contract-id.js';
export * from './errors.js';
export { createSseParser, type SseEvent, type SseHandlers, type SseParser } from './sse.js';
export { envelopeError, type RetryEvent, type RetryPolicy } from './transport.js';
export * from './types.js';
export { USAGE_DIMENSIONS, usageQuery } from './usage.js';
export type { WatchHandle, WatchOptions, WatchReconnectEvent } from './watch.js';

import { splitContractId } from './contract-id.js';

export interface ClientOptions {
  /** Where the gateway answers, e.g. `http://localhost:3000` (a path prefix is kept). */
  readonly baseUrl: string;
  /** A fetch implementation (default: the global one). */
  readonly fetch?: typeof fetch;
  /** Retries of 429 and transient failures: a count, or a policy (default 2 retries). */
  readonly retries?: number | RetryPolicy;
  /** Extra headers on every request (e.g. an Authorization for a proxy in front). */
  readonly headers?: Record<string, string>;
  /** Called before each retry's wait: for logging, or to see Retry-After honoured. */
  readonly onRetry?: (event: RetryEvent) => void;
  /** Longest wait for one attempt's answer, in ms (default 60 000); then it is retried. */
  readonly timeoutMs?: number;
}

/** The raw form of each method: the whole answer, error envelopes returned rather than thrown. */
export interface RawClient {
  readOnly(
    contractId: string,
    functionName: string,
    args?: readonly ClarityArg[],
    options?: ReadOnlyOptions,
  ): Promise<ClientResponse<unknown>>;
  abi(contractId: string): Promise<ClientResponse<ContractAbi>>;
  knownContracts(options?: KnownContractsOptions): Promise<ClientResponse<KnownContracts>>;
  decode(value: ClarityArg, options?: DecodeOptions): Promise<ClientResponse<DecodeResult>>;
  batch(calls: readonly BatchCall[], options?: BatchOptions): Promise<ClientResponse<BatchResult>>;
  subscribe(reads: readonly WatchRead[]): Promise<ClientResponse<Subscription>>;
  unsubscribe(id: string): Promise<ClientResponse<unknown>>;
  usage(options?: UsageOptions): Promise<ClientResponse<UsageReport>>;
}

export interface ClarityCacheClient {
  /** Call a read-only function; `contractId` is `addr.name`. Returns the decoded result. */
  readOnly(
    contractId: string,
    functionName: string,
    args?: readonly ClarityArg[],
    options?: ReadOnlyOptions,
  ): Promise<unknown>;
  /** The contract's ABI document. */
  abi(contractId: string): Promise<ContractAbi>;
  /** The contracts whose ABI the gateway holds. */
  knownContracts(options?: KnownContractsOptions): Promise<KnownContracts>;
  /** Decode a Clarity value (0x hex or a value object) into plain JSON. */
  decode(value: ClarityArg, options?: DecodeOptions): Promise<DecodeResult>;
  /** Several read-only calls in one request; one call's failure never fails the others. */
  batch(calls: readonly BatchCall[], options?: BatchOptions): Promise<BatchResult>;
  /**
   * Watch reads: subscribe, then call `onValues` with every read at the tip and, for each new
   * block, the reads that changed; reconnects and resumes by itself until closed or aborted.
   * Resolves once subscribed (throws the subscription's error, or the signal's reason if it
   * aborts before); the handle's `done` resolves when the watch ends.
   */
  watch(reads: readonly WatchRead[], options: WatchOptions): Promise<WatchHandle>;
  /** Subscribe to reads without reading the stream (watch() does both). */
  subscribe(reads: readonly WatchRead[]): Promise<Subscription>;
  /** Delete a subscription: its open streams end. */
  unsubscribe(id: string): Promise<void>;
  /**
   * The usage of the key this client sends (`GET /usage`, with its `X-API-Key` header): rows
   * grouped by `groupBy` over `from`..`to` (UTC days), and their totals. Costs nothing; without
   * a valid key the gateway answers 401 (`UnauthorizedError`). Each answer's own cost is in
   * `raw.*(...).meta.cost`.
   */
  usage(options?: UsageOptions): Promise<UsageReport>;
  readonly raw: RawClient;
}

const seg = encodeURIComponent;

function policyOf(retries: ClientOptions['retries']): Required<RetryPolicy> {
  const given: RetryPolicy = typeof retries === 'number' ? { retries } : (retries ?? {});
  return {
    retries: Math.max(0, Math.floor(given.retries ?? 2)),
    baseDelayMs: given.baseDelayMs ?? 250,
    maxDelayMs: given.maxDelayMs ?? 30_000,
  };
}

function unwrap<T>(response: ClientResponse<T>): T {
  if (response.envelope.success) return response.envelope.data;
  throw envelopeError(response);
}

export function createClient(options: ClientOptions): ClarityCacheClient {
  if (typeof options?.baseUrl !== 'string' || options.baseUrl === '') {
    throw new TypeError('createClient: baseUrl is required, e.g. "http://localhost:3000"');
  }
  const fetchImpl = options.fetch ?? globalThis.fetch;
  if (typeof fetchImpl !== 'function') throw new TypeError('createClient: no fetch implementation available');
  const transport: TransportOptions = {
    baseUrl: options.baseUrl,
    // Bound: a browser's fetch throws "Illegal invocation" when called as a method of another object.
    fetch: fetchImpl.bind(globalThis),
    policy: policyOf(options.retries),
    headers: options.headers ?? {},
    onRetry: options.onRetry,
    timeoutMs: options.timeoutMs ?? 60_000,
  };

  const raw: RawClient = {
    async readOnly(contractId, functionName, args = [], opts = {}) {
      const { address, name } = splitContractId(contractId);
      return send(
        transport,
        'POST',
        `/contract-calls/read-only/${seg(address)}/${seg(name)}/${seg(functionName)}`,
        { ...opts, functionArgs: args },
      );
    },
    async abi(contractId) {
      const { address, name } = splitContractId(contractId);
      return send(transport, 'GET', `/contract-calls/abi/${seg(address)}/${seg(name)}`);
    },
    knownContracts(opts = {}) {
      const query = new URLSearchParams();
      if (opts.limit !== undefined) query.set('limit', String(opts.limit));
      if (opts.cursor !== undefined) query.set('cursor', opts.cursor);
      const qs = query.toString();
      return send(transport, 'GET', `/contract-calls/known-contracts${qs === '' ? '' : `?${qs}`}`);
    },
    decode(value, opts = {}) {
      return send(transport, 'POST', '/contract-calls/decode-clarity-value', {
        ...opts,
        clarityValue: value,
      });
    },
    batch(calls, opts = {}) {
      return send(transport, 'POST', '/contract-calls/batch', {
        calls: calls.map((c) => ({ ...c, functionArgs: c.functionArgs ?? [] })),
        ...(opts.tip === undefined ? {} : { tip: opts.tip }),
      });
    },
    subscribe: (reads) => subscribeRequest(transport, reads),
    unsubscribe: (id) => unsubscribeRequest(transport, id),
    usage: (opts = {}) => send(transport, 'GET', usagePath('/usage', opts)),
  };

  return {
    raw,
    readOnly: async (...a) => unwrap(await raw.readOnly(...a)),
    abi: async (id) => unwrap(await raw.abi(id)),
    knownContracts: async (...a) => unwrap(await raw.knownContracts(...a)),
    decode: async (...a) => unwrap(await raw.decode(...a)),
    batch: async (...a) => unwrap(await raw.batch(...a)),
    watch: (reads, opts) => watch(transport, reads, opts),
    subscribe: async (reads) => unwrap(await raw.subscribe(reads)),
    unsubscribe: async (id) => {
      unwrap(await raw.unsubscribe(id));
    },
    usage: async (opts) => unwrap(await raw.usage(opts)),
  };
}
