/**
 * Watched reads (docs/watch.md) as values: what a subscription watches, the blocks it is
 * evaluated at, each read's outcome, and the events a stream is sent. src/http/sse.ts alone
 * turns events into Server-Sent Events text.
 */
import type { GatewayError } from '../../errors.js';
import type { Network } from '../../network.js';
import type { ReadOnlyRequest } from '../read-only.js';

/** One read of a subscription: the read-only call, at the latest state, with its cache key. */
export interface WatchedRead {
  /** The call as validated (no tip, no cacheControl). */
  readonly request: ReadOnlyRequest;
  /** Its latest-state cache key: identical calls, identical keys (one evaluation for all). */
  readonly key: string;
  /** `addr.name`. */
  readonly contractId: string;
  readonly functionName: string;
}

/** A block a read is evaluated at. */
export interface WatchBlock {
  readonly height: number;
  /** 64 lowercase hex digits. */
  readonly indexBlockHash: string;
  /** Known only for blocks from the event observer. */
  readonly parentIndexBlockHash?: string | undefined;
  /** When the gateway learned of it (epoch ms): the start of the delivery-time histogram. */
  readonly receivedAt: number;
}

/** A read's answer at a block: the node's result, or the error the read-only endpoint gives. */
export type ReadOutcome =
  | { readonly kind: 'value'; readonly raw: string; readonly value: unknown; readonly same: string }
  | { readonly kind: 'error'; readonly error: GatewayError; readonly same: string };

/** An evaluation that says nothing of the answer (a transient upstream failure): sent nothing. */
export const NO_ANSWER = 'no-answer';
/** The node does not know the block (pruned, or a fork it never saw). */
export const UNKNOWN_BLOCK = 'unknown-block';
export type Evaluation = ReadOutcome | typeof NO_ANSWER | typeof UNKNOWN_BLOCK;

/** One `values` event: the reads whose answer changed at a block (all of them on connecting). */
export interface ValuesEvent {
  readonly block: WatchBlock;
  readonly values: readonly { readonly index: number; readonly outcome: ReadOutcome }[];
}

export type ResetReason = 'unknown' | 'not-canonical';
/** Why a stream ends with an `error` event. */
export type StreamEndCode = 'NOT_FOUND' | 'SLOW_CONSUMER';

/** Where a stream's events go (src/http/sse.ts writes them). */
export interface StreamSink {
  values(event: ValuesEvent): void;
  reset(reason: ResetReason): void;
  /** A last `error` event, then the stream is closed. */
  end(code: StreamEndCode): void;
  /** Ends the stream with no event (shutdown): its client reconnects with Last-Event-ID. */
  close(): void;
}

/** A subscription as stored (memory, or Redis for a fleet). */
export interface StoredSubscription {
  readonly id: string;
  /** `key:<name>` or `client:<address>`: who may delete it and whose stream limit it counts against. */
  readonly owner: string;
  /** Whether the owner is an API key (its stream limit is the per-key one). */
  readonly keyed: boolean;
  readonly network: Network;
  readonly reads: readonly ReadOnlyRequest[];
}
