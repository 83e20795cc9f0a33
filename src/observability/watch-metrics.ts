/**
 * Watched reads' metrics (docs/watch.md): open streams and watched reads (read from the hub at
 * scrape time), evaluations by how they ended, events sent, streams dropped, and the time from
 * a block's arrival to its events being written.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Network } from '../network.js';
import type { WatchMetricsPort } from '../service/watch/watch-hub.js';

export interface WatchCounts {
  readonly streams: number;
  readonly reads: number;
}

export class WatchMetrics implements WatchMetricsPort {
  readonly #evaluations: Counter<'network' | 'result'>;
  readonly #events: Counter<'network' | 'event'>;
  readonly #dropped: Counter<'reason'>;
  readonly #delivery: Histogram<'network'>;
  /** Bound when the hub exists (metrics are made first). */
  counts: (() => WatchCounts) | undefined;

  constructor(registry: Registry) {
    const registers = [registry];
    const counts = (): WatchCounts => this.counts?.() ?? { streams: 0, reads: 0 };
    new Gauge({
      name: 'clarity_cache_watch_streams',
      help: 'Event streams of watched reads open on this instance',
      registers,
      collect() {
        this.set(counts().streams);
      },
    });
    new Gauge({
      name: 'clarity_cache_watch_reads',
      help: 'Distinct reads watched by the streams open on this instance',
      registers,
      collect() {
        this.set(counts().reads);
      },
    });
    this.#evaluations = new Counter({
      name: 'clarity_cache_watch_evaluations_total',
      help: 'Evaluations of watched reads at a block: value, error, no-answer (transient failure), proven (unchanged by the event observer’s proof, no read made)',
      labelNames: ['network', 'result'],
      registers,
    });
    this.#events = new Counter({
      name: 'clarity_cache_watch_events_total',
      help: 'Events written to watched reads’ streams, by kind',
      labelNames: ['network', 'event'],
      registers,
    });
    this.#dropped = new Counter({
      name: 'clarity_cache_watch_streams_dropped_total',
      help: 'Event streams ended by the gateway: slow-consumer (more than WATCH_MAX_UNSENT_BYTES unsent), deleted',
      labelNames: ['reason'],
      registers,
    });
    this.#delivery = new Histogram({
      name: 'clarity_cache_watch_delivery_seconds',
      help: 'Time from a block’s arrival to its events being written to every stream',
      labelNames: ['network'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
  }

  evaluated(network: Network, result: 'value' | 'error' | 'no-answer' | 'proven'): void {
    this.#evaluations.inc({ network, result });
  }

  sent(network: Network, event: 'values' | 'reset'): void {
    this.#events.inc({ network, event });
  }

  delivered(network: Network, seconds: number): void {
    this.#delivery.observe({ network }, seconds);
  }

  dropped(reason: 'slow-consumer' | 'deleted'): void {
    this.#dropped.inc({ reason });
  }
}
