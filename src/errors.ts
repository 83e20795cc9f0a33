/**
 * The error catalogue: every error code the gateway can answer with, and its HTTP status.
 * One table, like Fastify's own error codes, so that routes never choose statuses themselves.
 */

import { randomUUID } from 'node:crypto';
import type { SharedFailure, SharedFailures } from './cache/cross-instance-coalescer.js';
import type { CacheView } from './cache/view.js';
import { redact } from './config/redact.js';

export const ERROR_CATALOGUE = {
  VALIDATION_ERROR: {
    status: 400,
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
    description: 'the upstream node failed: 404 unknown contract, 422 okay:false, 502 otherwise',
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
} as const satisfies Record<string, { status: number; description: string }>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

/** Codes a client may retry (docs/api.md). */
export const RETRYABLE_CODES: ReadonlySet<ErrorCode> = new Set([
  'UPSTREAM_API_ERROR',
  'TIMEOUT',
  'RATE_LIMIT_EXCEEDED',
]);

export type ErrorDetails = Record<string, unknown>;

/**
 * An error the gateway answers with. `status` defaults to the catalogue's; a few codes
 * carry more than one status (UPSTREAM_API_ERROR 404/422/502, VALIDATION_ERROR 413).
 */
/** What the cache did for an answer (an error answered from a cache included), as values. */
export interface AnswerOrigin {
  readonly cache?: CacheView | undefined;
  readonly tipHeight?: number | undefined;
}

export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: ErrorDetails | undefined;
  /** Extra response headers, e.g. Retry-After on RATE_LIMIT_EXCEEDED. */
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

  constructor(
    code: ErrorCode,
    message: string,
    details?: ErrorDetails,
    options: {
      status?: number;
      headers?: Record<string, string>;
      cause?: unknown;
      upstreamText?: string;
      origin?: AnswerOrigin;
    } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'GatewayError';
    this.code = code;
    this.status = options.status ?? ERROR_CATALOGUE[code].status;
    this.details = details;
    this.headers = options.headers;
    this.origin = options.origin;
    this.upstreamText = options.upstreamText === undefined ? undefined : redact(options.upstreamText);
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
 * the load) is shared, and raised again from the error table's own codes only.
 */
export const SHARED_GATEWAY_FAILURES: SharedFailures = {
  share(err: unknown): SharedFailure | undefined {
    if (!(err instanceof GatewayError) || err.code === 'SERVICE_UNAVAILABLE') return undefined;
    return {
      code: err.code,
      message: err.message,
      status: err.status,
      ...(err.details === undefined ? {} : { details: err.details }),
      ...(err.headers === undefined ? {} : { headers: err.headers }),
    };
  },
  revive(f: SharedFailure): Error | undefined {
    if (!Object.hasOwn(ERROR_CATALOGUE, f.code)) return undefined;
    return new GatewayError(f.code as ErrorCode, f.message, f.details, {
      status: f.status,
      ...(f.headers === undefined ? {} : { headers: f.headers }),
    });
  },
};
