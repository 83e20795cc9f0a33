/**
 * Wiring step: tip knowledge, learned from every answer (the services read through an
 * ObservedNode, see services.ts) and, on demand, from /v2/info; with Redis, shared with the
 * other instances and moved by their observers' tips.
 */

import type { FastifyBaseLogger } from 'fastify';
import type { CacheStore } from '../cache/store.js';
import { StoreSharedTips } from '../chain/shared-tips.js';
import { ChainTracker } from '../chain/tracker.js';
import type { Config } from '../config/index.js';
import type { Metrics } from '../observability/metrics.js';
import type { RedisScaleOut } from '../scale-out.js';
import type { NodeApi } from '../upstream/node-api.js';

export function createChainTracker(
  config: Config,
  node: NodeApi,
  store: CacheStore,
  wiring: {
    readonly scaleOut: RedisScaleOut | undefined;
    readonly metrics: Metrics;
    readonly log: FastifyBaseLogger;
  },
): ChainTracker {
  const { scaleOut, metrics, log } = wiring;
  const sharedStore = store.backing ?? store;
  const chain = new ChainTracker({
    node,
    maxAgeMs: config.chainTipMaxAgeMs,
    maxAdvance: config.chainTipMaxAdvance,
    shared:
      scaleOut === undefined
        ? undefined
        : new StoreSharedTips(sharedStore, scaleOut.coalescer, (err) =>
            log.debug({ err }, 'shared chain tip: redis operation failed'),
          ),
    onRefresh: (network, result) => metrics.tipRefresh(network, result),
    onRefreshError: (network, err) =>
      log.debug({ err, network }, 'chain tip refresh failed; block-bounded reads go upstream'),
  });
  // Tips another instance's event observer learned move this instance's tip at once.
  scaleOut?.observedTips.onTip((tip) =>
    chain.learnFromPeer(tip.network, { height: tip.height, indexBlockHash: tip.indexBlockHash }),
  );
  return chain;
}
