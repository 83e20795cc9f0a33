/**
 * One upstream's circuit breaker (docs/upstreams.md): after UPSTREAM_BREAKER_FAILURES
 * consecutive transient failures the upstream is skipped for UPSTREAM_BREAKER_COOLDOWN_MS;
 * then exactly one probe request is let through, and its outcome decides: an answer closes the
 * circuit, a transient failure opens it for another cooldown. While the probe is out, nobody
 * else is sent there.
 *
 * Consecutive failures rather than a rolling error rate: a rate-limited gateway sends a few
 * requests a minute to each upstream, and a window of a hundred samples would take an hour to
 * fill. An answer of any kind from the node (okay:false, a 404) is a success here; only what
 * says the upstream itself is unwell counts (stats.ts's TRANSIENT list).
 *
 * With Redis, the transitions (open with its remaining cooldown, closed) and the claim of the
 * probe are shared through a BreakerSync (src/upstream/redis-breaker-sync.ts), so every instance skips an
 * upstream that one of them found broken, and one probe is sent for all of them. Failure counts
 * stay per instance: sharing them would cost a Redis write per attempt for little gain.
 */

export type BreakerState = 'closed' | 'open' | 'half-open';

/** A transition as announced to (and by) the other instances. */
export type BreakerChange =
  | { readonly state: 'open'; readonly remainingMs: number }
  | { readonly state: 'closed' };

export interface BreakerSync {
  /** Tell the other instances. Fire and forget. */
  announce(id: string, change: BreakerChange): void;
  /**
   * Claim the one probe of `id` for `leaseMs` (after which another may probe, should the
   * prober vanish). Resolves true for one claimant across instances.
   */
  claimProbe(id: string, leaseMs: number): Promise<boolean>;
  /** Where the other instances' announcements for `id` go. */
  bind?(id: string, apply: (change: BreakerChange) => void): void;
}

export interface BreakerSettings {
  readonly failures: number;
  readonly cooldownMs: number;
  /** How long a probe may be out before another is allowed (the attempt's timeout and more). */
  readonly probeLeaseMs: number;
}

export class CircuitBreaker {
  readonly #id: string;
  readonly #settings: BreakerSettings;
  readonly #sync: BreakerSync | undefined;
  readonly #now: () => number;
  readonly #onChange: ((state: 'open' | 'closed') => void) | undefined;
  #failures = 0;
  /** Set while the circuit is open (and after, until a probe decides). */
  #openUntil: number | undefined;
  /** A probe is out (here or, per the shared claim, elsewhere) until this time. */
  #probeUntil: number | undefined;

  constructor(
    id: string,
    settings: BreakerSettings,
    options: {
      sync?: BreakerSync | undefined;
      now?: () => number;
      onChange?: (state: 'open' | 'closed') => void;
    } = {},
  ) {
    this.#id = id;
    this.#settings = settings;
    this.#sync = options.sync;
    this.#now = options.now ?? Date.now;
    this.#onChange = options.onChange;
  }

  state(): BreakerState {
    if (this.#openUntil === undefined) return 'closed';
    return this.#now() < this.#openUntil ? 'open' : 'half-open';
  }

  /** Consecutive transient failures seen here since the last answer. */
  get failures(): number {
    return this.#failures;
  }

  /** Whether a request may be sent now without a probe claim (the circuit is closed). */
  get closed(): boolean {
    return this.#openUntil === undefined;
  }

  /** Half-open and nobody probing: the next request sent there would be the probe. */
  probeDue(): boolean {
    if (this.state() !== 'half-open') return false;
    return this.#probeUntil === undefined || this.#now() >= this.#probeUntil;
  }

  /** Become the probe: true for one caller (across instances when shared). */
  async claimProbe(): Promise<boolean> {
    if (!this.probeDue()) return false;
    const lease = this.#settings.probeLeaseMs;
    // Claimed locally first, so concurrent callers here do not all ask Redis.
    this.#probeUntil = this.#now() + lease;
    if (this.#sync === undefined) return true;
    let won: boolean;
    try {
      won = await this.#sync.claimProbe(this.#id, lease);
    } catch {
      // Redis unreachable: decide locally, as the budget falls back to a local bucket.
      won = true;
    }
    return won && this.#openUntil !== undefined;
  }

  /** A claimed probe was not sent after all (no budget token): let another caller probe. */
  releaseProbe(): void {
    this.#probeUntil = undefined;
  }

  /** An answer came back: the circuit closes (if it was not). */
  onSuccess(): void {
    this.#failures = 0;
    if (this.#openUntil === undefined) return;
    this.#close();
    this.#sync?.announce(this.#id, { state: 'closed' });
  }

  /** A transient failure: counts; opens at the threshold; a failed probe opens it again. */
  onFailure(): void {
    this.#failures += 1;
    const state = this.state();
    if (state === 'open') return; // late answers of attempts sent before it opened
    if (state === 'half-open' || this.#failures >= this.#settings.failures) {
      this.#open(this.#settings.cooldownMs);
      this.#sync?.announce(this.#id, { state: 'open', remainingMs: this.#settings.cooldownMs });
    }
  }

  /** Another instance announced a transition. */
  apply(change: BreakerChange): void {
    if (change.state === 'closed') {
      this.#failures = 0;
      if (this.#openUntil !== undefined) this.#close();
    } else {
      this.#open(change.remainingMs);
    }
  }

  #open(ms: number): void {
    const wasClosed = this.#openUntil === undefined;
    this.#openUntil = this.#now() + ms;
    this.#probeUntil = undefined;
    if (wasClosed) this.#onChange?.('open');
  }

  #close(): void {
    this.#openUntil = undefined;
    this.#probeUntil = undefined;
    this.#onChange?.('closed');
  }
}
