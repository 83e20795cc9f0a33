/**
 * Wiring step: the event observer (docs/events.md), when EVENT_OBSERVER_PORT is set. A deployed
 * contract's remembered 404s go at once, and entries the observer proves current stay fresh
 * across blocks that did not touch them.
 */

import type { FastifyBaseLogger } from 'fastify';
import type { BlockLedger, EntryDependencies } from '../chain/block-ledger.js';
import { startObserver } from '../chain/observer/app-wiring.js';
import type { EventObserver } from '../chain/observer/start.js';
import type { ChainTracker } from '../chain/tracker.js';
import type { ContractSourcePort, DependencyAnalyzer } from '../clarity/analysis/index.js';
import type { Config } from '../config/index.js';
import type { Network } from '../network.js';
import type { Metrics } from '../observability/metrics.js';
import type { RedisScaleOut } from '../scale-out.js';
import { parseContractRef } from '../service/contract-ref.js';
import { CurrencyProof } from '../service/currency-proof.js';
import type { Services } from './services.js';

/** The observer and the proof it gives the services (and the watched reads). */
export interface ObserverWiring {
  readonly observer: EventObserver;
  readonly proof: CurrencyProof;
}

export async function wireObserver(
  config: Config,
  contractSource: ContractSourcePort | undefined,
  { abis, readOnly, routes }: Services,
  chain: ChainTracker,
  wiring: {
    readonly metrics: Metrics;
    readonly log: FastifyBaseLogger;
    readonly scaleOut: RedisScaleOut | undefined;
  },
): Promise<ObserverWiring | undefined> {
  const { metrics, log } = wiring;
  const observer = await startObserver(
    config,
    {
      contractSource,
      routes: routes === undefined ? undefined : (req) => routes.answer(req),
    },
    {
      tips: chain.tips,
      metrics: metrics.observer,
      log,
      tipChannel: wiring.scaleOut?.observedTips,
      // A deployed contract is no longer unknown: its remembered 404s (ABI, node routes) go at once.
      onDeployed: async (contractId) => {
        const [address, name] = contractId.split('.') as [string, string];
        try {
          const ref = parseContractRef(address, name);
          await abis.forgetUnknown(ref);
          await routes?.forgetUnknown(ref.network, contractId);
        } catch (err) {
          log.debug({ err, contractId }, 'event observer: could not forget the deployed contract’s ABI 404');
        }
      },
    },
  );
  if (observer === undefined) return undefined;
  const network = observer.status().network;
  const proof = ledgerProof(network, observer, () => metrics.observer.keptCurrent(network));
  readOnly.useProof(proof);
  routes?.useProof(proof);
  // The tip a node's /v2/info described (at start-up, before any block) is held: the first
  // observed block that is its child continues the proofs of entries read at it.
  chain.onDescribed((described, block) => {
    if (described === network) observer.ledger.hold(block, Date.now());
  });
  return { observer, proof };
}

/** What a proof reads: a block ledger and the analysis of what functions reach. */
export interface ProvingLedger {
  readonly ledger: BlockLedger;
  readonly analyzer: DependencyAnalyzer;
  dependsOn(contractId: string, functionName?: string): Promise<EntryDependencies>;
}

/**
 * The currency proof over a ledger: this instance's event observer, or another instance's
 * followed through Redis (src/chain/observer/ledger-mirror.ts).
 */
export function ledgerProof(
  network: Network,
  source: ProvingLedger,
  onKeptCurrent?: () => void,
): CurrencyProof {
  return new CurrencyProof({
    network,
    dependsOn: (contractId, fn) => source.dependsOn(contractId, fn),
    current: (read, tipHeight) => source.ledger.current(read, tipHeight),
    generation: () => source.ledger.generation,
    analysisVersion: () => source.analyzer.version,
    learnedSince: (version) => source.analyzer.learnedSince(version),
    ...(onKeptCurrent === undefined ? {} : { onKeptCurrent }),
  });
}
