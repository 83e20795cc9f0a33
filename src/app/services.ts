/**
 * Wiring step: what the gateway does, over the cache and the node API. The services read
 * through an ObservedNode, so every answer's tip reaches the tracker.
 */

import type { ReadThroughCache } from '../cache/read-through.js';
import { ObservedNode } from '../chain/observed-node.js';
import type { ChainTracker } from '../chain/tracker.js';
import type { Config } from '../config/index.js';
import type { Metrics } from '../observability/metrics.js';
import { AbiRegistry } from '../service/abi-registry.js';
import { BatchService } from '../service/batch.js';
import { NodeRouteService } from '../service/node-route-service.js';
import { ReadOnlyService } from '../service/read-only.js';
import type { NodeApi } from '../upstream/node-api.js';

export interface Services {
  readonly abis: AbiRegistry;
  readonly readOnly: ReadOnlyService;
  /** The node routes of the endpoint table; undefined when the node API cannot forward them. */
  readonly routes: NodeRouteService | undefined;
  readonly batch: BatchService;
}

export function createServices(
  config: Config,
  cache: ReadThroughCache,
  rawNode: NodeApi,
  chain: ChainTracker,
  metrics: Metrics,
): Services {
  const node = new ObservedNode(rawNode, chain);
  const abis = new AbiRegistry(cache, node, config.abiMemoMaxBytes, config.cacheNegativeTtlS * 1000);
  const readOnly = new ReadOnlyService(cache, abis, node, {
    chain,
    maxBlocks: config.cacheMaxBlocks,
    staleWhileRevalidateS: config.cacheStaleWhileRevalidateS,
    staleIfErrorS: config.cacheStaleIfErrorS,
    staleMaxS: config.cacheStaleMaxS,
    nodeMaxBlocks: config.nodeMaxBlocks,
  });
  readOnly.onCorrupt = () => metrics.storeCorrupt();
  abis.onCorrupt = () => metrics.storeCorrupt();
  // The node routes of the endpoint table (docs/node-routes.md), when the node API forwards them.
  const routes =
    rawNode.send === undefined
      ? undefined
      : new NodeRouteService(cache, node as Required<Pick<NodeApi, 'send'>>, {
          chain,
          maxBlocks: config.nodeMaxBlocks,
          defaultNetwork: config.nodeDefaultNetwork,
          timedMs: config.chainTipMaxAgeMs,
          negativeTtlMs: config.cacheNegativeTtlS * 1000,
          staleWhileRevalidateS: config.cacheStaleWhileRevalidateS,
          staleIfErrorS: config.cacheStaleIfErrorS,
          staleMaxS: config.cacheStaleMaxS,
        });
  if (routes !== undefined) routes.onCorrupt = () => metrics.storeCorrupt();
  // "consistent" batches pin to the tracker's current block (one shared /v2/info).
  const batch = new BatchService(readOnly, chain);
  return { abis, readOnly, routes, batch };
}
