/**
 * Contract ABIs: fetched upstream once, cached indefinitely (contract code never changes
 * after deployment), parsed once per process. The read-only path validates against these,
 * so a known contract costs no ABI request.
 */
import { LRUCache } from 'lru-cache';
import { okJson } from '../api/envelope.js';
import type { CacheEntry } from '../cache/entry.js';
import { ABI_PREFIX, abiKey, parseAbiKey } from '../cache/keys.js';
import type { CacheOutcome, ReadThroughCache } from '../cache/read-through.js';
import type { ContractAbi } from '../clarity/index.js';
import type { Network } from '../config.js';
import { GatewayError } from '../errors.js';
import type { NodeApi, RequestContext } from '../upstream/node-api.js';
import { JSON_CONTENT_TYPE, type RenderedAnswer } from './answer.js';
import { cacheHeaders } from './cache-status.js';
import { type ContractRef, parseContractRef } from './contract-ref.js';

export interface AbiResult {
  /** The ABI document exactly as stored (JSON text), to answer without re-serializing. */
  readonly json: string;
  readonly abi: ContractAbi;
  readonly outcome: CacheOutcome;
  readonly entry?: CacheEntry | undefined;
  /** Whether this request wrote the ABI to the store (false for a hit or a failed write). */
  readonly stored: boolean;
}

export interface KnownContract {
  readonly contractAddress: string;
  readonly contractName: string;
  readonly network: Network;
}

export class AbiRegistry {
  /**
   * Parsed ABIs by cache key, bounded by an estimate of their heap size (see
   * parsedAbiBytes): a count bound alone lets a few hundred large ABIs exhaust the heap. An
   * ABI larger than the whole budget is not memoized (parsed on each use).
   */
  readonly #parsed: LRUCache<string, ContractAbi>;

  constructor(
    private readonly cache: ReadThroughCache,
    private readonly node: NodeApi,
    memoMaxBytes: number = DEFAULT_ABI_MEMO_MAX_BYTES,
  ) {
    // The size is computed from the JSON text, which is at hand when the entry is set.
    this.#parsed = new LRUCache<string, ContractAbi>({ max: 2000, maxSize: memoMaxBytes });
  }

  /** Estimated heap bytes held by the parsed-ABI memo (never above its limit). */
  get memoBytes(): number {
    return this.#parsed.calculatedSize;
  }

  /**
   * The ABI endpoint's answer: the stored document in the envelope, with Cache-Status and Age.
   * `network` (the ?network= query) must agree with the address; `bust` refetches upstream.
   */
  answer(
    contractAddress: string,
    contractName: string,
    opts: { network?: Network | undefined; bust?: boolean } = {},
    ctx?: RequestContext,
  ): Promise<RenderedAnswer> {
    // The stored ABI is already JSON: splice it into the envelope instead of parse + stringify.
    return this.#answer(contractAddress, contractName, okJson, opts, ctx);
  }

  /** The node-compatible interface endpoint's answer: the stored document alone, as the node sends it. */
  nodeAnswer(contractAddress: string, contractName: string, ctx?: RequestContext): Promise<RenderedAnswer> {
    return this.#answer(contractAddress, contractName, (json) => json, {}, ctx);
  }

  async #answer(
    contractAddress: string,
    contractName: string,
    shape: (json: string) => string,
    opts: { network?: Network | undefined; bust?: boolean },
    ctx: RequestContext | undefined,
  ): Promise<RenderedAnswer> {
    const ref = parseContractRef(contractAddress, contractName);
    if (opts.network !== undefined && opts.network !== ref.network) {
      throw new GatewayError(
        'VALIDATION_ERROR',
        `network "${opts.network}" contradicts contract address ${ref.address}, which is a ${ref.network} address`,
        { network: opts.network, addressNetwork: ref.network },
      );
    }
    const result = await this.get(ref, { bust: opts.bust === true }, ctx);
    const cache = cacheHeaders({
      outcome: result.outcome,
      entry: result.entry,
      stored: result.stored,
      ttlMs: undefined,
    });
    return {
      status: 200,
      headers: { ...cache, 'content-type': JSON_CONTENT_TYPE },
      body: shape(result.json),
    };
  }

  /** The ABI of `ref`; `bust` refetches it upstream (spending budget) and replaces the cached copy. */
  async get(ref: ContractRef, opts: { bust?: boolean } = {}, ctx?: RequestContext): Promise<AbiResult> {
    const key = abiKey(ref.network, ref.address, ref.contractName);
    const bust = opts.bust === true;
    const { value, outcome, entry, stored } = await this.cache.get(
      key,
      async () =>
        JSON.stringify(
          (await this.node.getContractInterface(ref.network, ref.address, ref.contractName, ctx)).abi,
        ),
      { bust },
    );
    if (bust) this.#parsed.delete(key);
    let abi = this.#parsed.get(key);
    if (abi === undefined) {
      abi = parseAbi(value, ref);
      this.#parsed.set(key, abi, { size: parsedAbiBytes(key, value) });
    }
    return { json: value, abi, outcome, entry, stored: stored === true };
  }

  /**
   * The ABI of `ref` if the cache already holds it, else undefined: never an upstream call.
   * Used to enrich error messages with what the ABI expects, at no budget cost.
   */
  async cached(ref: ContractRef): Promise<ContractAbi | undefined> {
    const key = abiKey(ref.network, ref.address, ref.contractName);
    const memo = this.#parsed.get(key);
    if (memo !== undefined) return memo;
    const entry = await this.cache.peek(key);
    if (entry === undefined) return undefined;
    try {
      return parseAbi(entry.value, ref);
    } catch {
      return undefined;
    }
  }

  /** Contracts whose ABI the cache holds, both networks, each once; local data only. */
  async known(): Promise<KnownContract[]> {
    let keys: string[];
    try {
      keys = await this.cache.list(ABI_PREFIX);
    } catch (err) {
      // The persistent store is down (e.g. Redis): answer from what the hot tier still holds
      // rather than fail; a store without one has nothing else to offer.
      const held = this.cache.listHeld(ABI_PREFIX);
      if (held === undefined) {
        throw new GatewayError(
          'SERVICE_UNAVAILABLE',
          'the cache store could not list known contracts',
          undefined,
          {
            cause: err,
          },
        );
      }
      keys = held;
    }
    const seen = new Set<string>();
    const out: KnownContract[] = [];
    for (const key of keys) {
      const parsed = parseAbiKey(key);
      if (parsed === undefined || seen.has(key)) continue;
      seen.add(key);
      out.push(parsed);
    }
    out.sort((a, b) =>
      a.network === b.network
        ? `${a.contractAddress}.${a.contractName}`.localeCompare(`${b.contractAddress}.${b.contractName}`)
        : a.network.localeCompare(b.network),
    );
    return out;
  }

  /** Forget parsed copies (after an admin invalidation). */
  forget(key?: string): void {
    if (key === undefined) this.#parsed.clear();
    else this.#parsed.delete(key);
  }
}

export const DEFAULT_ABI_MEMO_MAX_BYTES = 16 * 1024 * 1024;

/**
 * Estimated heap size of a parsed ABI from its JSON text. Measured on Node 20 (V8): the
 * object graph JSON.parse builds from an ABI takes about PARSED_BYTES_PER_JSON_CHAR bytes
 * per character of its JSON (property names are shared, but every object, array and small
 * string has its own header); rounded up so the bound errs on the safe side.
 */
const PARSED_BYTES_PER_JSON_CHAR = 3;
const MEMO_ENTRY_OVERHEAD_BYTES = 256;

export function parsedAbiBytes(key: string, json: string): number {
  return json.length * PARSED_BYTES_PER_JSON_CHAR + key.length * 2 + MEMO_ENTRY_OVERHEAD_BYTES;
}

function parseAbi(json: string, ref: ContractRef): ContractAbi {
  try {
    const abi = JSON.parse(json) as ContractAbi;
    if (abi !== null && typeof abi === 'object' && Array.isArray(abi.functions)) return abi;
  } catch {
    // fall through: a corrupt entry is reported below
  }
  throw new GatewayError('UPSTREAM_API_ERROR', `the ABI held for ${ref.id} is malformed`, {
    retryable: false,
  });
}
