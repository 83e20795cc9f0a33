/**
 * A read-only request prepared for the cache and the node: the contract, the sender, the
 * arguments parsed and serialized, and the cache key. Preparing is pure (the same request
 * always prepares the same way), so repeats are memoized by the request's exact text: a hit
 * skips argument parsing, serialization and hashing.
 */
import type { ClarityValue } from '@stacks/transactions';
import { LRUCache } from 'lru-cache';
import { hashArguments, pinnedKey, readOnlyKey } from '../cache/keys.js';
import { parseTip } from '../chain/block-id.js';
import { parseClarityValue, parsePrincipal, toHex } from '../clarity/index.js';
import { GatewayError, isGatewayError } from '../errors.js';
import { assertFunctionName, type ContractRef, parseContractRef } from './contract-ref.js';
import type { ReadOnlyRequest } from './read-only.js';

/** Everything a cache lookup and an upstream call need. */
export interface PreparedCall {
  readonly ref: ContractRef;
  readonly functionName: string;
  readonly sender: string;
  readonly args: readonly ClarityValue[];
  readonly argsHex: string[];
  /** The block the call is pinned to (64 lowercase hex digits); undefined = the current state. */
  readonly tip: string | undefined;
  readonly key: string;
}

/** The exact text of a request (URL and body), which identifies it for the memo. */
export interface RequestText {
  readonly url: string;
  readonly body: string;
}

/** Longest request body whose prepared form is memoized (longer ones are rare and re-prepared). */
const MAX_MEMO_BODY = 4096;

export class PreparedCalls {
  /** Prepared calls by request text; bounded in count and (roughly) in bytes. */
  readonly #byText = new LRUCache<string, PreparedCall>({
    max: 10_000,
    maxSize: 16 * 1024 * 1024,
    sizeCalculation: (call, memoKey) => memoKey.length * 2 + call.key.length * 2 + 512,
  });

  /**
   * Only successes are memoized; a bad request is re-validated every time. The text includes
   * the URL, so requests of different endpoints (and so different argsField) never share a memo.
   */
  get(req: ReadOnlyRequest, text: RequestText | undefined, argsField?: string): PreparedCall {
    if (text === undefined || text.body.length > MAX_MEMO_BODY) return prepare(req, argsField);
    const memoKey = `${text.url}\n${text.body}`;
    let call = this.#byText.get(memoKey);
    if (call === undefined) {
      call = prepare(req, argsField);
      this.#byText.set(memoKey, call);
    }
    return call;
  }
}

/**
 * argsField: the name of the arguments' field in the client's request, for error messages
 * (`functionArgs` for the read-only endpoint, `arguments` for the node-compatible one).
 */
export function prepare(req: ReadOnlyRequest, argsField = 'functionArgs'): PreparedCall {
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
  const tip = parseTip(req.tip);
  const args = req.functionArgs.map((input, i) => parseArgument(input, `${argsField}[${i}]`, i));
  const argsHex = args.map((cv) => toHex(cv));
  const latestKey = readOnlyKey(
    ref.network,
    ref.address,
    ref.contractName,
    req.functionName,
    sender,
    hashArguments(argsHex),
  );
  const key = tip === undefined ? latestKey : pinnedKey(latestKey, tip);
  return { ref, functionName: req.functionName, sender, args, argsHex, tip, key };
}

/**
 * One function argument. The read-only endpoint reports every malformed argument as
 * VALIDATION_ERROR (its documented codes); the codec's finer code stays in details.codecError.
 * The codec's message already names the argument's path: it is kept as it is.
 */
function parseArgument(input: unknown, path: string, index: number): ClarityValue {
  try {
    return parseClarityValue(input, path);
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
