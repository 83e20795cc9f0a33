/**
 * What the gateway needs from a Stacks node. The undici client in stacks-node.ts implements
 * it; keeping the service on this narrow interface keeps routes and caching rules free of
 * transport details (and lets tests stand a plain object in for the node).
 *
 * Every successful answer carries, besides its value, which upstream gave it and the chain
 * tip height that upstream reported (X-Canonical-Stacks-Tip-Height), when it did. That is
 * what tip knowledge per network and per-upstream lag are built from. The answer
 * keeps its value under a named field (`result`, `abi`, `info`) rather than a generic
 * `value`, so call sites read as what they hold.
 */
import type { Network } from '../network.js';
import type { OutgoingBody } from './transport.js';

/** Where an answer came from. */
export interface AnswerMeta {
  /** The id of the upstream that answered (never a URL with credentials). */
  readonly upstream: string;
  /** The upstream's chain tip height when it answered, if it said. */
  readonly tipHeight?: number;
}

export type NodeAnswer<T extends object> = T & AnswerMeta;

export interface ReadOnlyRequestBody {
  /** Principal used as tx-sender. */
  readonly sender: string;
  /** Serialized Clarity values, 0x hex. */
  readonly arguments: string[];
}

/**
 * Who a call is made for, passed down from the HTTP layer as an optional last argument: the
 * client's identity orders waiters for a budget token fairly (round-robin across clients, a
 * cap on each client's waiters: docs/upstreams.md), the request id ties upstream log
 * lines to the request's. Absent = an anonymous client (background work, tests).
 */
export interface RequestContext {
  /** The client's address, or the first X-Forwarded-For hop when TRUST_PROXY=true. */
  readonly clientId?: string | undefined;
  readonly requestId?: string | undefined;
  /**
   * Filled in by the upstream attempts made for this request, for its access log line. A
   * request that joined another's call (coalesced) or was answered from the cache leaves it
   * untouched: it spent no upstream time of its own.
   */
  readonly usage?: UpstreamUsage | undefined;
  /** Aborted when the client went away: a request still waiting for a budget token gives up. */
  readonly signal?: AbortSignal | undefined;
  /**
   * Asked before every upstream attempt made for this request (retries and hedges included):
   * throws when the asking API key's upstream quota is spent (docs/access-control.md).
   */
  readonly admitUpstream?: (() => void | Promise<void>) | undefined;
  /** The asking API key's name, for logs and metrics (never the key). */
  readonly keyName?: string | undefined;
}

/** What one request spent upstream: a mutable record the attempt loop adds to. */
export interface UpstreamUsage {
  /** HTTP exchanges made (retries and hedges included). */
  attempts: number;
  /** Sum of their durations, ms (budget waits and backoff excluded). */
  ms: number;
  /** The id and host (no credentials) of the upstream of the last attempt. */
  upstream?: string;
  host?: string;
}

/** How one call may spend attempts. */
export interface CallOptions {
  /**
   * Most attempts for this call (at most 1 + UPSTREAM_RETRIES): 1 = give up after the first
   * transient failure, for a caller that has a better answer at hand than a retry (a stale
   * entry under stale-if-error, a tip refresh whose failure only sends requests upstream).
   */
  readonly maxAttempts?: number;
  /**
   * Longest wait for an upstream budget token (at most UPSTREAM_QUEUE_TIMEOUT_MS); 0 = only a
   * token available now, else RATE_LIMIT_EXCEEDED at once: stale-if-error answers stale rather
   * than queueing while a stale entry is at hand.
   */
  readonly budgetWaitMs?: number;
  /** Retry only on another upstream, never the same one again (a tip refresh). */
  readonly elsewhereOnly?: boolean;
}

export interface ReadOnlyCallOptions extends CallOptions {
  /** Evaluate at this block (index block hash), not at the upstream's tip. */
  readonly tip?: string;
}

/** A read-only call's answer: the serialized Clarity value, 0x hex. */
export type ReadOnlyAnswer = NodeAnswer<{ readonly result: string }>;

/** The node's ABI document; only `functions` is checked, the rest passes through. */
export interface UpstreamContractInterface {
  functions: unknown[];
  [key: string]: unknown;
}

/** The node's /v2/info answer; only stacks_tip_height is checked. */
export interface UpstreamNodeInfo {
  stacks_tip_height: number;
  stacks_tip?: string;
  stacks_tip_consensus_hash?: string;
  [key: string]: unknown;
}

export type ContractInterfaceAnswer = NodeAnswer<{ readonly abi: UpstreamContractInterface }>;
export type NodeInfoAnswer = NodeAnswer<{ readonly info: UpstreamNodeInfo }>;

/** A node route's request as forwarded (src/upstream/endpoints.ts). */
export interface ForwardRequest extends CallOptions {
  readonly method: 'GET' | 'POST';
  /** Path and query, relative to the upstream's base URL. */
  readonly path: string;
  /** The client's body, passed through with its content type. */
  readonly body?: OutgoingBody | undefined;
  /** A read at the current tip (lagging upstreams skipped); false for pinned and timeless reads. */
  readonly latest: boolean;
  /** One attempt on one upstream, never resent (a broadcast). */
  readonly once?: boolean;
}

/**
 * The node's own answer, as it gave it: any status but a transient one (5xx, 429, which are
 * retried and failed over, then raised as the gateway's own error).
 */
export interface ForwardedAnswer {
  readonly status: number;
  readonly contentType: string;
  readonly body: string;
}

export interface NodeApi {
  /** Any node route's request (the endpoint table); absent in test doubles that do not need it. */
  send?(network: Network, req: ForwardRequest, ctx?: RequestContext): Promise<NodeAnswer<ForwardedAnswer>>;
  /** POST /v2/contracts/call-read/{address}/{contract}/{function}[?tip=] */
  callReadOnly(
    network: Network,
    address: string,
    contractName: string,
    functionName: string,
    body: ReadOnlyRequestBody,
    opts?: ReadOnlyCallOptions,
    ctx?: RequestContext,
  ): Promise<ReadOnlyAnswer>;
  /** GET /v2/contracts/interface/{address}/{contract} */
  getContractInterface(
    network: Network,
    address: string,
    contractName: string,
    ctx?: RequestContext,
  ): Promise<ContractInterfaceAnswer>;
  /** GET /v2/info: the node's view of the chain tip. */
  getInfo(network: Network, opts?: CallOptions, ctx?: RequestContext): Promise<NodeInfoAnswer>;
  /**
   * GET /v2/info of up to `most` distinct upstreams of network at once (one attempt each, one
   * budget token each): the first tip a process believes is their median. The answers that came.
   */
  infoRound?(network: Network, most: number): Promise<UpstreamNodeInfo[]>;
}
