/**
 * Per-network upstream state from recent outcomes, for /ready: "up" while recent attempts
 * mostly succeed, "degraded" when some fail, "down" when the last few all failed, "unknown"
 * before any attempt. Only transport-level failures count against the node: an okay:false
 * or a 404 is the node answering correctly.
 */
import type { Network } from '../config.js';
import type { AttemptEvent } from '../upstream/attempts.js';
import type { AttemptOutcome } from '../upstream/outcomes.js';

export type UpstreamState = 'unknown' | 'up' | 'degraded' | 'down';

const WINDOW = 20;
const DOWN_AFTER = 5;
const FAILURES: ReadonlySet<AttemptOutcome> = new Set([
  'server-error',
  'rate-limited',
  'timeout',
  'connection-error',
  'malformed',
]);

interface NetworkHealth {
  recent: boolean[];
  consecutiveFailures: number;
  lastOutcome?: AttemptOutcome;
  lastAt?: number;
}

export class UpstreamHealth {
  readonly #byNetwork = new Map<Network, NetworkHealth>();

  record(event: AttemptEvent): void {
    let h = this.#byNetwork.get(event.network);
    if (h === undefined) {
      h = { recent: [], consecutiveFailures: 0 };
      this.#byNetwork.set(event.network, h);
    }
    const failed = FAILURES.has(event.outcome);
    h.recent.push(!failed);
    if (h.recent.length > WINDOW) h.recent.shift();
    h.consecutiveFailures = failed ? h.consecutiveFailures + 1 : 0;
    h.lastOutcome = event.outcome;
    h.lastAt = Date.now();
  }

  state(network: Network): {
    state: UpstreamState;
    lastOutcome?: string;
    lastAt?: string;
    successRate?: number;
  } {
    const h = this.#byNetwork.get(network);
    if (h === undefined || h.recent.length === 0) return { state: 'unknown' };
    const ok = h.recent.filter(Boolean).length;
    const state: UpstreamState =
      h.consecutiveFailures >= DOWN_AFTER || ok === 0 ? 'down' : ok === h.recent.length ? 'up' : 'degraded';
    return {
      state,
      ...(h.lastOutcome !== undefined ? { lastOutcome: h.lastOutcome } : {}),
      ...(h.lastAt !== undefined ? { lastAt: new Date(h.lastAt).toISOString() } : {}),
      successRate: Math.round((ok / h.recent.length) * 100) / 100,
    };
  }
}
