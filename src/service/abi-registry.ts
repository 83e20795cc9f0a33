/**
 * Contract ABIs: fetched upstream once, cached indefinitely (contract code never changes
 * after deployment), parsed once per process. The read-only path validates against these,
 * so a known contract costs no ABI request.
 */
import { LRUCache } from 'lru-cache';
import { ABI_PREFIX, abiKey, parseAbiKey } from '../cache/keys.js';
import type { CacheOutcome, ReadThroughCache } from '../cache/read-through.js';
import type { StoredEntry } from '../cache/store.js';
import { TieredStore } from '../cache/tiered-store.js';
import type { ContractAbi } from '../clarity/index.js';
import type { Network } from '../config.js';
import { GatewayError } from '../errors.js';
import type { ContractRef } from './contract-ref.js';
import type { NodeApi } from './node-api.js';

export interface AbiResult {
  /** The ABI document exactly as stored (JSON text), to answer without re-serializing. */
  readonly json: string;
  readonly abi: ContractAbi;
  readonly outcome: CacheOutcome;
  readonly entry?: StoredEntry | undefined;
}

export interface KnownContract {
  readonly contractAddress: string;
  readonly contractName: string;
  readonly network: Network;
}

export class AbiRegistry {
  /** Parsed ABIs by cache key; bounded, since parsing is cheap to redo. */
  readonly #parsed = new LRUCache<string, ContractAbi>({ max: 2000 });

  constructor(
    private readonly cache: ReadThroughCache,
    private readonly node: NodeApi,
  ) {}

  /** The ABI of `ref`; `bust` refetches it upstream (spending budget) and replaces the cached copy. */
  async get(ref: ContractRef, opts: { bust?: boolean } = {}): Promise<AbiResult> {
    const key = abiKey(ref.network, ref.address, ref.contractName);
    const bust = opts.bust === true;
    const { value, outcome, entry } = await this.cache.get(
      key,
      async () =>
        JSON.stringify(await this.node.getContractInterface(ref.network, ref.address, ref.contractName)),
      { bust },
    );
    if (bust) this.#parsed.delete(key);
    let abi = this.#parsed.get(key);
    if (abi === undefined) {
      abi = parseAbi(value, ref);
      this.#parsed.set(key, abi);
    }
    return { json: value, abi, outcome, entry };
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
      keys = await this.cache.store.list(ABI_PREFIX);
    } catch (err) {
      // The persistent store is down (e.g. Redis): answer from what the hot tier still holds
      // rather than fail; a plain store has nothing else to offer.
      const store = this.cache.store;
      if (!(store instanceof TieredStore)) {
        throw new GatewayError(
          'SERVICE_UNAVAILABLE',
          'the cache store could not list known contracts',
          undefined,
          {
            cause: err,
          },
        );
      }
      keys = store.listHot(ABI_PREFIX);
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
