/**
 * Wiring step: watched reads (docs/watch.md). The hub learns blocks from the event observer
 * (once applied, with its proof of what each block left unchanged), from another instance's
 * observer through Redis (followed in a ledger of this instance's own, so that the same proofs
 * hold here), and from every /v2/info the gateway reads; subscriptions live in Redis for a
 * fleet, else in memory.
 */
import type { FastifyBaseLogger } from 'fastify';
import { LedgerMirror } from '../chain/observer/ledger-mirror.js';
import { nodeContractSource } from '../chain/observer/node-source.js';
import type { ChainTracker } from '../chain/tracker.js';
import type { ContractSourcePort } from '../clarity/analysis/index.js';
import type { Config } from '../config/index.js';
import type { Network } from '../network.js';
import type { Metrics } from '../observability/metrics.js';
import type { RedisScaleOut } from '../scale-out.js';
import type { CurrencyProof } from '../service/currency-proof.js';
import { evaluator } from '../service/watch/evaluate.js';
import { MemoryRegistry } from '../service/watch/registry.js';
import { WatchHub } from '../service/watch/watch-hub.js';
import { WatchService } from '../service/watch/watch-service.js';
import { ledgerProof, type ObserverWiring } from './observer.js';
import type { Services } from './services.js';

/**
 * How long another instance's observer is relied on after its last block: a fleet whose
 * observer went quiet (its node, or the instance, is down) polls /v2/info again.
 */
const MIRROR_QUIET_MS = 30_000;

export function createWatch(
  config: Config,
  { readOnly, routes }: Services,
  chain: ChainTracker,
  wiring: {
    readonly observed: ObserverWiring | undefined;
    readonly scaleOut: RedisScaleOut | undefined;
    readonly contractSource: ContractSourcePort | undefined;
    readonly metrics: Metrics;
    readonly log: FastifyBaseLogger;
  },
): WatchService {
  const { observed, scaleOut, metrics, log } = wiring;
  const own = observed?.proof.network;
  /** The proof of each network whose blocks come from an observer: this instance's, or mirrored. */
  const proofs = new Map<Network, CurrencyProof>();
  if (observed !== undefined) proofs.set(observed.proof.network, observed.proof);
  const mirrors = new Map<Network, LedgerMirror>();
  const mirrorOf = (network: Network): LedgerMirror => {
    let mirror = mirrors.get(network);
    if (mirror === undefined) {
      const source =
        wiring.contractSource ??
        (routes === undefined
          ? () => Promise.reject(new Error('no node routes to read contract sources through'))
          : nodeContractSource((req) => routes.answer(req), network));
      const m = new LedgerMirror(network, source);
      mirror = m;
      mirrors.set(network, m);
      proofs.set(network, ledgerProof(network, m));
    }
    return mirror;
  };
  const observes = (network: Network): boolean => {
    if (network === own) return true;
    const at = mirrors.get(network)?.lastAppliedAt;
    return at !== undefined && Date.now() - at <= Math.max(MIRROR_QUIET_MS, 6 * config.chainTipMaxAgeMs);
  };

  const hub = new WatchHub({
    evaluate: evaluator(readOnly),
    observed: observes,
    // The first block after a read is watched can already skip it: its reach is asked now.
    watched: (network, read) => proofs.get(network)?.dependencies(read.contractId, read.functionName),
    unchanged: (network, read, since, block) =>
      proofs.get(network)?.unchangedSince(read.contractId, read.functionName, since, block.height) === true,
    currentBlock: async (network) => ({ ...(await chain.currentBlock(network)), receivedAt: Date.now() }),
    maxAgeMs: config.chainTipMaxAgeMs,
    metrics: metrics.watch,
    onError: (err) => log.error({ err }, 'watched reads: unexpected failure'),
  });
  metrics.watch.counts = () => ({ streams: hub.streams, reads: hub.reads });
  observed?.observer.onBlock((block) => hub.block(observed.proof.network, block, true));
  chain.onDescribed((network, block) => hub.block(network, { ...block, receivedAt: Date.now() }, false));
  scaleOut?.observedTips.onApplied((block) => {
    if (block.network === own) return;
    const now = Date.now();
    mirrorOf(block.network).apply(block, now);
    hub.block(block.network, { ...block, receivedAt: now }, true);
  });
  return new WatchService(readOnly, scaleOut?.subscriptions ?? new MemoryRegistry(), hub, {
    maxReads: config.watchMaxReads,
    maxStreamsPerKey: config.watchMaxStreamsPerKey,
    maxStreamsAnonymous: config.watchMaxStreamsAnonymous,
    idleTtlS: config.watchIdleTtlS,
  });
}
