/**
 * Prometheus metrics (prom-client) on a registry of this gateway's own, so that several
 * gateways in one process (tests) never collide. Names are listed in the README.
 */

import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { type KeySpace, namespaceOfKey } from '../cache/keys.js';
import type { CacheOutcome, StaleServing } from '../cache/read-through.js';
import { ObserverMetrics } from '../chain/observer/observer-metrics.js';
import type { TipRefreshResult } from '../chain/tracker.js';
import { NETWORKS, type Network } from '../config/index.js';
import type { AttemptEvent } from '../upstream/attempts.js';
import type { UpstreamPool } from '../upstream/pool.js';
import { ConsensusMetrics } from './consensus-metrics.js';
import { KeyMetrics } from './key-metrics.js';
import { TallyHistogram } from './tally-histogram.js';
import { WatchMetrics } from './watch-metrics.js';

/**
 * Which cache an outcome belongs to: read-only results, ABIs, or node route answers; 'other'
 * for a key in no namespace of the gateway's (none is looked up today).
 */
export type CacheEndpoint = KeySpace | 'other';

/**
 * The cache a key's lookup counts under, from its namespace (src/cache/keys.ts): a remembered
 * 404 counts with the cache it stands in for (an unknown contract's ABI with the ABIs, a node
 * route's with the node routes), never as a read-only call.
 */
export function cacheEndpointOf(key: string): CacheEndpoint {
  return namespaceOfKey(key)?.space ?? 'other';
}

export interface MetricSources {
  /** The upstreams (read when scraped; undefined until built, or with an injected node). */
  readonly pool: () => UpstreamPool | undefined;
  readonly hotEntries: () => number;
  /** The known chain tip height of a network, if any (clarity_cache_chain_tip_height). */
  readonly tipHeight?: (network: Network) => number | undefined;
}

const UPSTREAM_STATES = ['ok', 'wrong-chain', 'sitting-out', 'implausible', 'open', 'lagging'] as const;

export class Metrics {
  readonly registry = new Registry();
  readonly #requestDuration: TallyHistogram;
  readonly #upstreamAttempts: Counter<'network' | 'upstream' | 'kind' | 'outcome'>;
  readonly #upstreamLatency: Histogram<'network' | 'upstream' | 'kind'>;
  readonly #budgetWait: Histogram<'network' | 'upstream' | 'result'>;
  readonly #storeErrors: Counter<'op'>;
  readonly #storeCorrupt: Counter;
  readonly #stale: Counter<'endpoint' | 'kind'>;
  readonly #backgroundRefreshes: Counter<'endpoint' | 'result'>;
  readonly #tipRefreshes: Counter<'network' | 'result'>;
  /** The event observer's counters (docs/events.md). */
  readonly observer: ObserverMetrics;
  /** Use of each API key, by name (docs/access-control.md). */
  readonly keys: KeyMetrics;
  /** Watched reads (docs/watch.md). */
  readonly watch: WatchMetrics;
  /** Attested answers (docs/consensus.md). */
  readonly consensus: ConsensusMetrics;

  constructor(sources: MetricSources) {
    const registers = [this.registry];
    this.observer = new ObserverMetrics(this.registry);
    this.keys = new KeyMetrics(this.registry);
    this.watch = new WatchMetrics(this.registry);
    this.consensus = new ConsensusMetrics(this.registry, sources.pool);
    collectDefaultMetrics({ register: this.registry, prefix: 'clarity_cache_' });
    const requestTallies = this.#requestTallies;
    // Published from the tallies at scrape time (collect): the hit path only counts in a map.
    new Counter({
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
    new Counter({
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
      help: 'HTTP attempts made upstream (retries and hedges included), by network, upstream, endpoint kind and outcome',
      labelNames: ['network', 'upstream', 'kind', 'outcome'],
      registers,
    });
    this.#upstreamLatency = new Histogram({
      name: 'clarity_cache_upstream_latency_seconds',
      help: 'Duration of one upstream HTTP attempt (budget wait excluded), by network, upstream and endpoint kind',
      labelNames: ['network', 'upstream', 'kind'],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10],
      registers,
    });
    this.#budgetWait = new Histogram({
      name: 'clarity_cache_budget_wait_seconds',
      help: 'Time spent waiting for an upstream budget token, by network, upstream that granted it ("none" when rejected) and result (granted, rejected)',
      labelNames: ['network', 'upstream', 'result'],
      buckets: [0.001, 0.01, 0.1, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.#storeCorrupt = new Counter({
      name: 'clarity_cache_store_corrupt_total',
      help: 'Stored entries found damaged (not one valid Clarity value): answered as misses, removed and fetched again',
      registers,
    });
    this.#storeErrors = new Counter({
      name: 'clarity_cache_store_errors_total',
      help: 'Cache store operations that failed (the request was still answered where possible)',
      labelNames: ['op'],
      registers,
    });
    const upstreams = () => sources.pool()?.upstreams() ?? [];
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
        for (const network of NETWORKS) {
          const height = sources.tipHeight?.(network);
          if (height !== undefined) this.set({ network }, height);
        }
      },
    });
    new Gauge({
      name: 'clarity_cache_budget_tokens',
      help: 'Upstream budget tokens available now, by network and upstream',
      labelNames: ['network', 'upstream'],
      registers,
      collect() {
        for (const u of upstreams()) this.set({ network: u.network, upstream: u.id }, u.budget.available());
      },
    });
    new Gauge({
      name: 'clarity_cache_budget_queued',
      help: 'Requests waiting for an upstream budget token, by network and upstream',
      labelNames: ['network', 'upstream'],
      registers,
      collect() {
        for (const u of upstreams()) this.set({ network: u.network, upstream: u.id }, u.budget.queued());
      },
    });
    new Gauge({
      name: 'clarity_cache_upstream_waiting',
      help: 'Requests waiting in the fair queue for any upstream budget token of the network',
      labelNames: ['network'],
      registers,
      collect() {
        const pool = sources.pool();
        if (pool === undefined) return;
        for (const network of new Set(pool.upstreams().map((u) => u.network)))
          this.set({ network }, pool.waiting(network));
      },
    });
    new Gauge({
      name: 'clarity_cache_upstream_state',
      help: "Each upstream's state (1 for the current one): ok, wrong-chain (reports another chain: excluded), sitting-out (lost attested votes: excluded), implausible, open (circuit broken), lagging",
      labelNames: ['network', 'upstream', 'state'],
      registers,
      collect() {
        const pool = sources.pool();
        for (const u of upstreams()) {
          const now = pool?.healthOf(u);
          for (const state of UPSTREAM_STATES)
            this.set({ network: u.network, upstream: u.id, state }, state === now ? 1 : 0);
        }
      },
    });
    new Gauge({
      name: 'clarity_cache_upstream_tip_height',
      help: 'The highest chain tip height each upstream reported',
      labelNames: ['network', 'upstream'],
      registers,
      collect() {
        for (const u of upstreams()) {
          const tip = u.stats.tip;
          if (tip !== undefined) this.set({ network: u.network, upstream: u.id }, tip.height);
        }
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
   * The two per-request counters are tallied here (a list of every tally, for the scrape) and
   * handed to prom-client only when scraped: resolving labels is most of what a prom-client
   * update costs, and these run on every request, cache hits included.
   */
  readonly #requestTallies: Tally<'route' | 'method' | 'status'>[] = [];
  readonly #cacheTallies: Tally<'endpoint' | 'outcome'>[] = [];
  /**
   * The same tallies reached through the label values one at a time: counting a request builds
   * no key text (joining the labels into a string and hashing it was a visible part of a
   * replayed hit's cost). The route, method and endpoint strings are the same objects every
   * time, so each lookup reuses their cached hash.
   */
  readonly #requestIndex = new Map<string, Map<string, Map<number, Tally<'route' | 'method' | 'status'>>>>();
  readonly #cacheIndex = new Map<string, Map<string, Tally<'endpoint' | 'outcome'>>>();

  request(route: string, method: string, status: number, seconds: number): void {
    this.#requestDuration.observe(route, seconds);
    const tally = this.#requestIndex.get(route)?.get(method)?.get(status);
    if (tally !== undefined) tally.n++;
    else this.#newRequestTally(route, method, status);
  }

  #newRequestTally(route: string, method: string, status: number): void {
    const tally = { labels: { route, method, status: String(status) }, n: 1 };
    this.#requestTallies.push(tally);
    let byMethod = this.#requestIndex.get(route);
    if (byMethod === undefined) {
      byMethod = new Map();
      this.#requestIndex.set(route, byMethod);
    }
    let byStatus = byMethod.get(method);
    if (byStatus === undefined) {
      byStatus = new Map();
      byMethod.set(method, byStatus);
    }
    byStatus.set(status, tally);
  }

  cache(endpoint: CacheEndpoint, outcome: CacheOutcome): void {
    const tally = this.#cacheIndex.get(endpoint)?.get(outcome);
    if (tally !== undefined) tally.n++;
    else {
      const made = { labels: { endpoint, outcome }, n: 1 };
      this.#cacheTallies.push(made);
      let byOutcome = this.#cacheIndex.get(endpoint);
      if (byOutcome === undefined) {
        byOutcome = new Map();
        this.#cacheIndex.set(endpoint, byOutcome);
      }
      byOutcome.set(outcome, made);
    }
    const slot = this.#recentSlot();
    slot.lookups++;
    if (outcome === 'hit') slot.hits++;
  }

  /** Lookups and hits per 10-second slot over the last minute (the /ready page's hit ratio). */
  readonly #recent: { start: number; hits: number; lookups: number }[] = [];

  #recentSlot(): { start: number; hits: number; lookups: number } {
    const start = Math.floor(Date.now() / 10_000) * 10_000;
    const last = this.#recent[this.#recent.length - 1];
    if (last !== undefined && last.start === start) return last;
    const slot = { start, hits: 0, lookups: 0 };
    this.#recent.push(slot);
    if (this.#recent.length > 7) this.#recent.shift();
    return slot;
  }

  /** Cache lookups and hits of the last minute (six 10-second slots). */
  recentCache(): { hits: number; lookups: number } {
    const since = Date.now() - 60_000;
    let hits = 0;
    let lookups = 0;
    for (const slot of this.#recent) {
      if (slot.start + 10_000 <= since) continue;
      hits += slot.hits;
      lookups += slot.lookups;
    }
    return { hits, lookups };
  }

  upstreamAttempt(event: AttemptEvent): void {
    const { network, upstream, kind } = event;
    this.#upstreamAttempts.inc({ network, upstream, kind, outcome: event.outcome });
    if (event.outcome !== 'aborted')
      this.#upstreamLatency.observe({ network, upstream, kind }, event.durationMs / 1000);
  }

  /** How long one attempt waited for a token, and from which upstream it came (undefined: rejected). */
  budgetWait(network: Network, upstream: string | undefined, seconds: number): void {
    this.#budgetWait.observe(
      { network, upstream: upstream ?? 'none', result: upstream === undefined ? 'rejected' : 'granted' },
      seconds,
    );
  }

  storeError(op: string): void {
    this.#storeErrors.inc({ op });
  }

  /** A stored entry found damaged: treated as a miss, removed and fetched again. */
  storeCorrupt(): void {
    this.#storeCorrupt.inc();
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

interface Tally<L extends string> {
  readonly labels: Record<L, string>;
  n: number;
}

/** Set a counter to the running totals of its tallies (counters only go up, so reset + inc). */
function publish<L extends string>(counter: Counter<L>, tallies: readonly Tally<L>[]): void {
  counter.reset();
  for (const { labels, n } of tallies) counter.inc(labels as never, n);
}
