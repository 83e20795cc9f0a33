/**
 * Strikes and sitting out (docs/consensus.md): an upstream on the losing side of a decided
 * attested vote gets a strike; UPSTREAM_CONSENSUS_STRIKES of them within 10 minutes make it sit
 * out of every selection of its network (the pool leaves it out, /v2/info and broadcasts
 * included) for 5 minutes, after which its count starts again from zero.
 *
 * A vote that did not take place for an upstream (it was slow, failed, or did not know the
 * block) is never a strike: only a definite answer that differs from the one k others gave.
 *
 * With Redis the count is the fleet's (StrikeSync): every instance's strikes add up, and the one
 * that reaches the limit tells the others how long the upstream sits out, as the circuit
 * breaker's transitions travel (remaining time, never a deadline: clocks never matter).
 */

/** The fleet's count of strikes (Redis); absent: this instance counts alone. */
export interface StrikeSync {
  /**
   * Count one strike of upstream `id` in the fleet; resolves the sit-out it started (remaining
   * ms) when this strike reached `limit` within `windowMs`, else undefined. Rejects when the
   * fleet cannot be reached (the strike is then counted here).
   */
  strike(id: string, limit: number, windowMs: number, sitOutMs: number): Promise<number | undefined>;
  /** Where sit-outs decided elsewhere (or found on start) for upstream `id` go. */
  bind(id: string, apply: (remainingMs: number) => void): void;
}

export interface StrikesOptions {
  /** UPSTREAM_CONSENSUS_STRIKES. */
  readonly limit: number;
  readonly windowMs?: number;
  readonly sitOutMs?: number;
  readonly sync?: StrikeSync | undefined;
  /** Monotonic clock, ms. */
  readonly now?: () => number;
  /** Told of every sit-out this instance learns (its own or the fleet's), for the log. */
  readonly onSitOut?: ((id: string, remainingMs: number) => void) | undefined;
  readonly onSyncError?: ((err: unknown) => void) | undefined;
}

export const STRIKE_WINDOW_MS = 10 * 60_000;
export const SIT_OUT_MS = 5 * 60_000;

export class Strikes {
  readonly limit: number;
  readonly #windowMs: number;
  readonly #sitOutMs: number;
  readonly #sync: StrikeSync | undefined;
  readonly #now: () => number;
  readonly #onSitOut: StrikesOptions['onSitOut'];
  readonly #onSyncError: (err: unknown) => void;
  /** Local strike times per upstream id (without a fleet, or while it is unreachable). */
  readonly #times = new Map<string, number[]>();
  /** Until when (this clock) each upstream sits out. */
  readonly #until = new Map<string, number>();

  constructor(options: StrikesOptions) {
    this.limit = options.limit;
    this.#windowMs = options.windowMs ?? STRIKE_WINDOW_MS;
    this.#sitOutMs = options.sitOutMs ?? SIT_OUT_MS;
    this.#sync = options.sync;
    this.#now = options.now ?? (() => performance.now());
    this.#onSitOut = options.onSitOut;
    this.#onSyncError = options.onSyncError ?? (() => {});
  }

  /** Listen to the fleet for this upstream's sit-outs. */
  watch(id: string): void {
    this.#sync?.bind(id, (remainingMs) => this.#sitOut(id, remainingMs));
  }

  /** One lost vote of upstream `id`. Resolves once counted (the fleet's word included). */
  async strike(id: string): Promise<void> {
    if (this.sittingOut(id)) return;
    if (this.#sync !== undefined) {
      try {
        const remaining = await this.#sync.strike(id, this.limit, this.#windowMs, this.#sitOutMs);
        if (remaining !== undefined) this.#sitOut(id, remaining);
        return;
      } catch (err) {
        this.#onSyncError(err);
      }
    }
    const now = this.#now();
    const times = (this.#times.get(id) ?? []).filter((t) => now - t < this.#windowMs);
    times.push(now);
    if (times.length >= this.limit) {
      this.#times.delete(id);
      this.#sitOut(id, this.#sitOutMs);
    } else {
      this.#times.set(id, times);
    }
  }

  /** Whether upstream `id` sits out now. */
  sittingOut(id: string): boolean {
    const until = this.#until.get(id);
    if (until === undefined) return false;
    if (this.#now() < until) return true;
    this.#until.delete(id);
    return false;
  }

  #sitOut(id: string, remainingMs: number): void {
    const until = this.#now() + remainingMs;
    if ((this.#until.get(id) ?? 0) >= until) return;
    this.#until.set(id, until);
    this.#times.delete(id);
    this.#onSitOut?.(id, remainingMs);
  }
}
