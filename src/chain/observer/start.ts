/**
 * Starts the event observer (docs/events.md) for the gateway: its listener, the follower that
 * applies blocks, and the block ledger the freshness rules can consult. A usable block moves
 * the network's tip at once here and, with Redis, on every instance.
 */
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { type ContractSourcePort, DependencyAnalyzer } from '../../clarity/analysis/index.js';
import type { Config, Network } from '../../config/index.js';
import { BlockLedger, type EntryDependencies } from '../block-ledger.js';
import type { RedisTipChannel } from '../tip-channel.js';
import type { ChainTips } from '../tips.js';
import { type AppliedBlock, ChainFollower } from './follower.js';
import type { ObserverMetrics } from './observer-metrics.js';
import { createObserverServer } from './server.js';

export interface EventObserverStatus {
  readonly network: Network;
  readonly listening: string | undefined;
  readonly lastBlock:
    | { readonly height: number; readonly indexBlockHash: string; readonly ageMs: number }
    | undefined;
}

export interface EventObserver {
  readonly follower: ChainFollower;
  readonly ledger: BlockLedger;
  readonly analyzer: DependencyAnalyzer;
  readonly server: FastifyInstance;
  /** host:port it listens on. */
  readonly address: string;
  status(): EventObserverStatus;
  /**
   * What a latest-state read of `functionName` of `contractId` depends on, for the ledger's
   * proof (`ledger.current`): the contracts it reaches, or 'volatile'. Map entries, data vars
   * and constants depend on their own contract only: pass no function for them.
   */
  dependsOn(contractId: string, functionName?: string): Promise<EntryDependencies>;
  /** Told of every block once applied (not duplicates): the ledger answers proofs up to it. */
  onBlock(listener: (block: AppliedBlock) => void): void;
  close(): Promise<void>;
}

export interface EventObserverOptions {
  readonly config: Config;
  readonly network: Network;
  readonly tips: ChainTips;
  readonly source: ContractSourcePort;
  readonly metrics: ObserverMetrics;
  readonly log: FastifyBaseLogger;
  /** Announces observed tips to the other instances (CACHE_STORE=redis). */
  readonly tipChannel?: RedisTipChannel | undefined;
  /** A deploy: forget that this contract was unknown (negative ABI cache). */
  readonly onDeployed?: (contractId: string) => void | Promise<void>;
  readonly now?: () => number;
}

export async function startEventObserver(options: EventObserverOptions): Promise<EventObserver> {
  const { config, network, metrics, log } = options;
  const now = options.now ?? Date.now;
  const ledger = new BlockLedger();
  const analyzer = new DependencyAnalyzer({ source: options.source });
  const blockListeners: ((block: AppliedBlock) => void)[] = [];
  const follower = new ChainFollower({
    network,
    ledger,
    analyzer,
    now,
    onTip: (block) => {
      options.tips.learn(network, { height: block.height, indexBlockHash: block.indexBlockHash });
      options.tipChannel?.publish({ network, height: block.height, indexBlockHash: block.indexBlockHash });
    },
    onRejected: (route, reason) => {
      metrics.rejected(network, route);
      log.warn(
        { network, route, reason },
        'event observer: unusable payload (answered 200; cached proofs ended)',
      );
    },
    onApplied: (outcome, touched, handlingMs, block) => {
      metrics.block(network, outcome);
      metrics.handled(network, handlingMs / 1000);
      metrics.invalidated(network, touched.all ? 'all' : touched.contracts.size);
      if (outcome === 'restarted')
        log.info({ network }, 'event observer: block did not follow the last one (gap or reorg)');
      if (outcome !== 'duplicate') {
        options.tipChannel?.publishApplied({ network, ...block });
        for (const listener of blockListeners) listener(block);
      }
    },
    onDuplicate: () => metrics.block(network, 'duplicate'),
    onDeployed: (id) => options.onDeployed?.(id),
    onError: (err) =>
      log.error({ err, network }, 'event observer: failed to apply a block (counted as missed)'),
  });
  const server = createObserverServer({
    follower,
    bodyLimitBytes: config.eventObserverBodyLimitMb * 1024 * 1024,
  });
  await server.listen({ port: config.eventObserverPort ?? 0, host: config.eventObserverHost });
  const addr = server.server.address();
  const address = typeof addr === 'object' && addr !== null ? `${addr.address}:${addr.port}` : String(addr);
  log.info({ network, address }, 'event observer listening');
  return {
    follower,
    ledger,
    analyzer,
    server,
    address,
    dependsOn: async (contractId, functionName) => {
      if (functionName === undefined) return new Set([contractId]);
      const deps = await analyzer.dependencies(contractId, functionName);
      return deps.volatile ? 'volatile' : deps.contracts;
    },
    onBlock: (listener) => {
      blockListeners.push(listener);
    },
    status: () => {
      const last = follower.lastBlock;
      return {
        network,
        listening: address,
        lastBlock:
          last === undefined
            ? undefined
            : {
                height: last.height,
                indexBlockHash: last.indexBlockHash,
                ageMs: Math.max(0, now() - last.receivedAt),
              },
      };
    },
    close: async () => {
      await server.close();
      await follower.idle();
    },
  };
}
