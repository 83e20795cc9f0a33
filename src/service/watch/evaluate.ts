/**
 * One evaluation of a watched read at a block (docs/watch.md): the read pinned to the block,
 * through the read-only service (the cache, the upstream budget, coalescing across the fleet),
 * decoded as the read-only endpoint decodes it. Its outcome is compared by the node's raw
 * bytes, an error by its record.
 */
import { type GatewayError, isGatewayError } from '../../errors.js';
import type { ReadOnlyService } from '../read-only.js';
import { isTransientFailure } from '../transient.js';
import { type Evaluation, NO_ANSWER, UNKNOWN_BLOCK, type WatchBlock, type WatchedRead } from './types.js';

/**
 * Failures that say nothing of the read's answer either (the gateway shutting down, a store it
 * needs unreachable, a bug): like a transient failure, nothing is sent and the read is
 * evaluated again at the next block. Subscribers are sent only what the chain answers.
 */
const SAYS_NOTHING = new Set(['SERVICE_UNAVAILABLE', 'INTERNAL_ERROR']);

export function evaluator(
  readOnly: ReadOnlyService,
): (read: WatchedRead, block: WatchBlock) => Promise<Evaluation> {
  return async (read, block) => {
    let raw: string;
    try {
      ({ value: raw } = await readOnly.lookup({ ...read.request, tip: block.indexBlockHash }));
    } catch (err) {
      if (isGatewayError(err) && err.code === 'UPSTREAM_API_ERROR' && err.variant === 'unknown-block')
        return UNKNOWN_BLOCK;
      if (!isGatewayError(err) || isTransientFailure(err) || SAYS_NOTHING.has(err.code)) return NO_ANSWER;
      return errorOutcome(err);
    }
    try {
      const value = readOnly.render(raw, read.request);
      return { kind: 'value', raw, value, same: `v${raw}` };
    } catch (err) {
      // An (err ...) result is CONTRACT_ERROR, as the read-only endpoint answers it.
      if (isGatewayError(err) && err.code === 'CONTRACT_ERROR')
        return { kind: 'error', error: err, same: `v${raw}` };
      return NO_ANSWER;
    }
  };
}

function errorOutcome(error: GatewayError): Evaluation {
  return {
    kind: 'error',
    error,
    same: `e${JSON.stringify({ code: error.code, message: error.message, details: error.details ?? null })}`,
  };
}
