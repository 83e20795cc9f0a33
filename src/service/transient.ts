/**
 * Which failures are transient (docs/freshness.md, stale-if-error): a timeout, a
 * connection error, a 5xx, a 429, a garbage answer, or no budget token in time. These say
 * nothing about the call itself, so a stale answer is better than none. A definite answer of
 * the node (okay:false, a 4xx, an unknown contract, a malformed-but-JSON answer) is not: it is
 * never replaced by a stale one.
 */
import { isGatewayError } from '../errors.js';

export function isTransientFailure(err: unknown): boolean {
  if (!isGatewayError(err)) return false;
  switch (err.code) {
    case 'TIMEOUT':
    case 'RATE_LIMIT_EXCEEDED':
    // The upstreams did not agree (docs/consensus.md): nothing says the older entry is wrong.
    case 'UPSTREAM_DISPUTE':
      return true;
    case 'UPSTREAM_API_ERROR':
      // 5xx, connection errors and non-JSON 200s are marked retryable; definite answers are not
      // (an unknown contract or block, a refusal: the variants of a node that answered).
      return err.variant === undefined && err.details?.['retryable'] === true;
    default:
      return false;
  }
}
