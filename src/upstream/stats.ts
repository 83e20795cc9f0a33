/**
 * What the pool learns about one upstream from the attempts sent to it: consecutive
 * transient failures, recent latency and the last tip height it reported. Today nothing
 * reads them to choose (each network has one upstream); they are the inputs that selection
 * by health and latency, the circuit breaker and lag awareness will read, kept
 * here so those features need no new plumbing through the attempt loop.
 *
 * This is not /ready's view: observability/upstream-health.ts keeps that, per network.
 */
import type { AttemptOutcome } from './outcomes.js';

/**
 * Failures that say the upstream itself is unwell (the retry list of docs/upstreams.md). An okay:false,
 * a 404 or a malformed body is the node answering; it counts as a success for health.
 */
export const TRANSIENT_OUTCOMES: ReadonlySet<AttemptOutcome> = new Set([
  'server-error',
  'rate-limited',
  'timeout',
  'connection-error',
  'implausible',
]);

/** Weight of the newest sample in the latency average: about the last ten attempts matter. */
const LATENCY_WEIGHT = 0.2;

export class UpstreamStats {
  #consecutiveFailures = 0;
  /** performance.now() of its last implausible tip report; undefined once it reports a plausible one. */
  #implausibleAt: number | undefined;

  /** Its last tip report could not be believed (and no plausible one came since). */
  get implausibleAt(): number | undefined {
    return this.#implausibleAt;
  }

  /**
   * Its tip report could not be believed: the height it reported before is forgotten too (it
   * may be the same lie, told while nothing was believed yet to judge it by), so that its lag
   * is learned again from its next believable report.
   */
  markImplausible(): void {
    this.#implausibleAt = performance.now();
    this.#tipHeight = undefined;
    this.#tipAt = undefined;
  }
  #latencyMs: number | undefined;
  #tipHeight: number | undefined;
  #tipAt: number | undefined;

  /** Record one attempt's outcome, how long its exchange took, and the tip it reported. */
  record(outcome: AttemptOutcome, durationMs: number, tipHeight?: number): void {
    if (tipHeight !== undefined) this.#implausibleAt = undefined;
    if (TRANSIENT_OUTCOMES.has(outcome)) {
      this.#consecutiveFailures += 1;
    } else {
      this.#consecutiveFailures = 0;
      // Only answers say how fast the node is; a timeout's duration is the timeout.
      this.#latencyMs =
        this.#latencyMs === undefined
          ? durationMs
          : this.#latencyMs + LATENCY_WEIGHT * (durationMs - this.#latencyMs);
    }
    if (tipHeight !== undefined) this.observeTip(tipHeight);
  }

  /** A tip height the upstream reported (an answer's header, or its /v2/info). Never goes back. */
  observeTip(height: number): void {
    if (this.#tipHeight === undefined || height >= this.#tipHeight) {
      this.#tipHeight = height;
      this.#tipAt = Date.now();
    }
  }

  /** Transient failures in a row since the last answer (the breaker's count). */
  get consecutiveFailures(): number {
    return this.#consecutiveFailures;
  }

  /** Moving average of the answers' exchange time, ms; undefined before the first answer. */
  get latencyMs(): number | undefined {
    return this.#latencyMs;
  }

  /** The highest tip height the upstream reported, and when (epoch ms). */
  get tip(): { height: number; at: number } | undefined {
    return this.#tipHeight === undefined || this.#tipAt === undefined
      ? undefined
      : { height: this.#tipHeight, at: this.#tipAt };
  }
}
