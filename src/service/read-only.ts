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
import { type ProofView, type TipView, tipOf } from '../cache/judge.js';
import type { CachePolicy, LoadContext, LoadedValue, ReadThroughCache } from '../cache/read-through.js';
import type { CacheView } from '../cache/view.js';
import type { ChainTracker } from '../chain/tracker.js';
import { checkArguments, decodeClarityHex, describeType, renderClarityValue } from '../clarity/index.js';
import { GatewayError, isGatewayError } from '../errors.js';
import type { Network } from '../network.js';
import { CALL_READ } from '../upstream/endpoints.js';
import type { NodeApi, RequestContext } from '../upstream/node-api.js';
import type { AbiRegistry } from './abi-registry.js';
import type { LaneReuse, RenderedAnswer } from './answer.js';
import { type ContractRef, parseContractRef } from './contract-ref.js';
import type { CurrencyProof } from './currency-proof.js';
import { nodeRefusalBody, nodeResultBody, refusalCause } from './node-shape.js';
import { type PreparedCall, PreparedCalls, prepare, type RequestText } from './prepared-call.js';
import { RenderedBodies, successBody } from './rendered-bodies.js';
import { hitReuse, replayable } from './replay.js';
import { type StaleDefaults, staleWindows } from './stale-windows.js';

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

/** A lookup's result: its cache view (outcome, entry, stored, ttl, stale) and the raw value. */
export interface ReadOnlyLookup extends CacheView {
  /** The node's raw result (0x hex), from the cache or fresh. */
  readonly value: string;
  /**
   * The chain tip height the value is current at, when known: for an answer from a stored
   * entry, as the judge's verdict says (the tip the observer's proof carried it to, else the
   * height it was read at); for a load, the height it was read at.
   */
  readonly tipHeight: number | undefined;
  /** How an answer rendered from this hit may be replayed (src/service/replay.ts); absent = never. */
  readonly reuse?: LaneReuse | undefined;
}

/**
 * Chain-aware freshness (docs/freshness.md): the tip knowledge and the
 * deployment's defaults. Without it (a service built for a test), entries are judged by their
 * ttl alone, as before block bounds existed.
 */
export interface FreshnessSettings extends StaleDefaults {
  readonly chain: ChainTracker;
  /** CACHE_MAX_BLOCKS: the bound of requests that send no maxBlocks; undefined = none. */
  readonly maxBlocks: number | undefined;
  /** NODE_MAX_BLOCKS: the bound of the node-compatible call-read (a node answers the current state). */
  readonly nodeMaxBlocks?: number | undefined;
}

/** The integer fields of cacheControl that the chain-aware rules add (checked here too for callers without the HTTP schema). */
const WINDOW_FIELDS = ['maxBlocks', 'staleWhileRevalidate', 'staleIfError'] as const;

/** A stored entry's value did not decode: the entry is damaged, not the request. */
class StoredEntryDamaged extends Error {}

/** Errors that say a value is not one valid serialized Clarity value. */
function isDamagedValueError(err: unknown): boolean {
  return isGatewayError(err) && (err.code === 'DESERIALIZATION_ERROR' || err.code === 'INVALID_HEX_STRING');
}

export class ReadOnlyService {
  readonly #prepared = new PreparedCalls();
  readonly #rendered = new RenderedBodies();
  /** The chain-aware policy of a request that brings nothing of its own (see #chainPolicy). */
  #defaultWindows: Partial<CachePolicy> | undefined;
  #proof: CurrencyProof | undefined;

  constructor(
    private readonly cache: ReadThroughCache,
    private readonly abis: AbiRegistry,
    private readonly node: NodeApi,
    private readonly freshness?: FreshnessSettings,
  ) {}

  /** Told of every stored entry found damaged (metrics: clarity_cache_store_corrupt_total). */
  onCorrupt: (() => void) | undefined;

  /**
   * The envelope answer to a read-only request. `text` is the request's exact text when there
   * is one (URL and body): identical texts prepare identically, so it memoizes the preparation.
   *
   * Failures are thrown as GatewayErrors for the caller's error rendering. One that comes
   * after the cache lookup (a cached `(err ...)` raised as CONTRACT_ERROR) carries what the
   * cache did and the tip as its origin, so the answer still says where it came from.
   */

  async answer(req: ReadOnlyRequest, text?: RequestText, rc?: RequestContext): Promise<RenderedAnswer> {
    try {
      return await this.#answer(req, text, rc);
    } catch (err) {
      if (!(err instanceof StoredEntryDamaged)) throw err;
      // A stored value that is not one valid Clarity value (a damaged SQLite row, foreign bytes
      // in Redis) is a miss: removed, counted, fetched again; never answered, never blamed on
      // the client.
      this.onCorrupt?.();
      try {
        await this.cache.invalidate(this.keyOf(req));
      } catch {
        // The refetch below replaces it anyway.
      }
      return this.#answer({ ...req, cacheControl: { ...req.cacheControl, bustCache: true } }, undefined, rc);
    }
  }

  async #answer(req: ReadOnlyRequest, text?: RequestText, rc?: RequestContext): Promise<RenderedAnswer> {
    const result = await this.lookup(req, text, undefined, rc);
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
      if (result.entry !== undefined && isDamagedValueError(err)) throw new StoredEntryDamaged();
      // A cached (err …) raised as CONTRACT_ERROR still says where it came from.
      throw isGatewayError(err)
        ? err.rephrased(err.message, err.details, { origin: { cache: result, tipHeight: result.tipHeight } })
        : err;
    }
    return { body, cache: result, tipHeight: result.tipHeight, reuse: result.reuse };
  }

  /**
   * The same call answered in the node's own shape (the node-compatible endpoint): the raw
   * result as `{"okay":true,"result":"0x…"}`, whatever it holds (an `(err …)` included: the
   * node answers okay:true for it too), and the node's refusal (okay:false, which is never
   * cached) as the node's `{"okay":false,"cause":"…"}`. Everything the gateway raises itself
   * (malformed input, no budget, upstream down) is thrown, for the envelope.
   */
  async nodeAnswer(req: ReadOnlyRequest, text?: RequestText, rc?: RequestContext): Promise<RenderedAnswer> {
    let result: ReadOnlyLookup;
    // A node answers the current state: NODE_MAX_BLOCKS is this shape's block bound.
    const nodeMaxBlocks = this.freshness?.nodeMaxBlocks;
    const bounded =
      nodeMaxBlocks === undefined || req.cacheControl?.maxBlocks !== undefined
        ? req
        : { ...req, cacheControl: { ...req.cacheControl, maxBlocks: nodeMaxBlocks } };
    try {
      result = await this.lookup(bounded, text, 'arguments', rc);
    } catch (err) {
      const cause = refusalCause(err);
      if (cause === undefined) throw err;
      // Fetched from the node (or joined to a fetch of it) and not stored.
      return {
        body: nodeRefusalBody(cause),
        cache: { outcome: 'miss', stored: false, ttlMs: undefined },
      };
    }
    const { value, entry } = result;
    const body =
      entry === undefined
        ? nodeResultBody(value)
        : this.#rendered.body(entry, NODE_SHAPE, () => nodeResultBody(value));
    return { body, cache: result, tipHeight: result.tipHeight, reuse: result.reuse };
  }

  /**
   * Validate the call and get its raw result: from the cache, or from one coalesced upstream
   * call. argsField names the arguments in error messages (the client's own field name).
   */
  async lookup(
    req: ReadOnlyRequest,
    text?: RequestText,
    argsField?: string,
    rc?: RequestContext,
  ): Promise<ReadOnlyLookup> {
    let call: PreparedCall;
    try {
      call = this.#prepared.get(req, text, argsField);
    } catch (err) {
      throw await this.#withExpectedType(err, req);
    }
    return this.#lookup(call, req, rc);
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
   * "argument 1, \"who\", is principal". Never fetches the ABI for a request that failed.
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
    return err.rephrased(
      `${err.message} (argument ${index + 1}, "${param.name}", of ${ref.id}::${fn.name} is ${describeType(param.type)})`,
      { ...err.details, argument: index + 1, name: param.name, expected: param.type },
    );
  }

  /** Keep entries current across blocks that provably did not touch them (the event observer). */
  useProof(proof: CurrencyProof | undefined): void {
    this.#proof = proof;
  }

  /**
   * The observer's proof for this call's answers (CurrencyProof.forRead: none for another
   * network or a pinned read): a call depends on what its function reaches.
   */
  #proofFor(call: PreparedCall): ProofView | undefined {
    return this.#proof?.forRead(call.ref.network, call.tip !== undefined, call.ref.id, call.functionName);
  }

  /** The cache key a request maps to (admin invalidation of one entry). */
  keyOf(req: ReadOnlyRequest): string {
    return prepare(req).key;
  }

  async #lookup(call: PreparedCall, req: ReadOnlyRequest, rc?: RequestContext): Promise<ReadOnlyLookup> {
    const cc = req.cacheControl ?? {};
    const ttlMs = cc.ttl === undefined || cc.ttl === 0 ? undefined : Math.ceil(cc.ttl * 1000);
    const skip = cc.skipCache === true;
    const policy: CachePolicy = { ttlMs, bust: cc.bustCache === true, skip, ...this.#chainPolicy(call, cc) };
    const result = await this.cache.get(call.key, (lc) => this.#load(call, lc, rc), policy);
    const { value, outcome, entry, stored, stale, staleSince, verdict } = result;
    // An answer from a stored entry tells the tip the judge found it current at (a proven
    // entry: the tip now, on every answer of it); a load, the height it was read at.
    const tipHeight =
      entry !== undefined
        ? tipOf(entry, verdict)
        : (result.meta?.tipHeight ?? this.#heightNow(call) ?? undefined);
    // A fresh hit may be replayed for an identical request while the cache would still serve
    // its entry under this very policy (block bound and proof included); stale answers never
    // are. Under a proof, each replay tells the tip of its own verdict.
    const reuse =
      outcome === 'hit' && entry !== undefined && stale === undefined && replayable(req)
        ? hitReuse(this.cache, call.key, entry, policy, policy.proof === undefined ? undefined : verdict)
        : undefined;
    return {
      value,
      outcome,
      entry,
      stored: stored === true,
      ttlMs,
      stale,
      staleSince,
      tipHeight,
      reuse,
      ...(result.meta?.votes === undefined ? {} : { meta: result.meta }),
    };
  }

  /**
   * The chain-aware part of a request's cache policy: its block bound (cacheControl.maxBlocks,
   * else CACHE_MAX_BLOCKS; none for a pinned read, whose result never changes), its stale
   * windows (capped to CACHE_STALE_MAX_S), the retention of stale entries, and the observer's
   * proof with the chain's view the judge weighs it against.
   */
  #chainPolicy(call: PreparedCall, cc: NonNullable<ReadOnlyRequest['cacheControl']>): Partial<CachePolicy> {
    for (const field of WINDOW_FIELDS) {
      const v = cc[field];
      if (v !== undefined && (!Number.isSafeInteger(v) || v < 0)) {
        throw new GatewayError('VALIDATION_ERROR', `cacheControl.${field} must be an integer >= 0`, {
          field: `cacheControl.${field}`,
          value: v,
        });
      }
    }
    const f = this.freshness;
    if (f === undefined) return {};
    const own =
      cc.maxBlocks !== undefined || cc.staleWhileRevalidate !== undefined || cc.staleIfError !== undefined;
    const maxBlocks = call.tip === undefined ? (cc.maxBlocks ?? f.maxBlocks) : undefined;
    const proof = this.#proofFor(call);
    // The common request (nothing of its own, no block bound, no proof): the same policy
    // every time, built once, so that the plain hit path allocates nothing more for it.
    if (!own && maxBlocks === undefined && proof === undefined) {
      this.#defaultWindows ??= this.#windows(f, cc);
      return this.#defaultWindows;
    }
    const windows = this.#windows(f, cc);
    if (maxBlocks === undefined && proof === undefined) return windows;
    const network = call.ref.network;
    const chain = f.chain;
    if (maxBlocks === undefined) {
      // A proof without a bound only says which tip the entry is current at: the tip known
      // now, however old, is enough for that, and no hit waits for a /v2/info to learn it.
      return { ...windows, proof, tipView: () => knownTip(chain.known(network)?.height) };
    }
    return {
      ...windows,
      freshness: { maxBlocks },
      tipView: () => chain.view(network),
      ...(proof === undefined ? {} : { proof }),
    };
  }

  /** Stale windows (capped to CACHE_STALE_MAX_S) and retention for a request. */
  #windows(f: FreshnessSettings, cc: NonNullable<ReadOnlyRequest['cacheControl']>): Partial<CachePolicy> {
    return staleWindows(f, cc);
  }

  /** A load: the node's result, with the height it was read at. */
  async #load(call: PreparedCall, lc: LoadContext, rc: RequestContext | undefined): Promise<LoadedValue> {
    const { result, tipHeight, votes } = await this.#fetch(call, lc, rc);
    // A pinned read is read at its block (its height when /v2/info described it); a latest
    // read at the tip the node reported (an attested one: the block it was voted at), else at
    // the tip the gateway knows now.
    const readAt = call.tip === undefined ? (tipHeight ?? this.#heightNow(call)) : this.#heightNow(call);
    const attested = votes === undefined ? {} : { votes };
    if (readAt === undefined)
      return votes === undefined ? { value: result } : { value: result, meta: attested };
    // Only the node's own height can start the observer's proof (CacheEntry.tipReported).
    const reported = call.tip === undefined && tipHeight !== undefined;
    return {
      value: result,
      meta: reported
        ? { tipHeight: readAt, tipReported: true, ...attested }
        : { tipHeight: readAt, ...attested },
    };
  }

  /** The height a result of call is read at without a report of its own. */
  #heightNow(call: PreparedCall): number | undefined {
    const chain = this.freshness?.chain;
    if (chain === undefined) return undefined;
    return call.tip === undefined ? chain.known(call.ref.network)?.height : chain.heightOfBlock(call.tip);
  }

  /**
   * The checks a call passes before it goes upstream, without calling it: local validation,
   * then the function and its arguments against the (cached) ABI. Throws what the read-only
   * endpoint would answer; returns the call's cache key (a watched read is checked once, when
   * it is subscribed to).
   */
  async check(req: ReadOnlyRequest, rc?: RequestContext): Promise<string> {
    let call: PreparedCall;
    try {
      call = this.#prepared.get(req, undefined, undefined);
    } catch (err) {
      throw await this.#withExpectedType(err, req);
    }
    await this.#checkAbi(call, rc);
    return call.key;
  }

  /** The function exists, is callable and takes these arguments, as the (cached) ABI says. */
  async #checkAbi(call: PreparedCall, rc: RequestContext | undefined): Promise<void> {
    const { abi } = await this.abis.get(call.ref, {}, rc);
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
  }

  /** A miss: check the call against the (cached) ABI, then ask the node. */
  async #fetch(
    call: PreparedCall,
    lc: LoadContext,
    rc: RequestContext | undefined,
  ): Promise<{ result: string; tipHeight?: number; votes?: number }> {
    await this.#checkAbi(call, rc);
    const { result, tipHeight, votes } = await this.node.send(
      CALL_READ,
      {
        network: call.ref.network,
        params: { address: call.ref.address, contract: call.ref.contractName, function: call.functionName },
        query: { tip: call.tip },
        body: JSON.stringify({ sender: call.sender, arguments: call.argsHex }),
        latest: call.tip === undefined,
        read: 'result',
        // A stale answer is at hand (stale-if-error): one attempt, no retries, no queueing for a token.
        ...(lc.staleAtHand ? { maxAttempts: 1, budgetWaitMs: 0 } : {}),
      },
      rc,
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
      );
    }
    return {
      result,
      ...(tipHeight === undefined ? {} : { tipHeight }),
      ...(votes === undefined ? {} : { votes }),
    };
  }
}

/** A view of the chain that only knows a tip height (no block bound to place in time). */
function knownTip(height: number | undefined): TipView {
  return { height, firstLearnedAt: unknownMoment };
}

function unknownMoment(): undefined {
  return undefined;
}
