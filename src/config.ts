/**
 * Environment -> frozen, validated configuration. Every limit of the interface is a default
 * here (decisions.md, "Configuration"); an invalid value stops start-up with one line naming
 * the variable.
 */
import path from 'node:path';
import { ConfigError } from './config-error.js';
import { loadUpstreamDefinitions, type UpstreamDefinition } from './upstream/definitions.js';

export { ConfigError } from './config-error.js';
export type { UpstreamDefinition } from './upstream/definitions.js';

export type Network = 'mainnet' | 'testnet';
export const NETWORKS: readonly Network[] = ['mainnet', 'testnet'];
export type CacheStoreKind = 'sqlite' | 'memory' | 'redis';
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface Config {
  readonly port: number;
  readonly host: string;
  /** Each network's first (preferred) upstream URL. */
  readonly upstreamUrls: Readonly<Record<Network, string>>;
  /** Every upstream of both networks, each network's in preference order (extensions.md section 3). */
  readonly upstreams: readonly UpstreamDefinition[];
  readonly stacksApiKey: string | undefined;
  readonly cacheStore: CacheStoreKind;
  readonly dataDir: string;
  readonly redisUrl: string | undefined;
  readonly upstreamTimeoutMs: number;
  readonly upstreamRetries: number;
  readonly upstreamRetryBaseMs: number;
  /** Longest Retry-After the client will honour before a retry, in ms. */
  readonly upstreamRetryAfterCapMs: number;
  readonly upstreamRateLimitPerMinute: number;
  readonly upstreamQueueTimeoutMs: number;
  /** Consecutive transient failures that open an upstream's circuit. */
  readonly upstreamBreakerFailures: number;
  /** How long an open circuit skips its upstream before one probe. */
  readonly upstreamBreakerCooldownMs: number;
  /** Send a second attempt elsewhere after this long without an answer; undefined = off. */
  readonly upstreamHedgeMs: number | undefined;
  /** Blocks behind the network's highest seen tip before an upstream is skipped for latest-state reads. */
  readonly upstreamMaxLagBlocks: number;
  /** Requests one client may have waiting for an upstream budget token. */
  readonly upstreamMaxWaitingPerClient: number;
  /** Take the client's address from the first X-Forwarded-For hop. */
  readonly trustProxy: boolean;
  /** Entries held in the in-memory hot tier in front of the persistent store. */
  readonly hotCacheMaxEntries: number;
  /** Request body limit in bytes (decisions.md: 1 MiB). */
  readonly bodyLimitBytes: number;
  readonly logLevel: LogLevel;
  /** Admin API bearer token; the admin routes exist only when it is set. */
  readonly adminToken: string | undefined;
  readonly shutdownGraceMs: number;
}

type Env = Record<string, string | undefined>;

function str(env: Env, name: string, fallback: string): string {
  const v = env[name];
  return v === undefined || v.trim() === '' ? fallback : v.trim();
}

function optional(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

function int(env: Env, name: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const raw = optional(env, name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${n}`);
  return n;
}

function oneOf<T extends string>(env: Env, name: string, fallback: T, allowed: readonly T[]): T {
  const raw = str(env, name, fallback).toLowerCase();
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(name, `must be one of ${allowed.join(', ')}, got "${raw}"`);
  }
  return raw as T;
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = optional(env, name);
  if (raw === undefined) return fallback;
  const v = raw.toLowerCase();
  if (v === 'true' || v === '1') return true;
  if (v === 'false' || v === '0') return false;
  throw new ConfigError(name, `must be true or false, got "${raw}"`);
}

export function loadConfig(env: Env = process.env): Config {
  const cacheStore = oneOf<CacheStoreKind>(env, 'CACHE_STORE', 'sqlite', ['sqlite', 'memory', 'redis']);
  const redisUrl = optional(env, 'REDIS_URL');
  if (cacheStore === 'redis') {
    if (redisUrl === undefined) throw new ConfigError('REDIS_URL', 'is required when CACHE_STORE=redis');
    if (!/^rediss?:\/\//.test(redisUrl))
      throw new ConfigError('REDIS_URL', `must be a redis:// URL, got "${redisUrl}"`);
  }
  const stacksApiKey = optional(env, 'STACKS_API_KEY');
  const upstreamRateLimitPerMinute = int(env, 'UPSTREAM_RATE_LIMIT_PER_MINUTE', 20, 1);
  const upstreams = loadUpstreamDefinitions(env, {
    apiKey: stacksApiKey,
    rateLimitPerMinute: upstreamRateLimitPerMinute,
  }).map((u) => Object.freeze(u));
  const firstUrl = (network: Network): string => upstreams.find((u) => u.network === network)!.url;
  const hedge = int(env, 'UPSTREAM_HEDGE_MS', 0, 0);
  const config: Config = {
    port: int(env, 'PORT', 3000, 0, 65535),
    host: str(env, 'HOST', '0.0.0.0'),
    upstreamUrls: Object.freeze({ mainnet: firstUrl('mainnet'), testnet: firstUrl('testnet') }),
    upstreams: Object.freeze(upstreams),
    stacksApiKey,
    cacheStore,
    dataDir: path.resolve(str(env, 'DATA_DIR', './data')),
    redisUrl,
    upstreamTimeoutMs: int(env, 'UPSTREAM_TIMEOUT_MS', 5000, 1),
    upstreamRetries: int(env, 'UPSTREAM_RETRIES', 3, 0, 10),
    upstreamRetryBaseMs: int(env, 'UPSTREAM_RETRY_BASE_MS', 500, 0),
    upstreamRetryAfterCapMs: int(env, 'UPSTREAM_RETRY_AFTER_CAP_MS', 10_000, 0),
    upstreamRateLimitPerMinute,
    upstreamQueueTimeoutMs: int(env, 'UPSTREAM_QUEUE_TIMEOUT_MS', 10_000, 0),
    upstreamBreakerFailures: int(env, 'UPSTREAM_BREAKER_FAILURES', 5, 1),
    upstreamBreakerCooldownMs: int(env, 'UPSTREAM_BREAKER_COOLDOWN_MS', 30_000, 1),
    upstreamHedgeMs: hedge === 0 ? undefined : hedge,
    upstreamMaxLagBlocks: int(env, 'UPSTREAM_MAX_LAG_BLOCKS', 2, 0),
    upstreamMaxWaitingPerClient: int(env, 'UPSTREAM_MAX_WAITING_PER_CLIENT', 16, 0),
    trustProxy: bool(env, 'TRUST_PROXY', false),
    hotCacheMaxEntries: int(env, 'HOT_CACHE_MAX_ENTRIES', 10_000, 1),
    bodyLimitBytes: int(env, 'BODY_LIMIT_BYTES', 1024 * 1024, 1024),
    logLevel: oneOf<LogLevel>(env, 'LOG_LEVEL', 'info', [
      'fatal',
      'error',
      'warn',
      'info',
      'debug',
      'trace',
      'silent',
    ]),
    adminToken: optional(env, 'ADMIN_TOKEN'),
    shutdownGraceMs: int(env, 'SHUTDOWN_GRACE_MS', 10_000, 0),
  };
  return Object.freeze(config);
}
