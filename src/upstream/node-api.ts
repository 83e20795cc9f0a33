/**
 * What the gateway needs from a Stacks node: one method, `send(descriptor, call)`, for every
 * request it makes of a node, a client's node route and the gateway's own reads alike (the
 * read-only call, an ABI, /v2/info). The route's path, query and method come from its
 * descriptor in the endpoint table (endpoints.ts), never from the caller. The undici client in
 * stacks-node.ts implements it; keeping the services on this narrow interface keeps routes and
 * caching rules free of transport details (and lets tests stand a plain object in for the node).
 *
 * Every successful answer carries, besides its value, which upstream gave it and the chain
 * tip height that upstream reported (X-Canonical-Stacks-Tip-Height), when it did. That is
 * what tip knowledge per network and per-upstream lag are built from. A checked answer keeps
 * its value under a named field (`result`, `abi`, `info`) rather than a generic `value`, so
 * call sites read as what they hold.
 */
import type { Network } from '../network.js';
import type { NodeEndpoint, Reading } from './endpoints.js';
import type { OutgoingBody } from './transport.js';

/** Where an answer came from. */
export interface AnswerMeta {
  /** The id of the upstream that answered (never a URL with credentials). */
  readonly upstream: string;
  /** The upstream's chain tip height when it answered, if it said. */
  readonly tipHeight?: number;
  /**
   * Under attested answers (docs/consensus.md): how many upstreams gave these very bytes at the
   * pinned block (tipHeight is then that block's height). Absent: one upstream's word.
   */
  readonly votes?: number;
}

export type NodeAnswer<T extends object> = T & AnswerMeta;

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

/** The node's ABI document; only its shape is checked, the rest passes through. */
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

/** One request of a node route (endpoints.ts), as the caller describes it. */
export interface NodeCall extends CallOptions {
  readonly network: Network;
  /** The descriptor's path parameters, as routed (the client encodes them into the path). */
  readonly params?: Readonly<Record<string, string>> | undefined;
  /** Values of the descriptor's query parameters, already checked (queryOf orders them). */
  readonly query?: Readonly<Record<string, string | undefined>> | undefined;
  /** The body: JSON text, or bytes or text with their content type (passed through). */
  readonly body?: OutgoingBody | undefined;
  /**
   * A read at the current tip (lagging upstreams skipped; the default); false for pinned and
   * timeless reads, which a lagging upstream may serve.
   */
  readonly latest?: boolean | undefined;
  /**
   * One attempt on one upstream, never resent (a broadcast); only a refused connection, which
   * sent nothing, fails over to the next upstream.
   */
  readonly once?: boolean | undefined;
  /**
   * Read the answer for the gateway itself, checked as the descriptor's `reads` says (it must
   * name the same reading); absent = the node's answer as it gave it, for a client.
   */
  readonly read?: Reading | undefined;
}

/** What each reading takes out of the node's answer. */
export interface Readings {
  /** A read-only call's serialized Clarity value, 0x hex. */
  readonly result: { readonly result: string };
  readonly abi: { readonly abi: UpstreamContractInterface };
  readonly info: { readonly info: UpstreamNodeInfo };
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

/** What send answers for a call: the checked value of its reading, else the node's answer. */
export type AnswerOf<C extends NodeCall> = C extends { readonly read: infer R extends Reading }
  ? Readings[R]
  : ForwardedAnswer;

export interface NodeApi {
  /**
   * One request of a node route: its descriptor gives the method, path and query; `call` the
   * network, parameters, body and how attempts may be spent. Transient failures are retried
   * and failed over; what every attempt failed with is raised as the gateway's own error.
   */
  send<C extends NodeCall>(
    endpoint: NodeEndpoint,
    call: C,
    ctx?: RequestContext,
  ): Promise<NodeAnswer<AnswerOf<C>>>;
  /**
   * GET /v2/info of up to `most` distinct upstreams of network at once (one attempt each, one
   * budget token each): the first tip a process believes is their median. The answers that came.
   */
  infoRound?(network: Network, most: number): Promise<UpstreamNodeInfo[]>;
}
