/**
 * The upstreams the gateway may ask, and the one place that chooses which one serves an
 * attempt (docs/upstreams.md). The attempt loop asks `acquire()` once per attempt,
 * retries and hedges included, and gets an upstream whose budget token is already taken;
 * nothing else knows how many upstreams there are.
 *
 * Selection, computed per attempt from live state:
 *
 * 1. Eligible: circuit closed (or half-open with the probe free: this attempt becomes the
 *    probe), and for latest-state reads in sync (tip height at most UPSTREAM_MAX_LAG_BLOCKS
 *    behind the highest any upstream of the network reported). Pinned reads (`latest: false`)
 *    may use a lagging upstream: the block they ask for is in its past.
 * 2. Upstreams this request already failed on (`avoid`) are left out while another can serve.
 *    When none is eligible at all, every upstream is tried anyway, best first: an answer from
 *    a doubtful node beats no answer (and a single-upstream deployment behaves as before the
 *    breaker existed).
 * 3. Order: lower priority, then better health (fewer recent consecutive failures), then lower
 *    recent latency. The first one with a budget token now serves; a request waits only when
 *    no candidate has one.
 *
 * Waiting: when no candidate has a token now, the request waits in its network's
 * FairTokenQueue (fair-queue.ts), which decides who waits, in which order and for how long.
 *
 * An upstream whose /v2/info names another chain than its network's (src/chain/identity.ts)
 * is left out before all of this, fallbacks included: its answers would be cached as the
 * network's. When no upstream of the network is left, the attempt fails instead. So is one
 * that sits out for lost attested votes (strikes.ts, docs/consensus.md).
 */

import { GatewayError } from '../errors.js';
import type { Network } from '../network.js';
import type { Budget } from './budget/upstream-budget.js';
import { type BreakerSync, CircuitBreaker } from './circuit-breaker.js';
import { FairTokenQueue } from './fair-queue.js';
import type { AttemptOutcome } from './outcomes.js';
import { TRANSIENT_OUTCOMES, UpstreamStats } from './stats.js';
import type { Destination } from './transport.js';

export interface Upstream extends Destination {
  /**
   * Stable and credential-free: the name in logs, metric labels, answers (AnswerMeta) and the
   * budget's Redis key. A network's first upstream is named after the network, which keeps
   * the Redis keys of single-upstream deployments as they were.
   */
  readonly id: string;
  /** The base URL without credentials or query, for /ready and messages. */
  readonly label: string;
  readonly network: Network;
  /** Lower is preferred (the list order). */
  readonly priority: number;
  /** Every attempt sent here first takes one of its tokens. */
  readonly budget: Budget;
  readonly stats: UpstreamStats;
  readonly breaker: CircuitBreaker;
}

/** How to describe one upstream to the pool; `budget` is built by the caller (local or Redis). */
export interface UpstreamSpec {
  readonly id: string;
  readonly network: Network;
  /** Base URL (a path prefix is kept, credentials in it are never sent nor shown). */
  readonly url: string;
  readonly apiKey?: string | undefined;
  readonly priority?: number;
  readonly budget: Budget;
}

/** What /ready shows of one upstream. */
export type UpstreamHealthState = 'ok' | 'wrong-chain' | 'sitting-out' | 'implausible' | 'open' | 'lagging';

/** The chain an upstream reports when it is not its network's (identities as identityOf writes them). */
export interface WrongChain {
  readonly reported: string;
  readonly expected: string;
}

export interface PoolSettings {
  readonly breakerFailures: number;
  readonly breakerCooldownMs: number;
  /** How long a probe may be out before another is allowed. */
  readonly probeLeaseMs: number;
  readonly maxLagBlocks: number;
  readonly queueTimeoutMs: number;
  readonly maxWaitingPerClient: number;
}

const DEFAULT_POOL_SETTINGS: PoolSettings = {
  breakerFailures: 5,
  breakerCooldownMs: 30_000,
  probeLeaseMs: 60_000,
  maxLagBlocks: 2,
  queueTimeoutMs: 10_000,
  maxWaitingPerClient: 16,
};

export interface PoolOptions {
  readonly settings?: Partial<PoolSettings>;
  /** Shares breaker transitions and probe claims across instances (Redis). */
  readonly breakerSync?: BreakerSync;
  /** Breaker transitions, for logs. */
  readonly onBreaker?: (upstream: Upstream, state: 'open' | 'closed') => void;
  /** Each acquire(): how long it waited and which upstream granted (undefined: refused). For metrics. */
  readonly onAcquire?: (network: Network, upstream: Upstream | undefined, waitedMs: number) => void;
}

export interface PickOptions {
  /**
   * Upstreams to avoid when another can serve: those that already failed this request, or the
   * one a hedged attempt is racing.
   */
  readonly avoid?: ReadonlySet<Upstream>;
  /** A read at the current chain tip (default): lagging upstreams are skipped. */
  readonly latest?: boolean;
}

export interface AcquireOptions extends PickOptions {
  /** Who is asking, for fairness among waiters (the client's address); undefined = the gateway itself, never capped. */
  readonly clientId?: string | undefined;
  /** Never wait and never fall back to avoided upstreams: undefined when nobody has a token now (hedges). */
  readonly noWait?: boolean;
  /**
   * Longest wait for a token, below UPSTREAM_QUEUE_TIMEOUT_MS; 0 = a token available now or a
   * RATE_LIMIT_EXCEEDED at once (a caller with a stale answer at hand does not queue).
   */
  readonly maxWaitMs?: number | undefined;
  /**
   * The client went away: a waiter leaves the queue at once and takes no token (nobody is left
   * to answer, so spending the upstream budget on it would be waste).
   */
  readonly signal?: AbortSignal | undefined;
}

export class UpstreamPool {
  readonly settings: PoolSettings;
  readonly #byNetwork = new Map<Network, Upstream[]>();
  readonly #queues = new Map<Network, FairTokenQueue<Upstream>>();
  /**
   * Asks a lagging upstream for its tip (set by the Stacks client, which can send requests).
   * Called only while requests skip it: no idle polling.
   */
  lagCheck: ((upstream: Upstream) => void) | undefined;
  /**
   * Whether a tip height may be believed (set by the Stacks client: ChainTips.plausible). A
   * height that cannot be never makes the others lagging, even one recorded before anything was
   * believed to judge it by (the first /v2/info round). Absent: every height counts.
   */
  plausibleTip: ((network: Network, height: number) => boolean) | undefined;
  /**
   * Whether an upstream serves another chain than its network's (bound to the chain
   * identities once they exist); undefined or absent: it serves its network's.
   */
  wrongChain: ((upstream: Upstream) => WrongChain | undefined) | undefined;
  /**
   * Whether an upstream sits out for lost attested votes (bound to the strikes when consensus
   * is on); absent: none does.
   */
  sittingOut: ((upstream: Upstream) => boolean) | undefined;
  readonly #onAcquire: PoolOptions['onAcquire'];
  readonly #lagCheckedAt = new Map<Upstream, number>();

  constructor(specs: readonly UpstreamSpec[], options: PoolOptions = {}) {
    this.settings = { ...DEFAULT_POOL_SETTINGS, ...options.settings };
    this.#onAcquire = options.onAcquire;
    const ids = new Set<string>();
    for (const spec of specs) {
      if (ids.has(spec.id)) throw new Error(`upstream id "${spec.id}" is used twice`);
      ids.add(spec.id);
      const onBreaker = options.onBreaker;
      const upstream: Upstream = toUpstream(spec, this.settings, options.breakerSync, (state) =>
        onBreaker?.(upstream, state),
      );
      options.breakerSync?.bind?.(spec.id, (change) => upstream.breaker.apply(change));
      const list = this.#byNetwork.get(spec.network) ?? [];
      list.push(upstream);
      // Stable: equal priorities keep the list order.
      list.sort((a, b) => a.priority - b.priority);
      this.#byNetwork.set(spec.network, list);
    }
  }

  /** Every upstream of one network (or of all), in priority order: for /ready, metrics, shutdown. */
  upstreams(network?: Network): readonly Upstream[] {
    if (network !== undefined) return this.#byNetwork.get(network) ?? [];
    return [...this.#byNetwork.values()].flat();
  }

  byId(id: string): Upstream | undefined {
    return this.upstreams().find((u) => u.id === id);
  }

  /** The best upstream for the next attempt, budget aside. Throws if the network has none (a wiring bug). */
  pick(network: Network, options: PickOptions = {}): Upstream {
    return this.#ranked(network, options, false)[0]!;
  }

  /** Whether an eligible upstream other than `avoid` exists (a failover needs no backoff). */
  hasAlternative(network: Network, options: PickOptions): boolean {
    return this.#ranked(network, options, true).length > 0;
  }

  /**
   * An upstream for the next attempt, with one of its budget tokens taken (and, if its circuit
   * is half-open, its probe claimed). Waits in the fair queue when no candidate has a token;
   * rejects with RATE_LIMIT_EXCEEDED when the wait would be too long or the client has too
   * many waiting. With `noWait`, resolves undefined instead of waiting.
   */
  async acquire(network: Network, options: AcquireOptions = {}): Promise<Upstream | undefined> {
    const hook = this.#onAcquire;
    if (hook === undefined || options.noWait === true) return this.#acquire(network, options);
    const started = performance.now();
    try {
      const upstream = await this.#acquire(network, options);
      hook(network, upstream, performance.now() - started);
      return upstream;
    } catch (err) {
      hook(network, undefined, performance.now() - started);
      throw err;
    }
  }

  /** Requests of the network waiting for a token (in the fair queue, or being served). */
  waiting(network: Network): number {
    return this.#queues.get(network)?.waiting ?? 0;
  }

  async #acquire(network: Network, options: AcquireOptions): Promise<Upstream | undefined> {
    const queue = this.#queue(network);
    const candidates = this.#ranked(network, options, options.noWait === true);
    if (queue.idle) {
      for (const upstream of candidates) {
        if ((await this.#tryTake(upstream, 0)) === true) return upstream;
      }
    }
    if (options.noWait === true) return undefined;
    return queue.wait(candidates, options, () => {
      // Ranked again while waiting: never a throw inside the queue (every upstream turned out
      // to serve another chain meanwhile: the next attempt's ranking says so).
      try {
        return this.#ranked(network, options, false);
      } catch {
        return candidates;
      }
    });
  }

  /**
   * Record one attempt's outcome: stats (latency, tip) and the circuit breaker, which counts
   * `failed` attempts (default: the transient outcomes). Aborted hedges are not reported.
   */
  report(
    upstream: Upstream,
    outcome: AttemptOutcome,
    durationMs: number,
    tipHeight?: number,
    failed: boolean = TRANSIENT_OUTCOMES.has(outcome),
  ): void {
    upstream.stats.record(outcome, durationMs, tipHeight);
    if (failed) upstream.breaker.onFailure();
    else upstream.breaker.onSuccess();
  }

  /** The highest tip height any upstream of the network reported (another chain's heights aside). */
  networkTip(network: Network): number | undefined {
    let best: number | undefined;
    for (const u of this.upstreams(network)) {
      if (this.wrongChain?.(u) !== undefined) continue;
      const h = u.stats.tip?.height;
      if (h === undefined || this.plausibleTip?.(network, h) === false) continue;
      if (best === undefined || h > best) best = h;
    }
    return best;
  }

  /** More than UPSTREAM_MAX_LAG_BLOCKS behind the highest tip seen on its network. */
  isLagging(upstream: Upstream): boolean {
    const own = upstream.stats.tip?.height;
    const top = this.networkTip(upstream.network);
    return own !== undefined && top !== undefined && top - own > this.settings.maxLagBlocks;
  }

  healthOf(upstream: Upstream): UpstreamHealthState {
    if (this.wrongChain?.(upstream) !== undefined) return 'wrong-chain';
    if (this.sittingOut?.(upstream) === true) return 'sitting-out';
    if (upstream.stats.implausibleAt !== undefined) return 'implausible';
    if (!upstream.breaker.closed) return 'open';
    if (this.isLagging(upstream)) return 'lagging';
    return 'ok';
  }

  /** Reject every waiter (shutdown); the budgets are closed by their owner. */
  close(): void {
    for (const queue of this.#queues.values()) queue.close();
  }

  // --- selection ---------------------------------------------------------------------------

  /**
   * Candidates in order of preference. `strict`: only eligible, not avoided (hedges and the
   * failover test); otherwise the fallbacks of the module comment apply.
   */
  #ranked(network: Network, options: PickOptions, strict: boolean): Upstream[] {
    const configured = this.#byNetwork.get(network);
    if (configured === undefined || configured.length === 0)
      throw new Error(`no upstream configured for ${network}`);
    const list = this.#servingChain(configured);
    if (list.length === 0) {
      if (strict) return [];
      throw new GatewayError(
        'UPSTREAM_API_ERROR',
        `no ${network} upstream may be asked: every one reports another chain or sits out for lost votes (see /ready)`,
        { network, reason: 'wrong chain', retryable: true },
      );
    }
    const latest = options.latest !== false;
    const avoid = options.avoid;
    const now = performance.now();
    const eligible = list.filter((u) => {
      // An upstream whose last tip report could not be believed is left alone, but for one
      // attempt per breaker cooldown that may show it plausible again.
      const implausibleAt = u.stats.implausibleAt;
      if (implausibleAt !== undefined && now - implausibleAt < this.settings.breakerCooldownMs) return false;
      if (!u.breaker.closed && !u.breaker.probeDue()) return false;
      if (latest && this.isLagging(u)) {
        this.#maybeLagCheck(u);
        return false;
      }
      return true;
    });
    const fresh = avoid === undefined ? eligible : eligible.filter((u) => !avoid.has(u));
    if (strict) return sortByPreference(fresh);
    if (fresh.length > 0) return sortByPreference(fresh);
    if (eligible.length > 0) return sortByPreference(eligible);
    return sortByPreference([...list]);
  }

  /**
   * The upstreams that may serve the network's chain. One that reports another is asked its
   * /v2/info now and then (as a lagging one is), or nothing would tell us it was set right.
   */
  #servingChain(list: readonly Upstream[]): readonly Upstream[] {
    const wrongChain = this.wrongChain;
    const sittingOut = this.sittingOut;
    // The common case allocates nothing: every attempt ranks its network's upstreams.
    const serving =
      wrongChain === undefined || list.every((u) => wrongChain(u) === undefined)
        ? list
        : list.filter((u) => {
            if (wrongChain(u) === undefined) return true;
            this.#maybeLagCheck(u);
            return false;
          });
    // Sitting out is a penalty with an end (strikes.ts): nothing to check meanwhile.
    if (sittingOut === undefined || serving.every((u) => !sittingOut(u))) return serving;
    return serving.filter((u) => !sittingOut(u));
  }

  /** The upstreams of a network that may be asked at all: of its chain, not sitting out. */
  serving(network: Network): readonly Upstream[] {
    return this.#servingChain(this.upstreams(network));
  }

  /**
   * A lagging upstream is skipped for latest-state reads, so nothing would tell us it caught
   * up: while requests keep coming, ask it for its tip once per breaker cooldown.
   */
  #maybeLagCheck(upstream: Upstream): void {
    if (this.lagCheck === undefined) return;
    const now = performance.now();
    const last = this.#lagCheckedAt.get(upstream) ?? Number.NEGATIVE_INFINITY;
    if (now - last < this.settings.breakerCooldownMs) return;
    this.#lagCheckedAt.set(upstream, now);
    this.lagCheck(upstream);
  }

  /**
   * Take a token within maxWaitMs, claiming the probe first if the circuit is half-open.
   * Resolves true, or the budget's refusal (RATE_LIMIT_EXCEEDED), or false when another caller
   * holds the probe; other errors (a closed budget) are thrown.
   */
  async #tryTake(upstream: Upstream, maxWaitMs: number): Promise<true | false | GatewayError> {
    const probe = !upstream.breaker.closed && upstream.breaker.probeDue();
    if (probe && !(await upstream.breaker.claimProbe())) return false;
    try {
      await upstream.budget.take(maxWaitMs);
      return true;
    } catch (err) {
      if (probe) upstream.breaker.releaseProbe();
      if (err instanceof GatewayError && err.code === 'RATE_LIMIT_EXCEEDED') return err;
      throw err;
    }
  }

  #queue(network: Network): FairTokenQueue<Upstream> {
    let q = this.#queues.get(network);
    if (q === undefined) {
      q = new FairTokenQueue<Upstream>(network, this.settings, (u, ms) => this.#tryTake(u, ms));
      this.#queues.set(network, q);
    }
    return q;
  }
}

/** Lower priority, then fewer consecutive failures, then lower recent latency (unknown first: worth measuring). */
function sortByPreference(list: Upstream[]): Upstream[] {
  return list.sort(
    (a, b) =>
      a.priority - b.priority ||
      a.breaker.failures - b.breaker.failures ||
      (a.stats.latencyMs ?? 0) - (b.stats.latencyMs ?? 0),
  );
}

/** The config slice the default pool is built from. */
export interface PoolConfig {
  readonly upstreams: readonly {
    readonly id: string;
    readonly network: Network;
    readonly url: string;
    readonly apiKey: string | undefined;
    readonly priority: number;
  }[];
}

/** The pool of the configured upstreams, each with its budget (by upstream id). */
export function createPool(
  config: PoolConfig,
  budgets: Readonly<Record<string, Budget>>,
  options: PoolOptions = {},
): UpstreamPool {
  return new UpstreamPool(
    config.upstreams.map((u) => {
      const budget = budgets[u.id];
      if (budget === undefined) throw new Error(`no budget for upstream "${u.id}"`);
      return { id: u.id, network: u.network, url: u.url, apiKey: u.apiKey, priority: u.priority, budget };
    }),
    options,
  );
}

/**
 * One upstream per network, id = the network's name, its URL from `upstreamUrls`, one API key
 * for both: the shape of a single-upstream configuration (tests and tools build it directly).
 */
export function createDefaultPool(
  config: {
    readonly upstreamUrls: Readonly<Record<Network, string>>;
    readonly stacksApiKey: string | undefined;
  },
  budgets: Readonly<Record<Network, Budget>>,
  options: PoolOptions = {},
): UpstreamPool {
  const networks = Object.keys(config.upstreamUrls) as Network[];
  return new UpstreamPool(
    networks.map((network) => ({
      id: network,
      network,
      url: config.upstreamUrls[network],
      apiKey: config.stacksApiKey,
      budget: budgets[network],
    })),
    options,
  );
}

function toUpstream(
  spec: UpstreamSpec,
  settings: PoolSettings,
  sync: BreakerSync | undefined,
  onChange: (state: 'open' | 'closed') => void,
): Upstream {
  const url = new URL(spec.url);
  const pathPrefix = url.pathname.replace(/\/+$/, '');
  return {
    id: spec.id,
    label: url.origin + pathPrefix,
    network: spec.network,
    origin: url.origin,
    pathPrefix,
    query: url.search.replace(/^\?/, ''),
    apiKey: spec.apiKey,
    priority: spec.priority ?? 0,
    budget: spec.budget,
    stats: new UpstreamStats(),
    breaker: new CircuitBreaker(
      spec.id,
      {
        failures: settings.breakerFailures,
        cooldownMs: settings.breakerCooldownMs,
        probeLeaseMs: settings.probeLeaseMs,
      },
      { sync, onChange },
    ),
  };
}
