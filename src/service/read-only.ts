/**
 * A read-only call, from the request to the rendered answer: validate everything locally,
 * answer from the cache when it can, and otherwise validate against the ABI and make one
 * (coalesced) upstream call. What is cached is the node's raw result hex; decoding options
 * apply per request.
 *
 * lookup() is the one code path: validation, the cache and the upstream call, giving the raw
 * result and where it came from. Its two renderings are the entry points of the HTTP shells:
 * answer() (the envelope: the single endpoint, and each item of a batch) and nodeAnswer()
 * (the node's own {okay, result} shape: the node-compatible endpoint). The memos that keep
 * the hit path cheap live behind them: prepared calls by request text (prepared-call.ts) and
 * rendered answers by stored entry (rendered-bodies.ts). A hit re-parses, re-hashes,
 * re-renders and re-stringifies nothing.
 */
import type { CacheEntry } from '../cache/entry.js';
import type { CacheOutcome, ReadThroughCache } from '../cache/read-through.js';
import { checkArguments, decodeClarityHex, renderClarityValue } from '../clarity/index.js';
import type { Network } from '../config.js';
import { GatewayError, isGatewayError } from '../errors.js';
import type { NodeApi } from '../upstream/node-api.js';
import type { AbiRegistry } from './abi-registry.js';
import { JSON_CONTENT_TYPE, type RenderedAnswer } from './answer.js';
import { cacheHeaders } from './cache-status.js';
import { nodeRefusalBody, nodeResultBody, refusalCause } from './node-shape.js';
import { type PreparedCall, PreparedCalls, prepare, type RequestText } from './prepared-call.js';
import { RenderedBodies, successBody } from './rendered-bodies.js';

export type { RenderedAnswer } from './answer.js';
export type { RequestText } from './prepared-call.js';

export interface ReadOnlyRequest {
  readonly contractAddress: string;
  readonly contractName: string;
  readonly functionName: string;
  readonly functionArgs: readonly unknown[];
  readonly network?: Network | undefined;
  readonly senderAddress?: string | undefined;
  readonly strictJsonCompat?: boolean | undefined;
  readonly preserveContainers?: boolean | undefined;
  /**
   * The block to read at: an index block hash (64 hex digits, with or without 0x, any case),
   * or "latest" / absent for the current state. Anything else is VALIDATION_ERROR naming
   * `tip`, before any upstream request.
   */
  readonly tip?: string | undefined;
  readonly cacheControl?:
    | {
        readonly bustCache?: boolean | undefined;
        readonly skipCache?: boolean | undefined;
        readonly ttl?: number | undefined;
        /** Most blocks the chain may have advanced since a cached result was read. */
        readonly maxBlocks?: number | undefined;
        /** Seconds a stale result may be answered while one background refresh runs. */
        readonly staleWhileRevalidate?: number | undefined;
        /** Seconds a stale result may be answered when the upstream fails transiently. */
        readonly staleIfError?: number | undefined;
      }
    | undefined;
}

/** Rendering variant of a stored entry in the node's shape (envelope variants use bits 0 and 1). */
const NODE_SHAPE = 4;

export interface ReadOnlyLookup {
  /** The node's raw result (0x hex), from the cache or fresh. */
  readonly value: string;
  readonly outcome: CacheOutcome;
  /** The entry served, for a hit. */
  readonly entry?: CacheEntry | undefined;
  /** Whether this request stored the value, and for how long (undefined = until removed). */
  readonly stored: boolean;
  readonly ttlMs: number | undefined;
}

export class ReadOnlyService {
  readonly #prepared = new PreparedCalls();
  readonly #rendered = new RenderedBodies();

  constructor(
    private readonly cache: ReadThroughCache,
    private readonly abis: AbiRegistry,
    private readonly node: NodeApi,
  ) {}

  /**
   * The envelope answer to a read-only request. `text` is the request's exact text when there
   * is one (URL and body): identical texts prepare identically, so it memoizes the preparation.
   *
   * Failures are thrown as GatewayErrors for the caller's error rendering. One that comes
   * after the cache lookup (a cached `(err ...)` raised as CONTRACT_ERROR) carries the
   * Cache-Status and Age headers in `headers`, so the answer still says where it came from.
   */
  async answer(req: ReadOnlyRequest, text?: RequestText): Promise<RenderedAnswer> {
    const result = await this.lookup(req, text);
    const render = (): string => successBody(this.render(result.value, req));
    let body: string;
    try {
      body =
        result.entry === undefined
          ? render()
          : this.#rendered.body(
              result.entry,
              (req.strictJsonCompat === false ? 1 : 0) | (req.preserveContainers ? 2 : 0),
              render,
            );
    } catch (err) {
      throw isGatewayError(err) ? withHeaders(err, cacheHeaders(result)) : err;
    }
    return { status: 200, headers: answerHeaders(result), body };
  }

  /**
   * The same call answered in the node's own shape (the node-compatible endpoint): the raw
   * result as `{"okay":true,"result":"0x…"}`, whatever it holds (an `(err …)` included: the
   * node answers okay:true for it too), and the node's refusal (okay:false, which is never
   * cached) as the node's `{"okay":false,"cause":"…"}`. Everything the gateway raises itself
   * (malformed input, no budget, upstream down) is thrown, for the envelope.
   */
  async nodeAnswer(req: ReadOnlyRequest, text?: RequestText): Promise<RenderedAnswer> {
    let result: ReadOnlyLookup;
    try {
      result = await this.lookup(req, text, 'arguments');
    } catch (err) {
      const cause = refusalCause(err);
      if (cause === undefined) throw err;
      // Fetched from the node (or joined to a fetch of it) and not stored.
      const headers = answerHeaders({ outcome: 'miss', stored: false, ttlMs: undefined });
      return { status: 200, headers, body: nodeRefusalBody(cause) };
    }
    const { value, entry } = result;
    const body =
      entry === undefined
        ? nodeResultBody(value)
        : this.#rendered.body(entry, NODE_SHAPE, () => nodeResultBody(value));
    return { status: 200, headers: answerHeaders(result), body };
  }

  /**
   * Validate the call and get its raw result: from the cache, or from one coalesced upstream
   * call. argsField names the arguments in error messages (the client's own field name).
   */
  lookup(req: ReadOnlyRequest, text?: RequestText, argsField?: string): Promise<ReadOnlyLookup> {
    return this.#lookup(this.#prepared.get(req, text, argsField), req);
  }

  /** Decode a raw result with the request's options; an (err ...) raises CONTRACT_ERROR. */
  render(value: string, req: Pick<ReadOnlyRequest, 'strictJsonCompat' | 'preserveContainers'>): unknown {
    return renderClarityValue(decodeClarityHex(value), {
      integers: 'read-only',
      strictJsonCompat: req.strictJsonCompat ?? true,
      preserveContainers: req.preserveContainers ?? false,
    });
  }

  /** The cache key a request maps to (admin invalidation of one entry). */
  keyOf(req: ReadOnlyRequest): string {
    return prepare(req).key;
  }

  async #lookup(call: PreparedCall, req: ReadOnlyRequest): Promise<ReadOnlyLookup> {
    const cc = req.cacheControl ?? {};
    const ttlMs = cc.ttl === undefined || cc.ttl === 0 ? undefined : Math.ceil(cc.ttl * 1000);
    const skip = cc.skipCache === true;
    const { value, outcome, entry, stored } = await this.cache.get(call.key, () => this.#fetch(call), {
      ttlMs,
      bust: cc.bustCache === true,
      skip,
    });
    return { value, outcome, entry, stored: stored === true, ttlMs };
  }

  /** A miss: check the call against the (cached) ABI, then ask the node. */
  async #fetch(call: PreparedCall): Promise<string> {
    const { abi } = await this.abis.get(call.ref);
    const fn = abi.functions.find((f) => f.name === call.functionName);
    if (fn === undefined || fn.access === 'private') {
      throw new GatewayError(
        'INVALID_FUNCTION',
        fn === undefined
          ? `Function "${call.functionName}" does not exist in contract ${call.ref.id}`
          : `Function "${call.functionName}" of contract ${call.ref.id} is private and cannot be called`,
        { function: call.functionName, contract: call.ref.id },
      );
    }
    checkArguments([...call.args], fn, call.ref.id);
    const { result } = await this.node.callReadOnly(
      call.ref.network,
      call.ref.address,
      call.ref.contractName,
      call.functionName,
      { sender: call.sender, arguments: call.argsHex },
      call.tip === undefined ? {} : { tip: call.tip },
    );
    // Refuse to cache what we could not decode later: a malformed node answer is an upstream error.
    try {
      decodeClarityHex(result);
    } catch (err) {
      throw new GatewayError(
        'UPSTREAM_API_ERROR',
        `the node answered ${call.ref.id}::${call.functionName} with an undecodable result`,
        {
          retryable: false,
          error: err instanceof Error ? err.message : String(err),
        },
        { status: 502 },
      );
    }
    return result;
  }
}

/** The response headers of an answer from the cache (or through it). */
function answerHeaders(view: Parameters<typeof cacheHeaders>[0]): Record<string, string> {
  return { ...cacheHeaders(view), 'content-type': JSON_CONTENT_TYPE };
}

/** The same error with more response headers (a memoized error is shared: never mutate it). */
function withHeaders(err: GatewayError, headers: Record<string, string>): GatewayError {
  return new GatewayError(err.code, err.message, err.details, {
    status: err.status,
    headers: { ...err.headers, ...headers },
    ...(err.cause === undefined ? {} : { cause: err.cause }),
  });
}
