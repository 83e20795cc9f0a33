/**
 * Wiring step: watched reads (docs/watch.md). The hub learns blocks from the event observer
 * (once applied, with its proof of what each block left unchanged), from another instance's
 * observer through Redis, and from every /v2/info the gateway reads; subscriptions live in
 * Redis for a fleet, else in memory.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { ChainTracker } from '../chain/tracker.js';
import type { Config } from '../config/index.js';
import type { Metrics } from '../observability/metrics.js';
import type { RedisScaleOut } from '../scale-out.js';
import type { CurrencyProof } from '../service/currency-proof.js';
import type { ReadOnlyService } from '../service/read-only.js';
import { evaluator } from '../service/watch/evaluate.js';
import { MemoryRegistry } from '../service/watch/registry.js';
import { WatchHub } from '../service/watch/watch-hub.js';
import { WatchService } from '../service/watch/watch-service.js';
import type { ObserverWiring } from './observer.js';

export function createWatch(
  config: Config,
  readOnly: ReadOnlyService,
  chain: ChainTracker,
  wiring: {
    readonly observed: ObserverWiring | undefined;
    readonly scaleOut: RedisScaleOut | undefined;
    readonly metrics: Metrics;
    readonly log: FastifyBaseLogger;
  },
): WatchService {
  const { observed, scaleOut, metrics, log } = wiring;
  const proof: CurrencyProof | undefined = observed?.proof;
  const hub = new WatchHub({
    evaluate: evaluator(readOnly),
    unchanged: (network, read, since, block) =>
      proof !== undefined &&
      network === proof.network &&
      proof.unchangedSince(read.contractId, read.functionName, since, block.height),
    currentBlock: async (network) => ({ ...(await chain.currentBlock(network)), receivedAt: Date.now() }),
    observed: observed?.observer.status().network,
    maxAgeMs: config.chainTipMaxAgeMs,
    metrics: metrics.watch,
    onError: (err) => log.error({ err }, 'watched reads: unexpected failure'),
  });
  metrics.watch.counts = () => ({ streams: hub.streams, reads: hub.reads });
  observed?.observer.onBlock((block) => hub.block(observed.proof.network, block, true));
  chain.onDescribed((network, block) => hub.block(network, { ...block, receivedAt: Date.now() }, false));
  scaleOut?.observedTips.onTip((tip) =>
    hub.block(
      tip.network,
      { height: tip.height, indexBlockHash: tip.indexBlockHash, receivedAt: Date.now() },
      false,
    ),
  );
  return new WatchService(readOnly, scaleOut?.subscriptions ?? new MemoryRegistry(), hub, {
    maxReads: config.watchMaxReads,
    maxStreamsPerKey: config.watchMaxStreamsPerKey,
    maxStreamsAnonymous: config.watchMaxStreamsAnonymous,
    idleTtlS: config.watchIdleTtlS,
  });
}
