/**
 * Explicit removal of cache entries (an entry without a ttl is kept until it is removed,
 * docs/freshness.md), ABI
 * warming and statistics, for the admin API. Removal and counting are by key prefix, walking
 * the namespaces of cache/keys.ts and the routes of the endpoint table, through the store
 * interface, so they work on every store and cover every entry the gateway writes.
 */
import {
  ABI_PREFIX,
  abiKey,
  KEY_NAMESPACES,
  nodeRoutePrefix,
  READ_ONLY_PREFIX,
  readOnlyPrefix,
} from '../cache/keys.js';
import type { ReadThroughCache } from '../cache/read-through.js';
import { GatewayError, isGatewayError } from '../errors.js';
import { NETWORKS } from '../network.js';
import { type CacheClass, NODE_ENDPOINTS } from '../upstream/endpoints.js';
import type { AbiRegistry } from './abi-registry.js';
import type { ContractRef } from './contract-ref.js';
import { parseContractRef } from './contract-ref.js';
import type { ReadOnlyRequest, ReadOnlyService } from './read-only.js';

export interface WarmResult {
  readonly contract: string;
  readonly ok: boolean;
  readonly outcome?: string;
  readonly error?: { code: string; message: string };
}

export class CacheAdmin {
  constructor(
    private readonly cache: ReadThroughCache,
    private readonly abis: AbiRegistry,
    private readonly readOnly: ReadOnlyService,
  ) {}

  /** Remove every entry whose key starts with prefix; returns how many were removed. */
  async deletePrefix(prefix: string): Promise<number> {
    const keys = await this.#list(prefix);
    let deleted = 0;
    for (const key of keys) if (await this.#delete(key)) deleted++;
    return deleted;
  }

  /** The one entry a read-only request maps to (same validation and key as the call itself). */
  async invalidateCall(req: ReadOnlyRequest): Promise<number> {
    return (await this.#delete(this.readOnly.keyOf(req))) ? 1 : 0;
  }

  /**
   * Store calls of the admin API: a store that cannot do them (locked, full, file deleted,
   * Redis down) is reported (logged, counted) and answered as SERVICE_UNAVAILABLE in the
   * envelope, never as a 500.
   */
  async #store<T>(op: 'delete' | 'list', run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (err) {
      this.cache.reportStoreError(err, op);
      const reason = err instanceof Error ? err.message : String(err);
      throw new GatewayError(
        'SERVICE_UNAVAILABLE',
        `the cache store could not ${op === 'delete' ? 'remove entries' : 'list entries'}: ${reason}`,
        { retryable: true },
        { cause: err },
      );
    }
  }

  #list(prefix: string): Promise<string[]> {
    return this.#store('list', () => this.cache.list(prefix));
  }

  #delete(key: string): Promise<boolean> {
    return this.#store('delete', () => this.cache.invalidate(key));
  }

  /** Every cached result of a contract, or of one of its functions; optionally its ABI too. */
  async invalidateContract(ref: ContractRef, functionName?: string, includeAbi = false): Promise<number> {
    let deleted = await this.deletePrefix(
      readOnlyPrefix(ref.network, ref.address, ref.contractName, functionName),
    );
    if (includeAbi && functionName === undefined) {
      const key = abiKey(ref.network, ref.address, ref.contractName);
      if (await this.#delete(key)) deleted++;
      this.abis.forget(key);
      // A contract deployed since its 404 was remembered is found again at once.
      await this.#store('delete', () => this.abis.forgetUnknown(ref));
    }
    return deleted;
  }

  /** Everything: read-only results, ABIs and node route answers, in every namespace. */
  async invalidateAll(): Promise<number> {
    let deleted = 0;
    for (const ns of KEY_NAMESPACES) {
      const removed = await this.deletePrefix(ns.prefix);
      // Remembered 404s are not entries a caller counts; they go too, uncounted.
      if (!ns.unknown) deleted += removed;
    }
    this.abis.forget();
    return deleted;
  }

  /** Fetch (or confirm cached) the ABIs of the given `address.name` contracts. */
  async warm(contracts: readonly string[]): Promise<WarmResult[]> {
    return Promise.all(
      contracts.map(async (contract): Promise<WarmResult> => {
        try {
          const dot = contract.indexOf('.');
          const ref = parseContractRef(
            dot < 0 ? contract : contract.slice(0, dot),
            dot < 0 ? '' : contract.slice(dot + 1),
          );
          const { outcome } = await this.abis.get(ref);
          return { contract, ok: true, outcome };
        } catch (err) {
          const code = isGatewayError(err) ? err.code : 'INTERNAL_ERROR';
          const message = err instanceof Error ? err.message : String(err);
          return { contract, ok: false, error: { code, message } };
        }
      }),
    );
  }

  async stats(): Promise<Record<string, unknown>> {
    const [abiKeys, resultKeys, nodeRoutes] = await Promise.all([
      this.#list(ABI_PREFIX),
      this.#list(READ_ONLY_PREFIX),
      this.#nodeRouteCounts(),
    ]);
    return {
      store: this.cache.kind,
      entries: { abis: abiKeys.length, readOnlyResults: resultKeys.length, nodeRoutes },
      hotTierEntries: this.cache.hotEntries,
      hotTierBytes: this.cache.hotBytes,
      abiMemoBytes: this.abis.memoBytes,
      inflightLoads: this.cache.inflight,
    };
  }

  /**
   * The node route answers held, by cache class: each cached route of the endpoint table, on
   * each network, counted under its own key prefix. Call-read's and the contract interface route's entries are
   * the read-only results and ABIs counted beside them (their services keep them there).
   */
  async #nodeRouteCounts(): Promise<Partial<Record<CacheClass, number>>> {
    const counts: Partial<Record<CacheClass, number>> = {};
    const cached = NODE_ENDPOINTS.filter(
      (e) => e.service === undefined && e.cache !== 'never' && e.cache !== 'broadcast',
    );
    for (const endpoint of cached) counts[endpoint.cache] = 0;
    const tallies = await Promise.all(
      cached.flatMap((endpoint) =>
        NETWORKS.map(async (network) => {
          const prefix = nodeRoutePrefix(network, endpoint.name);
          return { cache: endpoint.cache, n: await this.#store('list', () => this.cache.count(prefix)) };
        }),
      ),
    );
    for (const { cache, n } of tallies) counts[cache] = (counts[cache] ?? 0) + n;
    return counts;
  }
}
