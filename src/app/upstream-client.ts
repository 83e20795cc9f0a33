/**
 * Wiring step: the upstreams of both networks (docs/upstreams.md) and the client that sends to
 * them. Selection, failover, breakers, hedging, lag and the fair queue for budget tokens all
 * live in the pool and the attempt loop; this only gives them their settings and their log
 * lines and metrics.
 */

import type { FastifyBaseLogger } from 'fastify';
import type { ChainIdentities } from '../chain/identity.js';
import { identityOf } from '../chain/identity.js';
import type { ChainTracker } from '../chain/tracker.js';
import type { Config } from '../config/index.js';
import { SecretRedactor } from '../config/redact.js';
import { NETWORKS, type Network } from '../network.js';
import type { Metrics } from '../observability/metrics.js';
import type { UpstreamHealth } from '../observability/upstream-health.js';
import type { RedisScaleOut } from '../scale-out.js';
import type { Budget } from '../upstream/budget/upstream-budget.js';
import type { NodeApi } from '../upstream/node-api.js';
import { createPool, type Upstream, type UpstreamPool } from '../upstream/pool.js';
import { StacksNodeClient } from '../upstream/stacks-node.js';

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
  },
): StacksNodeClient {
  const { metrics, health, identities } = wiring;
  return new StacksNodeClient({
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
