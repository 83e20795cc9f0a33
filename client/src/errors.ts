/**
 * Typed errors of the client: one class per error code of the gateway's catalogue, so callers
 * can `catch (e) { if (e instanceof ContractError) ... }` instead of comparing strings.
 *
 * The client has no code of the server in it; the server checks this list against its own
 * catalogue at compile time (src/api/client-contract.ts), so a code added there without a
 * class here fails `tsc`.
 */

export interface ErrorInit {
  readonly code: string;
  readonly status: number;
  readonly message: string;
  readonly details?: Record<string, unknown> | undefined;
  readonly id?: string | undefined;
  readonly cause?: unknown;
}

/** Base class of every error the client throws for a gateway error envelope or a failed request. */
export class ClarityCacheError extends Error {
  /** The envelope's error code, e.g. CONTRACT_ERROR; NETWORK_ERROR when no answer arrived. */
  readonly code: string;
  /** HTTP status of the answer; 0 when no answer arrived. */
  readonly status: number;
  readonly details: Record<string, unknown> | undefined;
  /** The error instance id the gateway logged (quote it in a bug report). */
  readonly id: string | undefined;

  constructor(init: ErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.code = init.code;
    this.status = init.status;
    this.details = init.details;
    this.id = init.id;
  }
}

export class ValidationError extends ClarityCacheError {}
export class InvalidHexStringError extends ClarityCacheError {}
export class DeserializationError extends ClarityCacheError {}
export class InvalidContractAddressError extends ClarityCacheError {}
export class InvalidFunctionError extends ClarityCacheError {}
export class InvalidArgumentsError extends ClarityCacheError {}
export class UnauthorizedError extends ClarityCacheError {}
/** The function returned `(err ...)`; `details.value` holds the decoded error value. */
export class ContractError extends ClarityCacheError {}
export class UpstreamApiError extends ClarityCacheError {}
/**
 * Attested answers: the gateway's upstreams did not agree on the answer at one block (or too few
 * could vote). Retryable; `details.participants` lists each upstream's status and body digest.
 */
export class UpstreamDisputeError extends ClarityCacheError {}
export class TimeoutError extends ClarityCacheError {}
export class RateLimitExceededError extends ClarityCacheError {}
export class NotFoundError extends ClarityCacheError {}
export class MethodNotAllowedError extends ClarityCacheError {}
export class ServiceUnavailableError extends ClarityCacheError {}
export class InternalError extends ClarityCacheError {}
/** No usable answer: connection refused, reset, DNS failure, or a body that is not an envelope. */
export class NetworkError extends ClarityCacheError {}

export const ERROR_CLASSES = {
  VALIDATION_ERROR: ValidationError,
  INVALID_HEX_STRING: InvalidHexStringError,
  DESERIALIZATION_ERROR: DeserializationError,
  INVALID_CONTRACT_ADDRESS: InvalidContractAddressError,
  INVALID_FUNCTION: InvalidFunctionError,
  INVALID_ARGUMENTS: InvalidArgumentsError,
  UNAUTHORIZED: UnauthorizedError,
  CONTRACT_ERROR: ContractError,
  UPSTREAM_API_ERROR: UpstreamApiError,
  UPSTREAM_DISPUTE: UpstreamDisputeError,
  TIMEOUT: TimeoutError,
  RATE_LIMIT_EXCEEDED: RateLimitExceededError,
  NOT_FOUND: NotFoundError,
  METHOD_NOT_ALLOWED: MethodNotAllowedError,
  SERVICE_UNAVAILABLE: ServiceUnavailableError,
  INTERNAL_ERROR: InternalError,
} as const satisfies Record<string, typeof ClarityCacheError>;

/** Every error code of the gateway's catalogue. */
export type ErrorCode = keyof typeof ERROR_CLASSES;

/** The error for an envelope's error record; an unknown code (a newer gateway) gets the base class. */
export function errorFromRecord(init: ErrorInit): ClarityCacheError {
  const Class: typeof ClarityCacheError = Object.hasOwn(ERROR_CLASSES, init.code)
    ? ERROR_CLASSES[init.code as ErrorCode]
    : ClarityCacheError;
  return new Class(init);
}
