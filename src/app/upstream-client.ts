/**
 * Wiring step: the upstreams of both networks (docs/upstreams.md) and the client that sends to
 * them. Selection, failover, breakers, hedging, lag and the fair queue for budget tokens all
 * live in the pool and the attempt loop; this only gives them their settings and their log
 * lines and metrics.
 */

import type { FastifyBaseLogger } from 'fastify';
import { indexBlockHash } from '../chain/block-id.js';
import type { ChainIdentities } from '../chain/identity.js';
import { identityOf } from '../chain/identity.js';
import type { ChainTracker } from '../chain/tracker.js';
import type { Config } from '../config/index.js';
import { SecretRedactor } from '../config/redact.js';
import { NETWORKS, type Network } from '../network.js';
import { ConsensusLog } from '../observability/consensus-log.js';
import type { Metrics } from '../observability/metrics.js';
import type { UpstreamHealth } from '../observability/upstream-health.js';
import type { RedisScaleOut } from '../scale-out.js';
import type { Budget } from '../upstream/budget/upstream-budget.js';
import type { NodeApi } from '../upstream/node-api.js';
import { createPool, type Upstream, type UpstreamPool } from '../upstream/pool.js';
import { StacksNodeClient, type StacksNodeClientOptions } from '../upstream/stacks-node.js';
import { type StrikeSync, Strikes } from '../upstream/strikes.js';

/** The node API the gateway reads through; one built here can also be drained and closed. */
export type GatewayNode = NodeApi & { close?(): Promise<void> | void; drain?(): void };

export function createUpstreamPool(
  config: Config,
  budgets: Record<string, Budget>,
  wiring: {
    readonly scaleOut: RedisScaleOut | undefined;
    readonly metrics: Metrics;
    readonly log: FastifyBaseLogger;
  },
): UpstreamPool {
  const { scaleOut, metrics, log } = wiring;
  return createPool(config, budgets, {
    settings: {
      breakerFailures: config.upstreamBreakerFailures,
      breakerCooldownMs: config.upstreamBreakerCooldownMs,
      // A probe that never reports (its instance died) blocks others no longer than an attempt can take.
      probeLeaseMs: config.upstreamTimeoutMs + 1000,
      maxLagBlocks: config.upstreamMaxLagBlocks,
      queueTimeoutMs: config.upstreamQueueTimeoutMs,
      maxWaitingPerClient: config.upstreamMaxWaitingPerClient,
    },
    ...(scaleOut === undefined ? {} : { breakerSync: scaleOut.breakers }),
    onBreaker: (u, state) => {
      if (state === 'open') {
        log.warn(
          {
            network: u.network,
            upstream: u.id,
            url: u.label,
            cooldownMs: config.upstreamBreakerCooldownMs,
          },
          'upstream circuit open: skipping this upstream until one probe succeeds',
        );
      } else {
        log.info({ network: u.network, upstream: u.id, url: u.label }, 'upstream circuit closed');
      }
    },
    onAcquire: (network, upstream, waitedMs) => metrics.budgetWait(network, upstream?.id, waitedMs / 1000),
  });
}

/** The client of the pool's upstreams: every attempt counted and kept for /ready, every /v2/info's chain learned. */
export function createNodeClient(
  config: Config,
  pool: UpstreamPool,
  wiring: {
    readonly metrics: Metrics;
    readonly health: UpstreamHealth;
    readonly log: FastifyBaseLogger;
    readonly secretValues: readonly string[];
    readonly identities: ChainIdentities;
    /** Bound late: the tip tracker is built from this client's answers. */
    readonly plausibleTip: (network: Network, height: number) => boolean;
    /** The fleet's strikes (CACHE_STORE=redis). */
    readonly strikeSync?: StrikeSync | undefined;
  },
): StacksNodeClient {
  const { metrics, health, identities, log } = wiring;
  return new StacksNodeClient({
    ...consensusOf(config, pool, wiring.strikeSync, metrics, log),
    config,
    pool,
    logger: wiring.log,
    onAttempt: (event) => {
      metrics.upstreamAttempt(event);
      health.record(event);
    },
    secrets: new SecretRedactor(wiring.secretValues),
    // Each upstream's report kept apart: one serving another chain is excluded, not believed.
    onInfo: (network, info, upstream) => identities.learn(network, identityOf(info), upstream.id),
    plausibleTip: wiring.plausibleTip,
  });
}

/**
 * Attested answers (docs/consensus.md), when a network's rule asks more than one upstream: the
 * strikes (the fleet's through Redis), the metrics, the dispute log.
 */
function consensusOf(
  config: Config,
  pool: UpstreamPool,
  strikeSync: StrikeSync | undefined,
  metrics: Metrics,
  log: FastifyBaseLogger,
): { consensus?: NonNullable<StacksNodeClientOptions['consensus']> } {
  if (NETWORKS.every((network) => config.upstreamConsensus[network].n === 1)) return {};
  const strikes = new Strikes({
    limit: config.upstreamConsensusStrikes,
    sync: strikeSync,
    onSitOut: (id, remainingMs) => {
      const upstream = pool.byId(id);
      log.warn(
        { network: upstream?.network, upstream: id, url: upstream?.label, remainingMs },
        `upstream ${id} lost ${config.upstreamConsensusStrikes} attested votes: it sits out of every selection for now`,
      );
    },
    onSyncError: (err) => log.debug({ err }, 'consensus strikes: redis operation failed; counted here'),
  });
  const file = config.upstreamConsensusLog;
  const disputes =
    file === undefined
      ? undefined
      : new ConsensusLog(file, (err) =>
          log.warn({ err, file }, 'UPSTREAM_CONSENSUS_LOG cannot be written; votes go on'),
        );
  return {
    consensus: {
      rules: config.upstreamConsensus,
      low: config.upstreamConsensusLow,
      strikes,
      onVote: (network, outcome) => metrics.consensus.vote(network, outcome),
      onStrike: (upstream) => metrics.consensus.strike(upstream.network, upstream.id),
      onRecord: (record) => {
        if (record.outcome !== 'agreed') {
          log.warn(
            { network: record.network, outcome: record.outcome, read: record.read, block: record.block },
            'attested vote: the upstreams did not agree',
          );
        }
        disputes?.write(record);
      },
    },
  };
}

/**
 * Where attested votes are held (docs/consensus.md): the newest block whose index block hash
 * the tracker holds within CHAIN_TIP_MAX_AGE_MS (the event observer's, or another instance's
 * through Redis), else the block its coalesced /v2/info describes. Asked again `from` an
 * upstream that did not know that block: the tip that upstream's /v2/info names, else a
 * forced /v2/info of the tracker's.
 */
export function pinVotes(node: GatewayNode, chain: ChainTracker, maxAgeMs: number): void {
  if (!(node instanceof StacksNodeClient) || node.consensus === undefined) return;
  node.consensus.pin = async (network, from) => {
    if (from !== undefined) {
      const info = await node.infoFrom(from);
      const hash =
        info === undefined ? undefined : indexBlockHash(info.stacks_tip, info.stacks_tip_consensus_hash);
      if (info !== undefined && hash !== undefined)
        return { height: info.stacks_tip_height, indexBlockHash: hash };
      return chain.currentBlock(network, { renew: true });
    }
    const known = chain.known(network);
    if (known?.indexBlockHash !== undefined && Date.now() - known.learnedAt <= maxAgeMs) {
      return { height: known.height, indexBlockHash: known.indexBlockHash };
    }
    return chain.currentBlock(network);
  };
  node.consensus.heightOf = (hash) => chain.heightOfBlock(hash);
}

/** The failures of the start-up round, each with its upstream. */
export type StartupRound = () => Promise<Array<{ upstream: Upstream; failure: string }>>;

/**
 * The start-up round (main.ts): one GET /v2/info of each upstream, which names each network's
 * chain and its first tip. Only for the gateway's own client of its own pool.
 */
export function startupRoundOf(
  node: GatewayNode,
  pool: UpstreamPool | undefined,
  chain: ChainTracker,
): StartupRound | undefined {
  if (!(node instanceof StacksNodeClient) || pool === undefined) return undefined;
  return async () => {
    const failures: Array<{ upstream: Upstream; failure: string }> = [];
    for (const network of NETWORKS) {
      const ups = pool.upstreams(network);
      const results = await Promise.all(ups.map((u) => node.startupCheck(u)));
      // Another chain's tip is not the network's: only the upstreams that serve its chain count.
      const infos = results.flatMap((r, i) =>
        r !== undefined && 'info' in r && pool.wrongChain?.(ups[i]!) === undefined ? [r.info] : [],
      );
      chain.believeFirst(network, infos);
      results.forEach((r, i) => {
        if (r !== undefined && 'failure' in r) failures.push({ upstream: ups[i]!, failure: r.failure });
      });
    }
    return failures;
  };
}
