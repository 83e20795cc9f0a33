/**
 * What several instances share besides the cache when CACHE_STORE=redis: one upstream budget
 * (RedisBudget per network) and coalescing of identical misses across instances
 * (RedisCoalescer). Built once per gateway by createGateway.
 *
 * It has its own Redis connection (plus the subscribers of the coalescer and the hot-tier
 * sync), apart from the cache store's: the budget is needed before the store exists, and a
 * slow cache command never queues in front of a budget decision. The connection's
 * transitions are logged once each ("redis unavailable ..." / "redis connection ready"), and
 * so are the budgets' switches to and from their local fallback. Readiness (/ready) probes
 * Redis through the cache store, which is on the same server.
 */

import type { CrossInstanceCoalescer } from './cache/cross-instance-coalescer.js';
import { HotTierSync } from './cache/hot-tier-sync.js';
import { RedisCoalescer } from './cache/redis-coalescer.js';
import { RedisTipChannel } from './chain/tip-channel.js';
import type { Config } from './config/index.js';
import { SHARED_GATEWAY_FAILURES } from './errors.js';
import { RedisQuota } from './http/admission/redis-quota.js';
import { NETWORKS } from './network.js';
import { KEY_PREFIX, RedisConnection } from './redis/connection.js';
import { RedisRegistry } from './service/watch/redis-registry.js';
import { RedisBudget } from './upstream/budget/redis-budget.js';
import { budgetSettings } from './upstream/budget/upstream-budget.js';
import { RedisBreakerSync } from './upstream/redis-breaker-sync.js';
import { RedisStrikeSync } from './upstream/redis-strike-sync.js';

/** The pino methods used (a Fastify/pino logger fits). */
export interface ScaleOutLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface RedisScaleOut {
  /** One shared budget per upstream, by upstream id. */
  readonly budgets: Readonly<Record<string, RedisBudget>>;
  /** Circuit-breaker transitions and probe claims shared by the instances. */
  readonly breakers: RedisBreakerSync;
  /** Attested answers' strikes and sit-outs, counted for the fleet (docs/consensus.md). */
  readonly strikes: RedisStrikeSync | undefined;
  readonly coalescer: CrossInstanceCoalescer;
  /** Evicts other instances' hot copies of changed entries. */
  readonly hotTier: HotTierSync;
  /** Tips the event observer learned, announced to every instance (docs/events.md). */
  readonly observedTips: RedisTipChannel;
  /** API key and client quotas counted once for the fleet (docs/access-control.md). */
  readonly quota: RedisQuota;
  /** Watched reads' subscriptions and stream counts, for the fleet (docs/watch.md). */
  readonly subscriptions: RedisRegistry;
  /** Close budgets, coalescer and connections. Idempotent. */
  close(): Promise<void>;
}

type ScaleOutConfig = Pick<
  Config,
  | 'redisUrl'
  | 'upstreams'
  | 'upstreamRateLimitPerMinute'
  | 'upstreamQueueTimeoutMs'
  | 'upstreamTimeoutMs'
  | 'upstreamRetries'
> &
  Partial<Pick<Config, 'upstreamConsensus'>>;

export interface RedisScaleOutOptions {
  /** Key prefix, as the cache store's. Default KEY_PREFIX. */
  readonly keyPrefix?: string;
  /** Lock lifetime of the coalescer (how soon a dead holder is replaced). Default 3000. */
  readonly lockTtlMs?: number;
}

/**
 * Connect (an unreachable Redis does not stop start-up: budgets fall back to local buckets
 * and coalescing to in-process until it is back) and build budgets and coalescer.
 */
export async function createRedisScaleOut(
  config: ScaleOutConfig,
  log: ScaleOutLogger,
  options: RedisScaleOutOptions = {},
): Promise<RedisScaleOut> {
  if (config.redisUrl === undefined) throw new Error('CACHE_STORE=redis needs REDIS_URL');
  const keyPrefix = options.keyPrefix ?? KEY_PREFIX;
  const connection = new RedisConnection({
    url: config.redisUrl,
    onStatus: (status, err) => {
      if (status === 'down') {
        log.error(
          { err },
          'redis unavailable: hot-tier hits are still served, misses go upstream under the local budget; reconnecting',
        );
      } else {
        log.info({}, 'redis connection ready');
      }
    },
  });
  try {
    await connection.connect();
  } catch {
    // Reported by onStatus; the client keeps reconnecting.
  }
  const client = connection.client;

  // One shared budget per upstream, at its own rate (a network's first upstream is named after
  // the network, so single-upstream keys stay cc:budget:mainnet / cc:budget:testnet).
  const budgets: Record<string, RedisBudget> = {};
  for (const u of config.upstreams) {
    budgets[u.id] = new RedisBudget({
      client,
      id: u.id,
      keyPrefix,
      ...budgetSettings({
        upstreamRateLimitPerMinute: u.rateLimitPerMinute,
        upstreamQueueTimeoutMs: config.upstreamQueueTimeoutMs,
      }),
      onModeChange: (mode, err) => {
        if (mode === 'local') {
          log.warn(
            { err, network: u.network, upstream: u.id },
            'upstream budget: redis unreachable, using this instance’s local token bucket',
          );
        } else {
          log.info({ network: u.network, upstream: u.id }, 'upstream budget: shared through redis again');
        }
      },
    });
  }
  const breakers = new RedisBreakerSync({
    client,
    keyPrefix,
    onError: (err) => log.debug({ err }, 'circuit breaker sync: redis operation failed'),
  });

  // Only with attested answers on (a subscriber connection of its own otherwise unused).
  const strikes = NETWORKS.some((network) => (config.upstreamConsensus?.[network].n ?? 1) > 1)
    ? new RedisStrikeSync({
        client,
        keyPrefix,
        onError: (err) => log.debug({ err }, 'consensus strikes sync: redis operation failed'),
      })
    : undefined;

  // A live holder renews its lock however long its load takes; a waiter gives up on it only
  // after the longest an upstream call can take (budget wait, then every attempt timing out).
  const maxWaitMs =
    config.upstreamQueueTimeoutMs + (config.upstreamRetries + 1) * config.upstreamTimeoutMs + 5_000;
  const coalescer = new RedisCoalescer({
    client,
    keyPrefix,
    maxWaitMs,
    failures: SHARED_GATEWAY_FAILURES,
    ...(options.lockTtlMs === undefined ? {} : { lockTtlMs: options.lockTtlMs }),
    onWait: (key) => log.debug({ key }, 'coalescing: waiting for another instance’s load'),
    onError: (err, op) => log.debug({ err, op }, 'coalescing: redis operation failed'),
  });

  const hotTier = new HotTierSync({
    client,
    keyPrefix,
    onError: (err) => log.debug({ err }, 'hot-tier sync: redis operation failed'),
  });

  const observedTips = new RedisTipChannel({
    client,
    keyPrefix,
    onError: (err) => log.debug({ err }, 'observed tips: redis operation failed'),
  });

  const subscriptions = new RedisRegistry(client, keyPrefix, (err) =>
    log.debug({ err }, 'watched reads: redis operation failed'),
  );

  let closing: Promise<void> | undefined;
  return {
    subscriptions,
    budgets,
    breakers,
    strikes,
    coalescer,
    hotTier,
    observedTips,
    quota: new RedisQuota(client, keyPrefix),
    close: () => {
      closing ??= (async () => {
        for (const b of Object.values(budgets)) b.close();
        await breakers.close();
        await strikes?.close();
        await coalescer.close();
        await hotTier.close();
        observedTips.close();
        await subscriptions.close();
        await connection.close();
      })();
      return closing;
    },
  };
}
