/**
 * Environment -> frozen, validated configuration. Every limit of the interface is a default
 * here (decisions.md, "Configuration"); an invalid value stops start-up with one line naming
 * the variable.
 */

import path from 'node:path';
import { ConfigError } from './config-error.js';
import { redact } from './observability/redact.js';
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
  /**
   * Proxies in front of the gateway (TRUST_PROXY: false = 0, true = 1, or a count): the client's
   * address is the X-Forwarded-For entry that many hops from the right.
   */
  readonly trustProxy: number;
  /** JSON file of API keys (docs/access-control.md); undefined = keys are not used. */
  readonly apiKeysFile: string | undefined;
  /** Refuse API requests that carry no key (needs apiKeysFile). */
  readonly apiKeysRequired: boolean;
  /** Requests per minute of each keyless client address on the API routes; undefined = no limit. */
  readonly anonymousRequestsPerMinute: number | undefined;
  /** Entries held in the in-memory hot tier in front of the persistent store. */
  readonly hotCacheMaxEntries: number;
  /** Byte budget of the hot tier (approximate: UTF-16 size of keys and values plus overhead). */
  readonly hotCacheMaxBytes: number;
  /** Byte budget of the parsed-ABI memo (estimated heap size of the parsed documents). */
  readonly abiMemoMaxBytes: number;
  /** Seconds an upstream "no such contract" for an ABI is remembered; 0 = not remembered. */
  readonly cacheNegativeTtlS: number;
  /** Request body limit in bytes (decisions.md: 1 MiB). */
  readonly bodyLimitBytes: number;
  readonly logLevel: LogLevel;
  /** Admin API bearer token; the admin routes exist only when it is set. */
  readonly adminToken: string | undefined;
  readonly shutdownGraceMs: number;
  /**
   * Origins allowed by CORS on the public routes: `['*']` (any), a list of origins, or empty
   * (`CORS_ORIGINS=none`: no CORS headers at all).
   */
  readonly corsOrigins: readonly string[];
  /** Longest wait for a request's complete header section (slowloris guard). */
  readonly httpHeadersTimeoutMs: number;
  /** Longest wait for a whole request, body included. */
  readonly httpRequestTimeoutMs: number;
  /** Most client connections held open at once; beyond it new connections are dropped. */
  readonly httpMaxConnections: number;
  /** Oldest tip knowledge a tip-dependent answer may use (extensions.md section 1). */
  readonly chainTipMaxAgeMs: number;
  /** Block bound of requests that send no cacheControl.maxBlocks; undefined = none (the default). */
  readonly cacheMaxBlocks: number | undefined;
  /** Default cacheControl.staleWhileRevalidate, seconds (0 = off). */
  readonly cacheStaleWhileRevalidateS: number;
  /** Default cacheControl.staleIfError, seconds (0 = off). */
  readonly cacheStaleIfErrorS: number;
  /** How long an entry is kept past its freshness for stale answers, seconds; caps the windows. */
  readonly cacheStaleMaxS: number;
  /** Most calls one POST /contract-calls/batch may hold (extensions.md, section 4). */
  readonly batchMaxCalls: number;
  /** Port of the event observer listener (docs/events.md); undefined = off. */
  readonly eventObserverPort: number | undefined;
  readonly eventObserverHost: string;
  /** The network whose node posts its blocks to the observer (required with the port). */
  readonly eventObserverNetwork: Network | undefined;
  readonly eventObserverBodyLimitMb: number;
}

type Env = Record<string, string | undefined>;

const MIB = 1024 * 1024;
/** Longest stale window or retention accepted (seconds): ten years, as the longest ttl. */
const MAX_WINDOW_S = 315_360_000;

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

/** `false` (0), `true` (1) or a number of proxies in front of the gateway. */
function hops(env: Env, name: string): number {
  const raw = optional(env, name)?.toLowerCase();
  if (raw === undefined || raw === 'false') return 0;
  if (raw === 'true') return 1;
  if (!/^\d+$/.test(raw) || Number(raw) > 32)
    throw new ConfigError(name, `must be true, false or a number of proxies from 0 to 32, got "${raw}"`);
  return Number(raw);
}

/** API keys and the anonymous quota (docs/access-control.md). */
function access(env: Env): Pick<Config, 'apiKeysFile' | 'apiKeysRequired' | 'anonymousRequestsPerMinute'> {
  const apiKeysFile = optional(env, 'API_KEYS_FILE');
  const apiKeysRequired = bool(env, 'API_KEYS_REQUIRED', false);
  if (apiKeysRequired && apiKeysFile === undefined)
    throw new ConfigError(
      'API_KEYS_REQUIRED',
      'is true but API_KEYS_FILE is not set: no key could ever be accepted',
    );
  const anonymous = optional(env, 'ANONYMOUS_REQUESTS_PER_MINUTE');
  return {
    apiKeysFile: apiKeysFile === undefined ? undefined : path.resolve(apiKeysFile),
    apiKeysRequired,
    anonymousRequestsPerMinute:
      anonymous === undefined ? undefined : int(env, 'ANONYMOUS_REQUESTS_PER_MINUTE', 0, 1, 1_000_000),
  };
}

/** `*`, `none`, or a comma-separated list of origins (scheme://host[:port], no path). */
function origins(env: Env, name: string): readonly string[] {
  const raw = str(env, name, '*');
  if (raw === '*') return Object.freeze(['*']);
  if (raw.toLowerCase() === 'none') return Object.freeze([]);
  const list = raw
    .split(',')
    .map((o) => o.trim())
    .filter((o) => o !== '');
  for (const origin of list) {
    let parsed: URL | undefined;
    try {
      parsed = new URL(origin);
    } catch {
      parsed = undefined;
    }
    // An Origin header is exactly scheme://host[:port]: anything else could never match.
    if (parsed === undefined || parsed.origin !== origin) {
      throw new ConfigError(
        name,
        `must be *, none or a comma-separated list of origins like https://app.example.com, got "${origin}"`,
      );
    }
  }
  return Object.freeze(list);
}

function eventObserver(
  env: Env,
): Pick<
  Config,
  'eventObserverPort' | 'eventObserverHost' | 'eventObserverNetwork' | 'eventObserverBodyLimitMb'
> {
  const port =
    optional(env, 'EVENT_OBSERVER_PORT') === undefined
      ? undefined
      : int(env, 'EVENT_OBSERVER_PORT', 0, 0, 65535);
  const rawNetwork = optional(env, 'EVENT_OBSERVER_NETWORK');
  const network =
    rawNetwork === undefined ? undefined : oneOf<Network>(env, 'EVENT_OBSERVER_NETWORK', 'mainnet', NETWORKS);
  if (port !== undefined && network === undefined) {
    throw new ConfigError(
      'EVENT_OBSERVER_NETWORK',
      'is required when EVENT_OBSERVER_PORT is set (mainnet or testnet)',
    );
  }
  return {
    eventObserverPort: port,
    eventObserverHost: str(env, 'EVENT_OBSERVER_HOST', '127.0.0.1'),
    eventObserverNetwork: network,
    eventObserverBodyLimitMb: int(env, 'EVENT_OBSERVER_BODY_LIMIT_MB', 500, 1, 4096),
  };
}

export function loadConfig(env: Env = process.env): Config {
  const cacheStore = oneOf<CacheStoreKind>(env, 'CACHE_STORE', 'sqlite', ['sqlite', 'memory', 'redis']);
  const redisUrl = optional(env, 'REDIS_URL');
  if (cacheStore === 'redis') {
    if (redisUrl === undefined) throw new ConfigError('REDIS_URL', 'is required when CACHE_STORE=redis');
    if (!/^rediss?:\/\//.test(redisUrl))
      throw new ConfigError('REDIS_URL', `must be a redis:// or rediss:// URL, got "${redact(redisUrl)}"`);
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
    trustProxy: hops(env, 'TRUST_PROXY'),
    ...access(env),
    hotCacheMaxEntries: int(env, 'HOT_CACHE_MAX_ENTRIES', 10_000, 1),
    // Defaults keep RSS under the benchmark's 256 MiB bound with 1M entries in SQLite.
    hotCacheMaxBytes: int(env, 'HOT_CACHE_MAX_BYTES', 32 * MIB, 1 * MIB),
    abiMemoMaxBytes: int(env, 'ABI_MEMO_MAX_BYTES', 16 * MIB, 1 * MIB),
    // A day at most: a contract deployed after its 404 must not stay unknown for long.
    cacheNegativeTtlS: int(env, 'CACHE_NEGATIVE_TTL_S', 30, 0, 86_400),
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
    corsOrigins: origins(env, 'CORS_ORIGINS'),
    httpHeadersTimeoutMs: int(env, 'HTTP_HEADERS_TIMEOUT_MS', 10_000, 1),
    httpRequestTimeoutMs: int(env, 'HTTP_REQUEST_TIMEOUT_MS', 30_000, 1),
    httpMaxConnections: int(env, 'HTTP_MAX_CONNECTIONS', 10_000, 1),
    chainTipMaxAgeMs: int(env, 'CHAIN_TIP_MAX_AGE_MS', 5000, 0),
    cacheMaxBlocks:
      optional(env, 'CACHE_MAX_BLOCKS') === undefined ? undefined : int(env, 'CACHE_MAX_BLOCKS', 0, 0),
    cacheStaleWhileRevalidateS: int(env, 'CACHE_STALE_WHILE_REVALIDATE_S', 0, 0, MAX_WINDOW_S),
    cacheStaleIfErrorS: int(env, 'CACHE_STALE_IF_ERROR_S', 0, 0, MAX_WINDOW_S),
    cacheStaleMaxS: int(env, 'CACHE_STALE_MAX_S', 86_400, 0, MAX_WINDOW_S),
    batchMaxCalls: int(env, 'BATCH_MAX_CALLS', 100, 1, 10_000),
    ...eventObserver(env),
  };
  // Node refuses a headers timeout longer than the request timeout: say so by name instead.
  if (config.httpHeadersTimeoutMs > config.httpRequestTimeoutMs) {
    throw new ConfigError(
      'HTTP_HEADERS_TIMEOUT_MS',
      `must not exceed HTTP_REQUEST_TIMEOUT_MS (${config.httpRequestTimeoutMs}), got ${config.httpHeadersTimeoutMs}`,
    );
  }
  return Object.freeze(config);
}
