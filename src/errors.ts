/**
 * The error catalogue: every error code the gateway can answer with, and its HTTP status.
 * One table, like Fastify's own error codes, so that nothing chooses a status itself: an error
 * names its code, and, where one code is answered with more than one status, its variant, a
 * case of that code its row maps to a status of its own. src/http/reply.ts reads the status here.
 */

import { randomUUID } from 'node:crypto';
import type { SharedFailure, SharedFailures } from './cache/cross-instance-coalescer.js';
import type { CacheView } from './cache/view.js';
import { redact } from './config/redact.js';

export const ERROR_CATALOGUE = {
  VALIDATION_ERROR: {
    status: 400,
    /**
     * Refusals of the HTTP exchange itself (Node's parser, Fastify's router and body parsing,
     * the static files of /docs), answered with the status whose name they carry (RFC 9110).
     */
    variants: {
      forbidden: 403,
      'not-found': 404,
      'request-timeout': 408,
      'precondition-failed': 412,
      'content-too-large': 413,
      'uri-too-long': 414,
      'unsupported-media-type': 415,
      'range-not-satisfiable': 416,
      'request-header-fields-too-large': 431,
    },
    description:
      'malformed JSON, missing or mistyped fields, unsupported Clarity type, value out of range, bad network, bad ttl, malformed HTTP (408 request too slow, 413 body over the limit, 414 URL too long, 415 unsupported Content-Type, 431 headers too large)',
  },
  INVALID_HEX_STRING: { status: 400, description: 'not 0x followed by an even number of hex digits' },
  DESERIALIZATION_ERROR: {
    status: 400,
    description:
      'valid hex that is not exactly one Clarity value (unknown type byte, truncation, overrunning lengths, trailing bytes, nesting deeper than 32)',
  },
  INVALID_CONTRACT_ADDRESS: {
    status: 400,
    description: 'bad c32 address or checksum, or a contract name that is not a Clarity contract name',
  },
  INVALID_FUNCTION: { status: 400, description: 'function absent from the ABI, or private' },
  INVALID_ARGUMENTS: { status: 400, description: 'argument count or an argument type differs from the ABI' },
  UNAUTHORIZED: { status: 401, description: 'admin route without a valid bearer token' },
  CONTRACT_ERROR: {
    status: 422,
    description: 'the function returned (err ...); details.value is the decoded error value',
  },
  UPSTREAM_API_ERROR: {
    status: 502,
    /** The node answered, definitely: no such contract, no such block, or it refused the call. */
    variants: { 'unknown-contract': 404, 'unknown-block': 404, 'node-refused': 422 },
    description: 'the upstream node failed: 404 unknown contract, 422 okay:false, 502 otherwise',
  },
  UPSTREAM_DISPUTE: {
    status: 502,
    description:
      'attested answers: fewer than k upstreams agreed at the pinned block (details: reason, k, n, block, participants with status and sha256)',
  },
  TIMEOUT: { status: 504, description: 'the last upstream attempt timed out' },
  RATE_LIMIT_EXCEEDED: {
    status: 429,
    description: 'no upstream budget token in time, or upstream still 429 after retries',
  },
  NOT_FOUND: { status: 404, description: 'unknown route' },
  METHOD_NOT_ALLOWED: {
    status: 405,
    description: 'the path exists but not with this method; the Allow header lists the methods',
  },
  SERVICE_UNAVAILABLE: {
    status: 503,
    description: 'shutting down, or the persistent store an answer needs (known contracts) is unreachable',
  },
  INTERNAL_ERROR: { status: 500, description: 'a bug; never for bad input' },
} as const satisfies Record<
  string,
  { status: number; variants?: Record<string, number>; description: string }
>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

/** The variants of a code (a union over codes for ErrorCode itself); never for a code without. */
export type ErrorVariant<C extends ErrorCode = ErrorCode> = C extends ErrorCode
  ? (typeof ERROR_CATALOGUE)[C] extends { readonly variants: infer V }
    ? keyof V & string
    : never
  : never;

type Row = { readonly status: number; readonly variants?: Readonly<Record<string, number>> };

/** The status of a code, or of one of its variants: its row in the table. */
export function statusOf(code: ErrorCode, variant?: string): number {
  const row: Row = ERROR_CATALOGUE[code];
  return (variant === undefined ? undefined : row.variants?.[variant]) ?? row.status;
}

/** The variant of `code` answered with `status`, when the table has one (the first in its row). */
export function variantWithStatus<C extends ErrorCode>(code: C, status: number): ErrorVariant<C> | undefined {
  const row: Row = ERROR_CATALOGUE[code];
  for (const [variant, s] of Object.entries(row.variants ?? {}))
    if (s === status) return variant as ErrorVariant<C>;
  return undefined;
}

export type ErrorDetails = Record<string, unknown>;

/** What the cache did for an answer (an error answered from a cache included), as values. */
export interface AnswerOrigin {
  readonly cache?: CacheView | undefined;
  readonly tipHeight?: number | undefined;
}

export interface GatewayErrorOptions<C extends ErrorCode = ErrorCode> {
  /** The case of the code the table maps to a status of its own (e.g. UPSTREAM_API_ERROR's unknown-contract). */
  variant?: ErrorVariant<C> | undefined;
  /** When the client may try again, in whole seconds (src/http sends it as Retry-After). */
  retryAfter?: number | undefined;
  /** Extra response headers an HTTP-level refusal names (Allow, WWW-Authenticate); src/http only. */
  headers?: Record<string, string>;
  cause?: unknown;
  upstreamText?: string;
  origin?: AnswerOrigin;
  nodeAnswer?: NodeShapedAnswer | undefined;
  /**
   * How many upstreams gave this very answer in an attested vote (docs/consensus.md): a node's
   * definite refusal kept as a remembered 404 records it, as an answer's entry does.
   */
  votes?: number | undefined;
}

/** A node's own answer as it gave it: status, content type and body (secrets already out). */
export interface NodeShapedAnswer {
  readonly status: number;
  readonly contentType: string;
  readonly body: string;
}

/**
 * An error the gateway answers with, as values: its code (and variant), what it says, and when
 * it may be retried. Its status is the table's for them; src/http renders status and headers.
 */
export class GatewayError<C extends ErrorCode = ErrorCode> extends Error {
  readonly code: C;
  readonly variant: ErrorVariant<C> | undefined;
  readonly details: ErrorDetails | undefined;
  /** When the client may try again, in whole seconds (RATE_LIMIT_EXCEEDED). */
  readonly retryAfter: number | undefined;
  /** Extra response headers an HTTP-level refusal names (Allow on a 405, the admin API's challenge). */
  readonly headers: Record<string, string> | undefined;
  /**
   * Where the error came from when a cache answered it (a cached (err …), a remembered 404):
   * what the cache did and the tip it was read at, as values; src/http turns them into
   * Cache-Status, Age and X-Canonical-Stacks-Tip-Height.
   */
  readonly origin: AnswerOrigin | undefined;
  /**
   * An upstream's own text about the failure: never sent to a client, logged at debug only.
   * Kept redacted (docs/access-control.md): whatever logs the error, its own line or any line
   * that serializes it whole (`{ err }`), never shows a credential the upstream wrote.
   */
  readonly upstreamText: string | undefined;
  /**
   * The node's own answer this error stands for (its "no such contract" 404), which a
   * node-compatible route passes through as the node gave it instead of the envelope; the
   * envelope routes never show it. Kept only within one instance (never shared).
   */
  readonly nodeAnswer: NodeShapedAnswer | undefined;
  /** The upstreams that gave this answer in an attested vote (GatewayErrorOptions.votes). */
  readonly votes: number | undefined;

  constructor(code: C, message: string, details?: ErrorDetails, options: GatewayErrorOptions<C> = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'GatewayError';
    this.code = code;
    this.variant = options.variant;
    this.details = details;
    this.retryAfter = options.retryAfter;
    this.headers = options.headers;
    this.origin = options.origin;
    this.upstreamText = options.upstreamText === undefined ? undefined : redact(options.upstreamText);
    this.nodeAnswer = options.nodeAnswer;
    this.votes = options.votes;
  }

  /** The HTTP status the table gives this error's code and variant. */
  get status(): number {
    return statusOf(this.code, this.variant);
  }

  /**
   * The same error (code, variant, retry time, extra headers, upstream text) in other words:
   * a message that names more, other details, where a cache answered it. A memoized error is
   * shared, so it is never changed in place.
   */
  rephrased(
    message: string,
    details: ErrorDetails | undefined,
    changes: { cause?: unknown; origin?: AnswerOrigin; votes?: number } = {},
  ): GatewayError<C> {
    const cause = 'cause' in changes ? changes.cause : this.cause;
    const origin = 'origin' in changes ? changes.origin : this.origin;
    return new GatewayError<C>(this.code, message, details, {
      variant: this.variant,
      retryAfter: this.retryAfter,
      ...(this.headers === undefined ? {} : { headers: this.headers }),
      ...(cause === undefined ? {} : { cause }),
      ...(origin === undefined ? {} : { origin }),
      // Redacted already; redacting again changes nothing.
      ...(this.upstreamText === undefined ? {} : { upstreamText: this.upstreamText }),
      ...(this.nodeAnswer === undefined ? {} : { nodeAnswer: this.nodeAnswer }),
      ...((changes.votes ?? this.votes) === undefined ? {} : { votes: changes.votes ?? this.votes }),
    });
  }
}

export function isGatewayError(err: unknown): err is GatewayError {
  return err instanceof GatewayError;
}

/** A fresh id for one error instance; logged beside the error so a client report can be traced. */
export function newErrorId(): string {
  return `err_${randomUUID()}`;
}

/**
 * The gateway's failures as they cross instances through the Redis coalescer: every
 * GatewayError but a shutdown (which is this instance's alone: the waiters elsewhere take over
 * the load) is shared, and raised again from the error table's own codes and variants only.
 */
export const SHARED_GATEWAY_FAILURES: SharedFailures = {
  share(err: unknown): SharedFailure | undefined {
    if (!(err instanceof GatewayError) || err.code === 'SERVICE_UNAVAILABLE') return undefined;
    return {
      code: err.code,
      message: err.message,
      ...(err.details === undefined ? {} : { details: err.details }),
      ...(err.variant === undefined ? {} : { variant: err.variant }),
      ...(err.retryAfter === undefined ? {} : { retryAfter: err.retryAfter }),
    };
  },
  revive(f: SharedFailure): Error | undefined {
    if (!Object.hasOwn(ERROR_CATALOGUE, f.code)) return undefined;
    const code = f.code as ErrorCode;
    const row: Row = ERROR_CATALOGUE[code];
    if (f.variant !== undefined && !Object.hasOwn(row.variants ?? {}, f.variant)) return undefined;
    // A failure in an earlier version's form carried its status and headers instead: the waiter
    // loads for itself rather than answer without what that form said.
    if ('status' in f || 'headers' in f) return undefined;
    return new GatewayError(code, f.message, f.details, {
      variant: f.variant as ErrorVariant | undefined,
      retryAfter: typeof f.retryAfter === 'number' ? f.retryAfter : undefined,
    });
  },
};
