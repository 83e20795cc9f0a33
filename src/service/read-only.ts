/**
 * A read-only call, from the request to the rendered answer: validate everything locally,
 * answer from the cache when it can, and otherwise validate against the ABI and make one
 * (coalesced) upstream call. What is cached is the node's raw result hex; decoding options
 * apply per request.
 *
 * answer() is the one entry point: the single endpoint, and later the batch and the
 * node-compatible endpoints, are thin shells around it. The memos that keep the hit path
 * cheap live behind it: prepared calls by request text (prepared-call.ts) and rendered
 * envelopes by stored entry (rendered-bodies.ts). A hit re-parses, re-hashes, re-renders and
 * re-stringifies nothing.
 */
import type { CacheEntry } from '../cache/entry.js';
import type { CacheOutcome, ReadThroughCache } from '../cache/read-through.js';
import { checkArguments, decodeClarityHex, describeType, renderClarityValue } from '../clarity/index.js';
import type { Network } from '../config.js';
import { GatewayError, isGatewayError } from '../errors.js';
import type { NodeApi } from '../upstream/node-api.js';
import type { AbiRegistry } from './abi-registry.js';
import { JSON_CONTENT_TYPE, type RenderedAnswer } from './answer.js';
import { cacheHeaders } from './cache-status.js';
import { type ContractRef, parseContractRef } from './contract-ref.js';
import { type PreparedCall, PreparedCalls, prepare, type RequestText } from './prepared-call.js';
import { RenderedBodies, successBody } from './rendered-bodies.js';
import { hitReuse, replayable } from './replay.js';

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
  readonly cacheControl?:
    | {
        readonly bustCache?: boolean | undefined;
        readonly skipCache?: boolean | undefined;
        readonly ttl?: number | undefined;
      }
    | undefined;
}

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
   * The answer to a read-only request. `text` is the request's exact text when there is one
   * (URL and body): identical texts prepare identically, so it memoizes the preparation.
   *
   * Failures are thrown as GatewayErrors for the caller's error rendering. One that comes
   * after the cache lookup (a cached `(err ...)` raised as CONTRACT_ERROR) carries the
   * Cache-Status and Age headers in `headers`, so the answer still says where it came from.
   */
  async answer(req: ReadOnlyRequest, text?: RequestText): Promise<RenderedAnswer> {
    let call: PreparedCall;
    try {
      call = this.#prepared.get(req, text);
    } catch (err) {
      throw await this.#withExpectedType(err, req);
    }
    const result = await this.#lookup(call, req);
    const cache = cacheHeaders(result);
    const render = (): unknown => this.render(result.value, req);
    let body: string;
    try {
      body =
        result.entry === undefined
          ? successBody(render())
          : this.#rendered.body(
              result.entry,
              (req.strictJsonCompat === false ? 1 : 0) | (req.preserveContainers ? 2 : 0),
              render,
            );
    } catch (err) {
      throw isGatewayError(err) ? withHeaders(err, cache) : err;
    }
    return {
      status: 200,
      headers: { ...cache, 'content-type': JSON_CONTENT_TYPE },
      body,
      // A hit may be replayed for an identical request while its entry is still served (replay.ts).
      reuse:
        result.entry !== undefined && replayable(req)
          ? hitReuse(this.cache, call.key, result.entry)
          : undefined,
    };
  }

  /** Decode a raw result with the request's options; an (err ...) raises CONTRACT_ERROR. */
  render(value: string, req: Pick<ReadOnlyRequest, 'strictJsonCompat' | 'preserveContainers'>): unknown {
    return renderClarityValue(decodeClarityHex(value), {
      integers: 'read-only',
      strictJsonCompat: req.strictJsonCompat ?? true,
      preserveContainers: req.preserveContainers ?? false,
    });
  }

  /**
   * A malformed argument (`details.path` under `functionArgs[i]`), told what the ABI expects
   * there when the ABI is already cached: "got the string \"SP…\"" is clearer beside
   * "argument 0, \"who\", is principal". Never fetches the ABI for a request that failed.
   */
  async #withExpectedType(err: unknown, req: ReadOnlyRequest): Promise<unknown> {
    if (!isGatewayError(err) || err.code !== 'VALIDATION_ERROR') return err;
    const path = err.details?.['path'];
    const m = typeof path === 'string' ? /^functionArgs\[(\d+)\]/.exec(path) : null;
    if (m === null) return err;
    const index = Number(m[1]);
    let abi: Awaited<ReturnType<AbiRegistry['cached']>>;
    let ref: ContractRef;
    try {
      ref = parseContractRef(req.contractAddress, req.contractName);
      abi = await this.abis.cached(ref);
    } catch {
      return err;
    }
    const fn = abi?.functions.find((f) => f.name === req.functionName);
    const param = fn?.args[index];
    if (fn === undefined || param === undefined) return err;
    return new GatewayError(
      err.code,
      `${err.message} (argument ${index}, "${param.name}", of ${ref.id}::${fn.name} is ${describeType(param.type)})`,
      { ...err.details, argument: index, name: param.name, expected: param.type },
      { status: err.status },
    );
  }

  /** The cache key a request maps to (admin invalidation of one entry). */
  keyOf(req: ReadOnlyRequest): string {
    return prepare(req).key;
  }

  /** Validate the call and get its raw result: from the cache, or from one coalesced upstream call. */
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

/** The same error with more response headers (a memoized error is shared: never mutate it). */
function withHeaders(err: GatewayError, headers: Record<string, string>): GatewayError {
  return new GatewayError(err.code, err.message, err.details, {
    status: err.status,
    headers: { ...err.headers, ...headers },
    ...(err.cause === undefined ? {} : { cause: err.cause }),
  });
}
