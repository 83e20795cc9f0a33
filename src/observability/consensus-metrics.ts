/**
 * Attested answers' metrics (docs/consensus.md): votes by how they ended, strikes per upstream,
 * and whether each upstream sits out now (read from the pool at scrape time).
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Network } from '../network.js';
import type { VoteOutcome } from '../upstream/consensus.js';
import type { UpstreamPool } from '../upstream/pool.js';

export class ConsensusMetrics {
  readonly #votes: Counter<'network' | 'outcome'>;
  readonly #strikes: Counter<'network' | 'upstream'>;

  constructor(registry: Registry, pool: () => UpstreamPool | undefined) {
    const registers = [registry];
    this.#votes = new Counter({
      name: 'clarity_cache_consensus_votes_total',
      help: 'Attested votes by outcome: agreed (k upstreams gave the same answer), disputed, low (fewer than k could vote)',
      labelNames: ['network', 'outcome'],
      registers,
    });
    this.#strikes = new Counter({
      name: 'clarity_cache_consensus_strikes_total',
      help: 'Strikes given to an upstream on the losing side of a decided vote',
      labelNames: ['network', 'upstream'],
      registers,
    });
    new Gauge({
      name: 'clarity_cache_upstream_sitting_out',
      help: 'Whether an upstream sits out of every selection for lost attested votes (1) or not (0)',
      labelNames: ['network', 'upstream'],
      registers,
      collect() {
        const p = pool();
        if (p === undefined) return;
        for (const u of p.upstreams()) {
          this.set({ network: u.network, upstream: u.id }, p.sittingOut?.(u) === true ? 1 : 0);
        }
      },
    });
  }

  vote(network: Network, outcome: VoteOutcome): void {
    this.#votes.inc({ network, outcome });
  }

  strike(network: Network, upstream: string): void {
    this.#strikes.inc({ network, upstream });
  }
}
