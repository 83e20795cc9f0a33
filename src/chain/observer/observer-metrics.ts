/** Metrics of the event observer (docs/events.md). */
import { Counter, Histogram, type Registry } from 'prom-client';
import type { Network } from '../../network.js';

export type BlockOutcome = 'started' | 'extended' | 'restarted' | 'duplicate';

export class ObserverMetrics {
  readonly #blocks: Counter<'network' | 'outcome'>;
  readonly #handling: Histogram<'network'>;
  readonly #rejected: Counter<'network' | 'route'>;
  readonly #invalidations: Counter<'network' | 'scope'>;
  readonly #current: Counter<'network'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.#blocks = new Counter({
      name: 'clarity_cache_observer_blocks_total',
      help: 'Blocks the node posted to the event observer, by network and outcome (started, extended, restarted after a gap or reorg, duplicate)',
      labelNames: ['network', 'outcome'],
      registers,
    });
    this.#handling = new Histogram({
      name: 'clarity_cache_observer_payload_handling_seconds',
      help: 'Time from reading a /new_block payload to having applied it (decoded, analysed, recorded)',
      labelNames: ['network'],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    });
    this.#rejected = new Counter({
      name: 'clarity_cache_observer_rejected_total',
      help: 'Event payloads the gateway could not use (answered 200; every proof ended), by network and route',
      labelNames: ['network', 'route'],
      registers,
    });
    this.#invalidations = new Counter({
      name: 'clarity_cache_observer_invalidations_total',
      help: 'What observed blocks invalidated: contracts touched (scope=contract) or everything (scope=all)',
      labelNames: ['network', 'scope'],
      registers,
    });
    this.#current = new Counter({
      name: 'clarity_cache_observer_kept_current_total',
      help: 'Cached entries answered as current at the tip because no block since their read touched them',
      labelNames: ['network'],
      registers,
    });
  }

  block(network: Network, outcome: BlockOutcome): void {
    this.#blocks.inc({ network, outcome });
  }

  handled(network: Network, seconds: number): void {
    this.#handling.observe({ network }, seconds);
  }

  rejected(network: Network, route: string): void {
    this.#rejected.inc({ network, route });
  }

  invalidated(network: Network, contracts: number | 'all'): void {
    if (contracts === 'all') this.#invalidations.inc({ network, scope: 'all' });
    else if (contracts > 0) this.#invalidations.inc({ network, scope: 'contract' }, contracts);
  }

  keptCurrent(network: Network): void {
    this.#current.inc({ network });
  }
}
