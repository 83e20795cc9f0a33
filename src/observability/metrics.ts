/**
 * Prometheus metrics (prom-client) on a registry of this gateway's own, so that several
 * gateways in one process (tests) never collide. Names are listed in the README.
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { CacheOutcome, StaleServing } from '../cache/read-through.js';
import type { TipRefreshResult } from '../chain/tracker.js';
import type { Network } from '../config.js';
import type { AttemptEvent } from '../upstream/attempts.js';
import type { Budget } from '../upstream/budget/budget.js';
import { TallyHistogram } from './tally-histogram.js';

export type CacheEndpoint = 'read-only' | 'abi';

export interface MetricSources {
  readonly budgets: Readonly<Record<Network, Budget>>;
  readonly hotEntries: () => number;
  /** The known chain tip height of a network, if any (clarity_cache_chain_tip_height). */
  readonly tipHeight?: (network: Network) => number | undefined;
}

export class Metrics {
  readonly registry = new Registry();
  readonly #requests: Counter<'route' | 'method' | 'status'>;
  readonly #cache: Counter<'endpoint' | 'outcome'>;
  readonly #requestDuration: TallyHistogram;
  readonly #upstreamAttempts: Counter<'network' | 'kind' | 'outcome'>;
  readonly #upstreamLatency: Histogram<'network' | 'kind'>;
  readonly #budgetWait: Histogram<'network' | 'result'>;
  readonly #storeErrors: Counter<'op'>;
  readonly #stale: Counter<'endpoint' | 'kind'>;
  readonly #backgroundRefreshes: Counter<'endpoint' | 'result'>;
  readonly #tipRefreshes: Counter<'network' | 'result'>;

  constructor(sources: MetricSources) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'clarity_cache_' });
    const requestTallies = this.#requestTallies;
    this.#requests = new Counter({
      name: 'clarity_cache_http_requests_total',
      help: 'HTTP requests answered, by route pattern, method and status code',
      labelNames: ['route', 'method', 'status'],
      registers,
      collect() {
        publish(this, requestTallies);
      },
    });
    this.#requestDuration = new TallyHistogram(
      'clarity_cache_http_request_duration_seconds',
      'Time to answer an HTTP request, by route pattern',
      'route',
      [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10],
      this.registry,
    );
    const cacheTallies = this.#cacheTallies;
    this.#cache = new Counter({
      name: 'clarity_cache_cache_requests_total',
      help: 'Cache lookups by endpoint and outcome (hit, miss, bypass, coalesced)',
      labelNames: ['endpoint', 'outcome'],
      registers,
      collect() {
        publish(this, cacheTallies);
      },
    });
    this.#upstreamAttempts = new Counter({
      name: 'clarity_cache_upstream_attempts_total',
      help: 'HTTP attempts made upstream (retries included), by network, endpoint kind and outcome',
      labelNames: ['network', 'kind', 'outcome'],
      registers,
    });
    this.#upstreamLatency = new Histogram({
      name: 'clarity_cache_upstream_latency_seconds',
      help: 'Duration of one upstream HTTP attempt (budget wait excluded)',
      labelNames: ['network', 'kind'],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10],
      registers,
    });
    this.#budgetWait = new Histogram({
      name: 'clarity_cache_budget_wait_seconds',
      help: 'Time spent waiting for an upstream budget token, by network and result (granted, rejected)',
      labelNames: ['network', 'result'],
      buckets: [0.001, 0.01, 0.1, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.#storeErrors = new Counter({
      name: 'clarity_cache_store_errors_total',
      help: 'Cache store operations that failed (the request was still answered where possible)',
      labelNames: ['op'],
      registers,
    });
    this.#stale = new Counter({
      name: 'clarity_cache_stale_total',
      help: 'Stale entries answered (kind stale-while-revalidate, stale-if-error) or refetched (kind refetch), by endpoint',
      labelNames: ['endpoint', 'kind'],
      registers,
    });
    this.#backgroundRefreshes = new Counter({
      name: 'clarity_cache_background_refreshes_total',
      help: 'Background refreshes of stale entries (stale-while-revalidate), by endpoint and result (ok, failed)',
      labelNames: ['endpoint', 'result'],
      registers,
    });
    this.#tipRefreshes = new Counter({
      name: 'clarity_cache_tip_refreshes_total',
      help: "Chain tip refreshes (GET /v2/info, or another instance's through Redis: shared), by network and result (ok, shared, failed)",
      labelNames: ['network', 'result'],
      registers,
    });
    new Gauge({
      name: 'clarity_cache_chain_tip_height',
      help: 'The chain tip height the gateway knows, by network (absent before it learned one)',
      labelNames: ['network'],
      registers,
      collect() {
        this.reset();
        for (const network of Object.keys(sources.budgets) as Network[]) {
          const height = sources.tipHeight?.(network);
          if (height !== undefined) this.set({ network }, height);
        }
      },
    });
    new Gauge({
      name: 'clarity_cache_budget_tokens',
      help: 'Upstream budget tokens available now, by network',
      labelNames: ['network'],
      registers,
      collect() {
        for (const [network, budget] of Object.entries(sources.budgets))
          this.set({ network }, budget.available());
      },
    });
    new Gauge({
      name: 'clarity_cache_budget_queued',
      help: 'Requests waiting for an upstream budget token, by network',
      labelNames: ['network'],
      registers,
      collect() {
        for (const [network, budget] of Object.entries(sources.budgets))
          this.set({ network }, budget.queued());
      },
    });
    new Gauge({
      name: 'clarity_cache_hot_tier_entries',
      help: 'Entries held in the in-memory hot tier',
      registers,
      collect() {
        this.set(sources.hotEntries());
      },
    });
  }

  /**
   * The two per-request counters are tallied in plain maps and handed to prom-client only
   * when scraped: resolving labels is most of what a prom-client update costs, and these run
   * on every request, cache hits included.
   */
  readonly #requestTallies = new Map<string, Tally<'route' | 'method' | 'status'>>();
  readonly #cacheTallies = new Map<string, Tally<'endpoint' | 'outcome'>>();

  request(route: string, method: string, status: number, seconds: number): void {
    this.#requestDuration.observe(route, seconds);
    const key = `${route} ${method} ${status}`;
    const tally = this.#requestTallies.get(key);
    if (tally === undefined)
      this.#requestTallies.set(key, { labels: { route, method, status: String(status) }, n: 1 });
    else tally.n++;
  }

  cache(endpoint: CacheEndpoint, outcome: CacheOutcome): void {
    const key = `${endpoint} ${outcome}`;
    const tally = this.#cacheTallies.get(key);
    if (tally === undefined) this.#cacheTallies.set(key, { labels: { endpoint, outcome }, n: 1 });
    else tally.n++;
  }

  upstreamAttempt(event: AttemptEvent): void {
    this.#upstreamAttempts.inc({ network: event.network, kind: event.kind, outcome: event.outcome });
    this.#upstreamLatency.observe({ network: event.network, kind: event.kind }, event.durationMs / 1000);
  }

  budgetWait(network: Network, result: 'granted' | 'rejected', seconds: number): void {
    this.#budgetWait.observe({ network, result }, seconds);
  }

  storeError(op: string): void {
    this.#storeErrors.inc({ op });
  }

  stale(endpoint: CacheEndpoint, kind: StaleServing): void {
    const label = kind === 'refetch' ? 'refetch' : `stale-${kind}`;
    this.#stale.inc({ endpoint, kind: label });
  }

  backgroundRefresh(endpoint: CacheEndpoint, result: 'ok' | 'failed'): void {
    this.#backgroundRefreshes.inc({ endpoint, result });
  }

  tipRefresh(network: Network, result: TipRefreshResult): void {
    this.#tipRefreshes.inc({ network, result });
  }
}

/** A budget that reports how long each take() waited and whether it was granted. */
export function instrumentBudget(network: Network, budget: Budget, metrics: Metrics): Budget {
  return {
    async take() {
      const started = performance.now();
      try {
        await budget.take();
        metrics.budgetWait(network, 'granted', (performance.now() - started) / 1000);
      } catch (err) {
        metrics.budgetWait(network, 'rejected', (performance.now() - started) / 1000);
        throw err;
      }
    },
    available: () => budget.available(),
    queued: () => budget.queued(),
    close: () => budget.close(),
  };
}

interface Tally<L extends string> {
  readonly labels: Record<L, string>;
  n: number;
}

/** Set a counter to the running totals of its tallies (counters only go up, so reset + inc). */
function publish<L extends string>(counter: Counter<L>, tallies: Map<string, Tally<L>>): void {
  counter.reset();
  for (const { labels, n } of tallies.values()) counter.inc(labels as never, n);
}
