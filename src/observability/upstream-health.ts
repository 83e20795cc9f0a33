/**
 * Per-network upstream state from recent outcomes, for /ready: "up" while recent attempts
 * mostly succeed, "degraded" when some fail, "down" when the last few all failed, "unknown"
 * before any attempt. Only transport-level failures count against the node: an okay:false
 * or a 404 is the node answering correctly.
 *
 * With the pool (docs/upstreams.md), each network's entry also lists its upstreams:
 * id, URL without credentials, state (`ok`, `wrong-chain` for one excluded because its /v2/info
 * names another chain than its network's, `sitting-out` for one that lost too many attested
 * votes (docs/consensus.md), `implausible`, `open` for a broken circuit,
 * `lagging`), why it is excluded when it is, the tip height it reported, its recent latency.
 * Never an API key, never a URL's user:password.
 */
import type { Network } from '../network.js';
import type { AttemptEvent } from '../upstream/attempts.js';
import type { AttemptOutcome } from '../upstream/outcomes.js';
import type { UpstreamHealthState, UpstreamPool } from '../upstream/pool.js';

/** One upstream as /ready lists it. */
export interface UpstreamListing {
  readonly id: string;
  readonly url: string;
  readonly state: UpstreamHealthState;
  /** Why it serves no request of its network, when it is excluded for another chain. */
  readonly excluded?: {
    readonly reason: string;
    /** The chain it reports and the network's, as `network_id:genesis_chainstate_hash`. */
    readonly reportedChain: string;
    readonly expectedChain: string;
  };
  readonly priority: number;
  readonly tipHeight?: number;
  readonly latencyMs?: number;
  readonly consecutiveFailures: number;
}

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
  readonly #pool: () => UpstreamPool | undefined;

  constructor(pool: () => UpstreamPool | undefined = () => undefined) {
    this.#pool = pool;
  }

  /** The network's upstreams as /ready lists them (empty with an injected node). */
  upstreams(network: Network): UpstreamListing[] {
    const pool = this.#pool();
    if (pool === undefined) return [];
    return pool.upstreams(network).map((u) => {
      const tip = u.stats.tip?.height;
      const latency = u.stats.latencyMs;
      const wrong = pool.wrongChain?.(u);
      return {
        id: u.id,
        url: u.label,
        state: pool.healthOf(u),
        ...(wrong === undefined
          ? {}
          : {
              excluded: {
                reason: `its /v2/info names another chain (${wrong.reported}) than ${network}'s (${wrong.expected})`,
                reportedChain: wrong.reported,
                expectedChain: wrong.expected,
              },
            }),
        priority: u.priority,
        ...(tip === undefined ? {} : { tipHeight: tip }),
        ...(latency === undefined ? {} : { latencyMs: Math.round(latency * 10) / 10 }),
        consecutiveFailures: u.breaker.failures,
      };
    });
  }

  record(event: AttemptEvent): void {
    // A hedge's loser was cut short on purpose: it says nothing about the node.
    if (event.outcome === 'aborted') return;
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
    upstreams?: UpstreamListing[];
  } {
    const listed = this.upstreams(network);
    const upstreams = listed.length === 0 ? {} : { upstreams: listed };
    const h = this.#byNetwork.get(network);
    if (h === undefined || h.recent.length === 0) return { state: 'unknown', ...upstreams };
    const ok = h.recent.filter(Boolean).length;
    const state: UpstreamState =
      h.consecutiveFailures >= DOWN_AFTER || ok === 0 ? 'down' : ok === h.recent.length ? 'up' : 'degraded';
    return {
      state,
      ...(h.lastOutcome !== undefined ? { lastOutcome: h.lastOutcome } : {}),
      ...(h.lastAt !== undefined ? { lastAt: new Date(h.lastAt).toISOString() } : {}),
      successRate: Math.round((ok / h.recent.length) * 100) / 100,
      ...upstreams,
    };
  }
}
