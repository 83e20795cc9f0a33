/**
 * The generic cached read behind every node route of the endpoint table that has no service of
 * its own (docs/node-routes.md): check the request as its descriptor says, form its key, judge a
 * stored answer by the descriptor's cache class, and otherwise forward it (one budget token,
 * coalesced with identical requests, failed over like every read). The answer is the node's
 * own status, content type and body bytes, with what the cache did; src/http turns it into a
 * reply.
 *
 * Only the node's 2xx answers are stored as answers: any other passes through to every request
 * that joined its load. A 404 of a contract's route (an unknown contract, data var, map) is
 * also remembered apart, for CACHE_NEGATIVE_TTL_S, as ABI lookups' are: a contract never loses
 * a variable, so only its deploy can end it, and a deploy the observer sees forgets it at once.
 */
import { type ProofView, tipOf } from '../cache/judge.js';
import { nodeKey, unknownNodeKey, unknownNodePrefix } from '../cache/keys.js';
import type { CachePolicy, CacheResult, ReadThroughCache } from '../cache/read-through.js';
import type { CacheView } from '../cache/view.js';
import { parseTipQuery } from '../chain/block-id.js';
import type { ChainTracker } from '../chain/tracker.js';
import { isValidClarityName, isValidContractName } from '../clarity/index.js';
import { networkOfAddress, parseContractAddress, principalProblem } from '../clarity/principal.js';
import { GatewayError } from '../errors.js';
import type { Network } from '../network.js';
import { type NodeEndpoint, type ParamKind, queryOf } from '../upstream/endpoints.js';
import type { ForwardedAnswer, NodeApi, RequestContext } from '../upstream/node-api.js';
import { truncate } from './contract-ref.js';
import type { CurrencyProof } from './currency-proof.js';
import { type StaleDefaults, staleWindows } from './stale-windows.js';

export interface NodeRouteRequest {
  readonly endpoint: NodeEndpoint;
  /** Path parameters as routed (already URL-decoded). */
  readonly params: Readonly<Record<string, string>>;
  /** The query parameters the descriptor names (others are neither forwarded nor keyed). */
  readonly query: Readonly<Record<string, string | undefined>>;
  /** The body as received, with its content type. */
  readonly body?: { readonly data: string | Uint8Array; readonly contentType: string } | undefined;
  /** Fixed by a /mainnet or /testnet prefix. */
  readonly network?: Network | undefined;
}

/** The node's answer and what the cache did; `cache` is absent for routes that are never cached. */
export interface NodeRouteAnswer extends ForwardedAnswer {
  readonly cache?: CacheView | undefined;
  /**
   * The chain tip the answer is current at (latest-state routes): the judge's verdict for a
   * stored answer (the tip the observer's proof carried it to, else the one it was read at).
   */
  readonly tipHeight?: number | undefined;
}

export interface NodeRouteSettings extends StaleDefaults {
  readonly chain: ChainTracker;
  /** NODE_MAX_BLOCKS. */
  readonly maxBlocks: number;
  /** NODE_DEFAULT_NETWORK. */
  readonly defaultNetwork: Network;
  /** CHAIN_TIP_MAX_AGE_MS: how long the node's own view of the chain is served. */
  readonly timedMs: number;
  /** CACHE_NEGATIVE_TTL_S in ms: how long a contract route's 404 is remembered (0: not at all). */
  readonly negativeTtlMs?: number | undefined;
}

/** A node answer that is not stored (not 2xx): it passes through every request of its load. */
class PassThrough extends Error {
  constructor(
    readonly answer: ForwardedAnswer & { readonly tipHeight?: number | undefined },
    readonly cache: CacheView = { outcome: 'miss', stored: false, ttlMs: undefined },
  ) {
    super('not stored');
  }
}

const TXID = /^(?:0x)?[0-9a-fA-F]{64}$/;

export class NodeRouteService {
  /** Never-cached reads in flight, by key: identical ones share one upstream request. */
  readonly #inflight = new Map<string, Promise<NodeRouteAnswer>>();
  /** Told of every stored answer found damaged (metrics). */
  onCorrupt: (() => void) | undefined;
  #proof: CurrencyProof | undefined;

  /** Keep answers current across blocks that provably did not touch them (the event observer). */
  useProof(proof: CurrencyProof | undefined): void {
    this.#proof = proof;
  }

  /** A contract was deployed: every 404 remembered for it goes. */
  forgetUnknown(network: Network, contractId: string): Promise<number> {
    return this.cache.invalidatePrefix(unknownNodePrefix(network, contractId));
  }

  constructor(
    private readonly cache: ReadThroughCache,
    private readonly node: Pick<NodeApi, 'send'>,
    private readonly settings: NodeRouteSettings,
  ) {}

  async answer(req: NodeRouteRequest, rc?: RequestContext, refetch = false): Promise<NodeRouteAnswer> {
    const { endpoint } = req;
    const network = this.#networkOf(req);
    const params = Object.keys(endpoint.params).map((name) => req.params[name] ?? '');
    const checked = checkedQuery(req);
    const query = queryOf(endpoint, checked);
    const pinned = checked['tip'] !== undefined;
    const forward = (opts: { maxAttempts?: number; budgetWaitMs?: number } = {}) =>
      this.node.send(
        endpoint,
        {
          network,
          params: req.params,
          query: checked,
          body: req.body,
          // Timeless and pinned answers may come from a lagging upstream; current state may not.
          latest: !pinned && (endpoint.cache === 'latest' || endpoint.cache === 'account'),
          ...(endpoint.cache === 'broadcast' ? { once: true } : {}),
          ...opts,
        },
        rc,
      );

    if (endpoint.cache === 'broadcast') return forward();
    const key = nodeKey(network, endpoint.name, params, query, req.body?.data);
    if (endpoint.cache === 'never') return this.#shared(key, forward);

    // A refetch after a damaged entry reads no entry at all: the store may not have let it go.
    const contractId = `${req.params['address'] ?? ''}.${req.params['contract'] ?? ''}`;
    const proof = this.#proofOf(endpoint, network, pinned, contractId, req.params['function']);
    const base = this.#policy(endpoint, network, pinned, proof);
    const policy = refetch ? { ...base, bust: true } : base;
    const negative = this.#negative(endpoint, network, pinned, contractId, key);
    const load = async (lc: { staleAtHand: boolean }) => {
      const known = negative === undefined ? undefined : await this.cache.fresh(negative.key);
      const remembered = known === undefined ? undefined : decodeStored(known.value);
      if (remembered !== undefined) {
        throw new PassThrough(remembered, { outcome: 'hit', entry: known, stored: false, ttlMs: undefined });
      }
      const answer = await forward(lc.staleAtHand ? { maxAttempts: 1, budgetWaitMs: 0 } : {});
      // The height the node reported starts the observer's proof; the gateway's own tip
      // knowledge, used when it reported none, never does (CacheEntry.tipReported).
      const tipHeight = answer.tipHeight ?? this.settings.chain.known(network)?.height;
      // An attested answer records how many upstreams gave it (docs/consensus.md).
      const attested = answer.votes === undefined ? undefined : { votes: answer.votes };
      if (answer.status < 200 || answer.status >= 300) {
        if (answer.status !== 404 || negative === undefined) {
          throw new PassThrough(
            { ...answer, tipHeight },
            { outcome: 'miss', stored: false, ttlMs: undefined, meta: attested },
          );
        }
        const stored = await this.cache.put(negative.key, encodeStored(answer), negative.ttlMs, attested);
        throw new PassThrough(
          { ...answer, tipHeight },
          { outcome: 'miss', stored, ttlMs: negative.ttlMs, meta: attested },
        );
      }
      const value = encodeStored(answer);
      if (tipHeight === undefined) return attested === undefined ? { value } : { value, meta: attested };
      return {
        value,
        meta: { tipHeight, ...(answer.tipHeight === undefined ? {} : { tipReported: true }), ...attested },
      };
    };
    let result: CacheResult;
    try {
      result = await this.cache.get(key, load, policy);
    } catch (err) {
      if (!(err instanceof PassThrough)) throw err;
      return { ...err.answer, cache: err.cache };
    }
    const stored = decodeStored(result.value);
    if (stored === undefined) {
      if (refetch || result.entry === undefined) {
        throw new GatewayError('INTERNAL_ERROR', 'a node answer could not be kept', { route: endpoint.name });
      }
      // A damaged entry (a foreign or truncated value) is a miss: removed, counted, asked again.
      this.onCorrupt?.();
      await this.cache.invalidate(key).catch(() => undefined);
      return this.answer(req, rc, true);
    }
    const tipHeight =
      result.entry === undefined
        ? (result.meta?.tipHeight ?? undefined)
        : tipOf(result.entry, result.verdict);
    return {
      ...stored,
      cache: {
        outcome: result.outcome,
        entry: result.entry,
        stored: result.stored === true,
        ttlMs: policy.ttlMs,
        stale: result.stale,
        staleSince: result.staleSince,
        meta: result.meta,
      },
      ...(tipHeight === undefined || endpoint.cache === 'immutable' ? {} : { tipHeight }),
    };
  }

  /**
   * Where and how long a 404 of this request is remembered: only for a contract's routes, at
   * the latest state (a pinned read's 404 is an unknown block, never kept), and only when
   * CACHE_NEGATIVE_TTL_S allows.
   */
  #negative(
    endpoint: NodeEndpoint,
    network: Network,
    pinned: boolean,
    contractId: string,
    key: string,
  ): { key: string; ttlMs: number } | undefined {
    const ttlMs = this.settings.negativeTtlMs ?? 0;
    if (
      ttlMs <= 0 ||
      pinned ||
      endpoint.params['address'] !== 'address' ||
      endpoint.params['contract'] !== 'contract'
    )
      return undefined;
    return { key: unknownNodeKey(network, contractId, key), ttlMs };
  }

  /**
   * The observer's proof for a latest-state answer of this route (CurrencyProof.forRead: none
   * for another network or a pinned read): a route proven by its contract depends on that
   * contract, one proven by its function on what the function reaches.
   */
  #proofOf(
    endpoint: NodeEndpoint,
    network: Network,
    pinned: boolean,
    contractId: string,
    functionName: string | undefined,
  ): ProofView | undefined {
    if (endpoint.provenBy === undefined) return undefined;
    const fn = endpoint.provenBy === 'function' ? (functionName ?? '') : undefined;
    return this.#proof?.forRead(network, pinned, contractId, fn);
  }

  /** One upstream request for identical never-cached reads in flight at once. */
  #shared(key: string, forward: () => Promise<ForwardedAnswer>): Promise<NodeRouteAnswer> {
    const running = this.#inflight.get(key);
    if (running !== undefined) return running;
    const started = forward().finally(() => this.#inflight.delete(key));
    this.#inflight.set(key, started);
    return started;
  }

  /** How long an answer of this route serves (its cache class), and its stale windows. */
  #policy(
    endpoint: NodeEndpoint,
    network: Network,
    pinned: boolean,
    proof: ProofView | undefined,
  ): CachePolicy {
    const s = this.settings;
    const windows = staleWindows(s);
    // A read pinned to a block never changes: kept until removed, whatever its class.
    if (endpoint.cache === 'immutable' || pinned) return windows;
    if (endpoint.cache === 'timed') return { ...windows, ttlMs: s.timedMs };
    const maxBlocks = endpoint.cache === 'account' ? 0 : s.maxBlocks;
    return {
      ...windows,
      freshness: { maxBlocks },
      tipView: () => s.chain.view(network),
      ...(proof === undefined ? {} : { proof }),
    };
  }

  /** The network: the prefix's, else the descriptor's source; a contradiction is refused. */
  #networkOf(req: NodeRouteRequest): Network {
    const { endpoint } = req;
    let own: Network | undefined;
    for (const [name, kind] of Object.entries(endpoint.params)) {
      const found = checkParam(name, kind, req.params[name] ?? '');
      if (own === undefined && found !== undefined && endpoint.network !== 'default') own = found;
    }
    if (endpoint.network === 'transaction') own = transactionNetwork(req.body);
    if (req.network !== undefined && own !== undefined && own !== req.network) {
      throw new GatewayError(
        'VALIDATION_ERROR',
        `the request is for ${own}, but the path prefix says ${req.network}`,
        { network: req.network, inferred: own },
      );
    }
    return req.network ?? own ?? this.settings.defaultNetwork;
  }
}

/** Checks one path parameter; the network it names, when it names one. */
function checkParam(name: string, kind: ParamKind, value: string): Network | undefined {
  const refuse = (what: string): never => {
    throw new GatewayError('VALIDATION_ERROR', `${name} "${truncate(value)}" is not ${what}`, {
      field: name,
      value: truncate(value),
    });
  };
  switch (kind) {
    case 'address':
      return parseContractAddress(value).network;
    case 'contract':
      if (!isValidContractName(value)) refuse('a valid Clarity contract name');
      return undefined;
    case 'name':
      if (!isValidClarityName(value)) refuse('a valid Clarity name');
      return undefined;
    case 'principal': {
      const problem = principalProblem(value);
      if (problem !== undefined) refuse(`a Stacks principal (${problem})`);
      return networkOfAddress(value.split('.')[0]!);
    }
    case 'txid':
      if (!TXID.test(value)) refuse('a transaction id (64 hex digits)');
      return undefined;
  }
}

/**
 * A transaction's network from its version byte (0x00 mainnet, 0x80 testnet): its first byte,
 * sent as bytes (application/octet-stream) or as hex in `{"tx": "…"}` (what stacks.js sends).
 */
function transactionNetwork(body: NodeRouteRequest['body']): Network {
  let first: number | undefined;
  if (body !== undefined) {
    if (typeof body.data !== 'string') first = body.data[0];
    else {
      let hex: unknown;
      try {
        hex = (JSON.parse(body.data) as { tx?: unknown } | null)?.tx;
      } catch {
        hex = undefined;
      }
      if (typeof hex === 'string' && /^(?:0x)?[0-9a-fA-F]{2}/.test(hex)) {
        first = Number.parseInt(hex.replace(/^0x/, '').slice(0, 2), 16);
      }
    }
  }
  if (first === 0x00) return 'mainnet';
  if (first === 0x80) return 'testnet';
  throw new GatewayError(
    'VALIDATION_ERROR',
    'the body is not a Stacks transaction: send its bytes as application/octet-stream, or {"tx":"<hex>"} as application/json',
    { field: 'body' },
  );
}

/** The query parameters the node takes, checked (tip strictly); queryOf orders them. */
function checkedQuery(req: NodeRouteRequest): Record<string, string | undefined> {
  const checked: Record<string, string | undefined> = {};
  for (const name of req.endpoint.query) {
    const raw = req.query[name];
    if (name === 'tip') checked[name] = parseTipQuery(raw);
    else if (raw !== undefined && raw !== '') {
      if (raw !== '0' && raw !== '1') {
        throw new GatewayError('VALIDATION_ERROR', 'proof must be 0 or 1', {
          field: 'proof',
          value: truncate(raw),
        });
      }
      checked[name] = raw;
    }
  }
  return checked;
}

/** A stored answer, or undefined when the value is not one this service wrote. */
function decodeStored(value: string): ForwardedAnswer | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed) || parsed.length !== 3) return undefined;
  const [status, contentType, body] = parsed as unknown[];
  if (typeof status !== 'number' || typeof contentType !== 'string' || typeof body !== 'string')
    return undefined;
  return { status, contentType, body };
}

/** A node answer as stored. */
function encodeStored(answer: ForwardedAnswer): string {
  return JSON.stringify([answer.status, answer.contentType, answer.body]);
}
