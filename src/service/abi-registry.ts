/**
 * Contract ABIs: fetched upstream once, cached indefinitely (contract code never changes
 * after deployment), parsed once per process. The read-only path validates against these,
 * so a known contract costs no ABI request.
 *
 * The parsed copy is only ever used with the very JSON text it was parsed from: whatever the
 * cache answers (a hit, a refetch after the judge refused the stored entry, another
 * instance's write) is what the memo is checked against, so an old parse never comes back
 * with a new document.
 */
import { LRUCache } from 'lru-cache';
import { okJson } from '../api/envelope.js';
import type { CacheEntry, EntryMeta } from '../cache/entry.js';
import { ABI_PREFIX, abiKey, parseAbiKey } from '../cache/keys.js';
import type { CacheOutcome, CacheResult, LoadedValue, ReadThroughCache } from '../cache/read-through.js';
import { isContractAbi } from '../clarity/abi-shape.js';
import type { ContractAbi } from '../clarity/index.js';
import { GatewayError, isGatewayError, type NodeShapedAnswer } from '../errors.js';
import type { Network } from '../network.js';
import { INTERFACE } from '../upstream/endpoints.js';
import type { NodeApi, RequestContext } from '../upstream/node-api.js';
import type { RenderedAnswer } from './answer.js';
import { type ContractRef, parseContractRef } from './contract-ref.js';
import { UnknownContracts } from './unknown-contracts.js';

export interface AbiResult {
  /** The ABI document exactly as stored (JSON text), to answer without re-serializing. */
  readonly json: string;
  readonly abi: ContractAbi;
  readonly outcome: CacheOutcome;
  readonly entry?: CacheEntry | undefined;
  /** Whether this request wrote the ABI to the store (false for a hit or a failed write). */
  readonly stored: boolean;
  /** For a load: what its entry records (an attested ABI's votes). */
  readonly meta?: EntryMeta | undefined;
}

/**
 * The node-compatible interface route's answer as values: the stored document, or the node's
 * word that it does not know the contract, with its own bytes when they are at hand (src/http
 * turns either into the node's status, content type and body).
 */
export type AbiNodeAnswer =
  | ({ readonly kind: 'document' } & RenderedAnswer)
  | {
      readonly kind: 'unknown-contract';
      /** The node's own 404 (status, content type, bytes); absent when not at hand. */
      readonly node: NodeShapedAnswer | undefined;
      readonly cache: RenderedAnswer['cache'];
      readonly tipHeight: number | undefined;
    };

export interface KnownContract {
  readonly contractAddress: string;
  readonly contractName: string;
  readonly network: Network;
}

/** One page of the known-contracts listing. */
export interface KnownContractsPage {
  readonly contracts: KnownContract[];
  /** Every cached ABI, not only this page's (may lag by COUNT_MEMO_MS on a paged cache). */
  readonly total: number;
  /** Present when there are more: pass it as `cursor` for the next page. */
  readonly nextCursor?: string;
}

/**
 * Contracts per page when the client gives no limit: every cache up to this size gets the
 * whole listing in one answer, as before paging existed; a larger one gets its first page
 * and a nextCursor (about 110 KB, instead of 12 MB for 100k ABIs).
 */
export const KNOWN_CONTRACTS_DEFAULT_LIMIT = 1000;
/** The largest page a client may ask for. */
export const KNOWN_CONTRACTS_MAX_LIMIT = 10_000;
const COUNT_MEMO_MS = 5_000;

export class AbiRegistry {
  /**
   * Parsed ABIs by cache key, each with the JSON text it was parsed from (used only while the
   * cache answers that very text), bounded by an estimate of their heap size (see
   * parsedAbiBytes): a count bound alone lets a few hundred large ABIs exhaust the heap. An
   * ABI larger than the whole budget is not memoized (parsed on each use).
   */
  readonly #parsed: LRUCache<string, ParsedAbi>;
  /** Contracts the upstream said do not exist, remembered for CACHE_NEGATIVE_TTL_S. */
  readonly #unknown: UnknownContracts;
  /** The last count of cached ABIs (see #countAbis). */
  #abiCount: { value: number; at: number } | undefined;
  /** Told of every stored ABI (or remembered 404) found damaged (metrics: clarity_cache_store_corrupt_total). */
  onCorrupt: (() => void) | undefined;

  constructor(
    private readonly cache: ReadThroughCache,
    private readonly node: NodeApi,
    memoMaxBytes: number = DEFAULT_ABI_MEMO_MAX_BYTES,
    negativeTtlMs = 0,
  ) {
    this.#unknown = new UnknownContracts(cache, negativeTtlMs, () => this.onCorrupt?.());
    // The size is computed from the JSON text, which is at hand when the entry is set.
    this.#parsed = new LRUCache<string, ParsedAbi>({ max: 2000, maxSize: memoMaxBytes });
  }

  /** Estimated heap bytes held by the parsed-ABI memo (never above its limit). */
  get memoBytes(): number {
    return this.#parsed.calculatedSize;
  }

  /**
   * The ABI endpoint's answer: the stored document in the envelope, with what the cache did.
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

  /**
   * The node-compatible interface endpoint's answer: the stored document alone, as the node
   * sends it; for a contract the node does not know, the node's own 404 (its status, content
   * type and bytes), fetched or remembered (CACHE_NEGATIVE_TTL_S), never the envelope.
   */
  async nodeAnswer(
    contractAddress: string,
    contractName: string,
    ctx?: RequestContext,
    network?: Network,
  ): Promise<AbiNodeAnswer> {
    try {
      const answer = await this.#answer(contractAddress, contractName, (json) => json, { network }, ctx);
      return { kind: 'document', ...answer };
    } catch (err) {
      if (!isGatewayError(err) || err.code !== 'UPSTREAM_API_ERROR' || err.variant !== 'unknown-contract')
        throw err;
      return {
        kind: 'unknown-contract',
        node: err.nodeAnswer,
        cache: err.origin?.cache,
        tipHeight: err.origin?.tipHeight,
      };
    }
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
    return {
      body: shape(result.json),
      cache: {
        outcome: result.outcome,
        entry: result.entry,
        stored: result.stored,
        ttlMs: undefined,
        meta: result.meta,
      },
    };
  }

  /** The ABI of `ref`; `bust` refetches it upstream (spending budget) and replaces the cached copy. */
  async get(ref: ContractRef, opts: { bust?: boolean } = {}, ctx?: RequestContext): Promise<AbiResult> {
    const key = abiKey(ref.network, ref.address, ref.contractName);
    const bust = opts.bust === true;
    const load = (): Promise<LoadedValue> => this.#fetch(ref, bust, ctx);
    let found = await this.cache.get(key, load, { bust });
    const memo = this.#memo(key, found.value);
    if (memo !== undefined) return result(found, memo);
    let abi = parseAbi(found.value);
    if (abi === undefined && found.outcome === 'hit') {
      // A malformed ABI in the cache (written before ABIs were checked, or from outside, a
      // damaged row or record): counted as every damaged entry is, and replaced with the node's
      // instead of failing on it forever.
      this.onCorrupt?.();
      found = await this.cache.get(key, load, { bust: true });
      abi = parseAbi(found.value);
    }
    if (abi === undefined) {
      throw new GatewayError('UPSTREAM_API_ERROR', `the ABI of ${ref.id} is malformed`, {
        retryable: false,
        reason: 'malformed',
      });
    }
    this.#parsed.set(key, { json: found.value, abi }, { size: parsedAbiBytes(key, found.value) });
    return result(found, abi);
  }

  /**
   * The ABI of `ref` if the cache already holds it, else undefined: never an upstream call.
   * Used to enrich error messages with what the ABI expects, at no budget cost.
   */
  async cached(ref: ContractRef): Promise<ContractAbi | undefined> {
    const key = abiKey(ref.network, ref.address, ref.contractName);
    // The judge says whether the stored ABI may still be used; the memo only saves its parse.
    const entry = await this.cache.fresh(key);
    if (entry === undefined) return undefined;
    return this.#memo(key, entry.value) ?? parseAbi(entry.value);
  }

  /**
   * The memoized parse of `json` under `key`, or undefined when the memo holds none or one of
   * another text: the stored ABI was replaced since (a refetch after the judge refused the old
   * entry, a bust, another instance's write). Comparing is cheap: a hit from the hot tier is
   * the very string the memo holds, and any other text is compared far faster than parsed.
   */
  #memo(key: string, json: string): ContractAbi | undefined {
    const memo = this.#parsed.get(key);
    return memo !== undefined && memo.json === json ? memo.abi : undefined;
  }

  /**
   * A miss: the node's ABI, unless the contract is remembered as unknown
   * (CACHE_NEGATIVE_TTL_S); a bust asks the node even then (the contract may be new).
   */
  async #fetch(ref: ContractRef, bust: boolean, ctx: RequestContext | undefined): Promise<LoadedValue> {
    const unknown = bust ? undefined : await this.#unknown.lookup(ref);
    if (unknown !== undefined) throw unknown;
    try {
      const { abi, votes } = await this.node.send(
        INTERFACE,
        { network: ref.network, params: { address: ref.address, contract: ref.contractName }, read: 'abi' },
        ctx,
      );
      // An attested ABI records how many upstreams gave it (docs/consensus.md).
      const value = JSON.stringify(abi);
      return votes === undefined ? { value } : { value, meta: { votes } };
    } catch (err) {
      throw await this.#unknown.remember(ref, err);
    }
  }

  /**
   * One page of the contracts whose ABI the cache holds, both networks, each once, ordered by
   * network, address and name (code-point order); local data only. It is read from the
   * store's key index (kept as ABIs are stored), never rebuilt per request: a page costs
   * about `limit` keys however many ABIs are cached. The cursor of the next page is the
   * last contract's `network:address.name`.
   */
  async known(page: { limit?: number; cursor?: string } = {}): Promise<KnownContractsPage> {
    const limit = page.limit ?? KNOWN_CONTRACTS_DEFAULT_LIMIT;
    const after = page.cursor === undefined ? undefined : `${ABI_PREFIX}${page.cursor}`;
    let keys: string[];
    let total: (() => Promise<number>) | number | undefined;
    try {
      // One more than asked: whether a next page exists, without counting.
      keys = await this.cache.listPage(ABI_PREFIX, after, limit + 1);
    } catch (err) {
      // The persistent store is down (e.g. Redis): answer from what the hot tier still holds
      // rather than fail; a store without one has nothing else to offer.
      const held = this.cache.listHeld(ABI_PREFIX);
      if (held === undefined) {
        throw new GatewayError(
          'SERVICE_UNAVAILABLE',
          'the cache store could not list known contracts',
          undefined,
          { cause: err },
        );
      }
      held.sort();
      keys = held.filter((k) => after === undefined || k > after).slice(0, limit + 1);
      total = held.length;
    }
    const more = keys.length > limit;
    if (more) keys = keys.slice(0, limit);
    const contracts: KnownContract[] = [];
    for (const key of keys) {
      const parsed = parseAbiKey(key);
      if (parsed !== undefined) contracts.push(parsed);
    }
    // A first page that holds everything is its own count (every small cache): no count query.
    total ??= !more && after === undefined ? contracts.length : () => this.#countAbis();
    return {
      contracts,
      total: typeof total === 'number' ? total : await total(),
      ...(more ? { nextCursor: keys[keys.length - 1]!.slice(ABI_PREFIX.length) } : {}),
    };
  }

  /**
   * The number of cached ABIs for a paged answer, reused for COUNT_MEMO_MS: counting walks
   * the index (about 16 ms for 100k ABIs in SQLite), which paging through a large cache
   * should not pay on every page.
   */
  async #countAbis(): Promise<number> {
    const now = Date.now();
    if (this.#abiCount !== undefined && now - this.#abiCount.at < COUNT_MEMO_MS) return this.#abiCount.value;
    const value = await this.cache.count(ABI_PREFIX);
    this.#abiCount = { value, at: now };
    return value;
  }

  /** Forget parsed copies (after an admin invalidation). */
  forget(key?: string): void {
    if (key === undefined) this.#parsed.clear();
    else this.#parsed.delete(key);
  }

  /** Forget that ref was unknown (an admin invalidation of its ABI); true when it was remembered. */
  forgetUnknown(ref: ContractRef): Promise<boolean> {
    return this.#unknown.forget(ref);
  }
}

export const DEFAULT_ABI_MEMO_MAX_BYTES = 16 * 1024 * 1024;

/** A parsed ABI and the JSON text it was parsed from. */
interface ParsedAbi {
  readonly json: string;
  readonly abi: ContractAbi;
}

/**
 * Estimated heap size of a parsed ABI from its JSON text. Measured on Node 20 (V8): the
 * object graph JSON.parse builds from an ABI takes about PARSED_BYTES_PER_JSON_CHAR bytes
 * per character of its JSON (property names are shared, but every object, array and small
 * string has its own header); rounded up so the bound errs on the safe side. The memo also
 * keeps the JSON text itself (one byte per character: an ABI's JSON is ASCII), usually the
 * string the store's entry holds, but alone once the store has let that entry go.
 */
const PARSED_BYTES_PER_JSON_CHAR = 3;
const JSON_BYTES_PER_CHAR = 1;
const MEMO_ENTRY_OVERHEAD_BYTES = 256;

export function parsedAbiBytes(key: string, json: string): number {
  return (
    json.length * (PARSED_BYTES_PER_JSON_CHAR + JSON_BYTES_PER_CHAR) +
    key.length * 2 +
    MEMO_ENTRY_OVERHEAD_BYTES
  );
}

function result(found: CacheResult, abi: ContractAbi): AbiResult {
  const { value, outcome, entry, stored, meta } = found;
  return {
    json: value,
    abi,
    outcome,
    entry,
    stored: stored === true,
    ...(meta === undefined ? {} : { meta }),
  };
}

/** The ABI in json, or undefined when it is not JSON or not of an ABI's shape (abi-shape.ts). */
function parseAbi(json: string): ContractAbi | undefined {
  try {
    const doc: unknown = JSON.parse(json);
    return isContractAbi(doc) ? doc : undefined;
  } catch {
    return undefined;
  }
}
