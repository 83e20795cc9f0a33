/**
 * A read-only call: validate everything locally, answer from the cache when it can, and
 * otherwise validate against the ABI and make one (coalesced) upstream call. What is cached
 * is the node's raw result hex; decoding options apply per request.
 */

import type { ClarityValue } from '@stacks/transactions';
import { LRUCache } from 'lru-cache';
import { hashArguments, readOnlyKey } from '../cache/keys.js';
import type { CacheOutcome, ReadThroughCache } from '../cache/read-through.js';
import type { StoredEntry } from '../cache/store.js';
import {
  checkArguments,
  decodeClarityHex,
  describeType,
  parseClarityValue,
  parsePrincipal,
  renderClarityValue,
  toHex,
} from '../clarity/index.js';
import type { Network } from '../config.js';
import { GatewayError, isGatewayError } from '../errors.js';
import type { AbiRegistry } from './abi-registry.js';
import { assertFunctionName, type ContractRef, parseContractRef } from './contract-ref.js';
import type { NodeApi } from './node-api.js';

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
  readonly entry?: StoredEntry | undefined;
  /** Whether this request stored the value, and for how long (undefined = until removed). */
  readonly stored: boolean;
  readonly ttlMs: number | undefined;
}

/** The prepared form of a request: everything a cache lookup and an upstream call need. */
interface PreparedCall {
  readonly ref: ContractRef;
  readonly functionName: string;
  readonly sender: string;
  readonly args: readonly ClarityValue[];
  readonly argsHex: string[];
  readonly key: string;
}

export class ReadOnlyService {
  /** Prepared calls by request text; bounded in count and (roughly) in bytes. */
  readonly #prepared = new LRUCache<string, PreparedCall>({
    max: 10_000,
    maxSize: 16 * 1024 * 1024,
    sizeCalculation: (call, memoKey) => memoKey.length * 2 + call.key.length * 2 + 512,
  });

  constructor(
    private readonly cache: ReadThroughCache,
    private readonly abis: AbiRegistry,
    private readonly node: NodeApi,
  ) {}

  /** Validate the call and get its raw result: from the cache, or from one coalesced upstream call. */
  async lookup(req: ReadOnlyRequest, memoKey?: string): Promise<ReadOnlyLookup> {
    let call: PreparedCall;
    try {
      call = this.#prepare(req, memoKey);
    } catch (err) {
      throw await this.#withExpectedType(err, req);
    }
    const cc = req.cacheControl ?? {};
    const ttlMs = cc.ttl === undefined || cc.ttl === 0 ? undefined : Math.ceil(cc.ttl * 1000);
    const skip = cc.skipCache === true;
    const { value, outcome, entry } = await this.cache.get(call.key, () => this.#fetch(call), {
      ttlMs,
      bust: cc.bustCache === true,
      skip,
    });
    return { value, outcome, entry, stored: outcome !== 'hit' && !skip, ttlMs };
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
   * prepare() is pure: the same request always prepares the same way. memoKey identifies the
   * request exactly (its URL and body text), so a repeat skips argument parsing, serialization
   * and hashing. Only successes are memoized; a bad request is re-validated every time.
   */
  #prepare(req: ReadOnlyRequest, memoKey: string | undefined): PreparedCall {
    if (memoKey === undefined) return prepare(req);
    let call = this.#prepared.get(memoKey);
    if (call === undefined) {
      call = prepare(req);
      this.#prepared.set(memoKey, call);
    }
    return call;
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

function prepare(req: ReadOnlyRequest): PreparedCall {
  const ref = parseContractRef(req.contractAddress, req.contractName);
  assertFunctionName(req.functionName);
  if (req.network !== undefined && req.network !== ref.network) {
    throw new GatewayError(
      'VALIDATION_ERROR',
      `network "${req.network}" contradicts contract address ${req.contractAddress}, which is a ${ref.network} address`,
      { network: req.network, addressNetwork: ref.network },
    );
  }
  const sender = req.senderAddress ?? req.contractAddress;
  if (req.senderAddress !== undefined) {
    try {
      parsePrincipal(req.senderAddress);
    } catch (err) {
      throw new GatewayError('VALIDATION_ERROR', `senderAddress is not a valid Stacks principal`, {
        senderAddress: req.senderAddress,
        error: err instanceof Error ? err.message : String(err),
      });
    }
  }
  const args = req.functionArgs.map((input, i) => parseArgument(input, i));
  const argsHex = args.map((cv) => toHex(cv));
  const key = readOnlyKey(
    ref.network,
    ref.address,
    ref.contractName,
    req.functionName,
    sender,
    hashArguments(argsHex),
  );
  return { ref, functionName: req.functionName, sender, args, argsHex, key };
}

/**
 * One function argument. The read-only endpoint reports every malformed argument as
 * VALIDATION_ERROR (its documented codes); the codec's finer code stays in details.codecError.
 * The codec's message already names the argument's path: it is kept as it is.
 */
function parseArgument(input: unknown, index: number): ClarityValue {
  try {
    return parseClarityValue(input, `functionArgs[${index}]`);
  } catch (err) {
    if (isGatewayError(err) && (err.code === 'INVALID_HEX_STRING' || err.code === 'DESERIALIZATION_ERROR')) {
      throw new GatewayError('VALIDATION_ERROR', err.message, {
        ...err.details,
        argument: index,
        codecError: err.code,
      });
    }
    throw err;
  }
}
