/**
 * Environment -> frozen, validated configuration. Every limit the HTTP API documents is a
 * default here (docs/api.md); an invalid value stops start-up with one line naming
 * the variable.
 */

import path from 'node:path';
import { NETWORKS, type Network } from '../network.js';
import { ConfigError } from './error.js';
import { loadUpstreamDefinitions, type UpstreamDefinition } from './upstreams.js';
import { declared } from './variables.js';

export type { Network } from '../network.js';
export { NETWORKS } from '../network.js';
export { ConfigError } from './error.js';
export type { UpstreamDefinition } from './upstreams.js';
export type CacheStoreKind = 'sqlite' | 'memory' | 'redis';
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface Config {
  readonly port: number;
  readonly host: string;
  /** Each network's first (preferred) upstream URL. */
  readonly upstreamUrls: Readonly<Record<Network, string>>;
  /** Every upstream of both networks, each network's in preference order (docs/upstreams.md). */
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
   * Attested answers per network (docs/consensus.md): a cache fill is kept only when `k` of up to
   * `n` upstreams agree at one pinned block; 1/1 = off.
   */
  readonly upstreamConsensus: Readonly<Record<Network, Consensus>>;
  /** Fewer than k votes possible: answer the error, or accept the unique most-voted answer. */
  readonly upstreamConsensusLow: 'error' | 'accept';
  /** Lost votes within 10 minutes that make an upstream sit out for 5 minutes. */
  readonly upstreamConsensusStrikes: number;
  /** File of one JSON line per disputed, low or dissented vote; undefined = none. */
  readonly upstreamConsensusLog: string | undefined;

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
  /** Most entries in the in-memory hot tier; undefined = bounded by hotCacheMaxBytes alone. */
  readonly hotCacheMaxEntries: number | undefined;
  /** Byte budget of the hot tier (approximate: UTF-16 size of keys and values plus overhead). */
  readonly hotCacheMaxBytes: number;
  /** Byte budget of the parsed-ABI memo (estimated heap size of the parsed documents). */
  readonly abiMemoMaxBytes: number;
  /** Seconds an upstream "no such contract" for an ABI is remembered; 0 = not remembered. */
  readonly cacheNegativeTtlS: number;
  /** Request body limit in bytes (docs/api.md: 1 MiB). */
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
  /** Oldest tip knowledge a tip-dependent answer may use (docs/freshness.md). */
  readonly chainTipMaxAgeMs: number;
  /** How far above the believed tip a reported height may be (docs/freshness.md). */
  readonly chainTipMaxAdvance: number;
  /** Block bound of requests that send no cacheControl.maxBlocks; undefined = none (the default). */
  readonly cacheMaxBlocks: number | undefined;
  /** NODE_MAX_BLOCKS: the block bound of the latest-state node routes (docs/node-routes.md). */
  readonly nodeMaxBlocks: number;
  /** NODE_DEFAULT_NETWORK: where node routes that name no address go. */
  readonly nodeDefaultNetwork: Network;
  /** Default cacheControl.staleWhileRevalidate, seconds (0 = off). */
  readonly cacheStaleWhileRevalidateS: number;
  /** Default cacheControl.staleIfError, seconds (0 = off). */
  readonly cacheStaleIfErrorS: number;
  /** How long an entry is kept past its freshness for stale answers, seconds; caps the windows. */
  readonly cacheStaleMaxS: number;
  /** Most calls one POST /contract-calls/batch may hold (docs/batch.md). */
  readonly batchMaxCalls: number;
  /** Watched reads (docs/watch.md): most reads per subscription. */
  readonly watchMaxReads: number;
  /** Open event streams per API key, and per client address for anonymous subscriptions. */
  readonly watchMaxStreamsPerKey: number;
  readonly watchMaxStreamsAnonymous: number;
  /** Seconds a subscription with no open stream is kept. */
  readonly watchIdleTtlS: number;
  /** Bytes a stream may leave unsent before it is dropped as a slow consumer. */
  readonly watchMaxUnsentBytes: number;
  /** Units per answer (docs/usage.md): from the cache, needing the upstream, decode. */
  readonly costs: Readonly<{ hit: number; miss: number; decode: number }>;
  /** Whole UTC days of usage rows kept, today included. */
  readonly usageRetentionDays: number;
  /** Port of the event observer listener (docs/events.md); undefined = off. */
  readonly eventObserverPort: number | undefined;
  readonly eventObserverHost: string;
  /** The network whose node posts its blocks to the observer (required with the port). */
  readonly eventObserverNetwork: Network | undefined;
  readonly eventObserverBodyLimitMb: number;
}

type Env = Record<string, string | undefined>;

/** An integer variable, its default and bounds from the table (undefined: unset and optional). */
function intVar(env: Env, name: string): number {
  const v = declared(name);
  if (v.kind.type !== 'int') throw new Error(`${name} is not declared as an integer`);
  return int(env, name, Number(v.default ?? 0), v.kind.min, v.kind.max);
}

/** An optional integer variable: undefined when unset. */
function optionalIntVar(env: Env, name: string): number | undefined {
  return optional(env, name) === undefined && declared(name).default === undefined
    ? undefined
    : intVar(env, name);
}

function strVar(env: Env, name: string): string {
  return str(env, name, declared(name).default ?? '');
}

function boolVar(env: Env, name: string): boolean {
  return bool(env, name, declared(name).default === 'true');
}

function oneOfVar<T extends string>(env: Env, name: string): T {
  const v = declared(name);
  if (v.kind.type !== 'oneOf') throw new Error(`${name} is not declared as a choice`);
  return oneOf<T>(env, name, (v.default ?? v.kind.values[0]) as T, v.kind.values as readonly T[]);
}

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
  const apiKeysRequired = boolVar(env, 'API_KEYS_REQUIRED');
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
      anonymous === undefined ? undefined : optionalIntVar(env, 'ANONYMOUS_REQUESTS_PER_MINUTE'),
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
  const port = optionalIntVar(env, 'EVENT_OBSERVER_PORT');
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
    eventObserverHost: strVar(env, 'EVENT_OBSERVER_HOST'),
    eventObserverNetwork: network,
    eventObserverBodyLimitMb: intVar(env, 'EVENT_OBSERVER_BODY_LIMIT_MB'),
  };
}

/**
 * REDIS_URL as the Redis client will read it. Every problem names the variable and never shows
 * the value, nor any part of it: it may hold a password, and in a value that does not parse
 * (or parses otherwise than meant) no part can be told to be safe.
 */
function checkRedisUrl(value: string): void {
  const hidden = '(the value is not shown: it may hold a password)';
  if (!/^rediss?:\/\//.test(value)) {
    throw new ConfigError('REDIS_URL', `must be a redis:// or rediss:// URL ${hidden}`);
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(
      'REDIS_URL',
      `does not parse as a URL (is the port a number? are special characters of the password percent-encoded?) ${hidden}`,
    );
  }
  try {
    decodeURIComponent(url.username);
    decodeURIComponent(url.password);
  } catch {
    throw new ConfigError(
      'REDIS_URL',
      `has a user name or password that is not valid percent-encoding ${hidden}`,
    );
  }
}

/** k of up to n upstreams must agree (docs/consensus.md); 1/1 = one upstream's word, as without it. */
export interface Consensus {
  readonly k: number;
  readonly n: number;
}

/**
 * UPSTREAM_CONSENSUS_<NETWORK>: `k/n` with 1 <= k <= n <= the network's upstreams, and k > n/2
 * so that two different answers can never both win a vote.
 */
function consensusVar(
  env: Env,
  name: string,
  upstreams: readonly UpstreamDefinition[],
  network: Network,
): Consensus {
  const text = (optional(env, name) ?? '1/1').trim();
  const m = /^(\d{1,3})\/(\d{1,3})$/.exec(text);
  if (m === null)
    throw new ConfigError(name, `must be k/n (two whole numbers, e.g. 2/3), got ${JSON.stringify(text)}`);
  const k = Number(m[1]);
  const n = Number(m[2]);
  const count = upstreams.filter((u) => u.network === network).length;
  if (k < 1 || k > n) throw new ConfigError(name, `needs 1 <= k <= n, got ${k}/${n}`);
  if (n > count) {
    throw new ConfigError(
      name,
      `asks ${n} upstreams but ${network} has ${count} (STACKS_API_URL_${network.toUpperCase()} or UPSTREAMS_FILE)`,
    );
  }
  if (2 * k <= n)
    throw new ConfigError(
      name,
      `needs k > n/2 (a majority), so that two answers cannot both win: got ${k}/${n}`,
    );
  return Object.freeze({ k, n });
}

export function loadConfig(env: Env = process.env): Config {
  const cacheStore = oneOfVar<CacheStoreKind>(env, 'CACHE_STORE');
  const redisUrl = optional(env, 'REDIS_URL');
  if (cacheStore === 'redis') {
    if (redisUrl === undefined) throw new ConfigError('REDIS_URL', 'is required when CACHE_STORE=redis');
    checkRedisUrl(redisUrl);
  }
  const stacksApiKey = optional(env, 'STACKS_API_KEY');
  const upstreamRateLimitPerMinute = intVar(env, 'UPSTREAM_RATE_LIMIT_PER_MINUTE');
  const upstreams = loadUpstreamDefinitions(env, {
    apiKey: stacksApiKey,
    rateLimitPerMinute: upstreamRateLimitPerMinute,
  }).map((u) => Object.freeze(u));
  const firstUrl = (network: Network): string => upstreams.find((u) => u.network === network)!.url;
  const hedge = intVar(env, 'UPSTREAM_HEDGE_MS');
  const config: Config = {
    port: intVar(env, 'PORT'),
    host: strVar(env, 'HOST'),
    upstreamUrls: Object.freeze({ mainnet: firstUrl('mainnet'), testnet: firstUrl('testnet') }),
    upstreams: Object.freeze(upstreams),
    stacksApiKey,
    cacheStore,
    dataDir: path.resolve(strVar(env, 'DATA_DIR')),
    redisUrl,
    upstreamTimeoutMs: intVar(env, 'UPSTREAM_TIMEOUT_MS'),
    upstreamRetries: intVar(env, 'UPSTREAM_RETRIES'),
    upstreamRetryBaseMs: intVar(env, 'UPSTREAM_RETRY_BASE_MS'),
    upstreamRetryAfterCapMs: intVar(env, 'UPSTREAM_RETRY_AFTER_CAP_MS'),
    upstreamRateLimitPerMinute,
    upstreamQueueTimeoutMs: intVar(env, 'UPSTREAM_QUEUE_TIMEOUT_MS'),
    upstreamBreakerFailures: intVar(env, 'UPSTREAM_BREAKER_FAILURES'),
    upstreamBreakerCooldownMs: intVar(env, 'UPSTREAM_BREAKER_COOLDOWN_MS'),
    upstreamHedgeMs: hedge === 0 ? undefined : hedge,
    upstreamMaxLagBlocks: intVar(env, 'UPSTREAM_MAX_LAG_BLOCKS'),
    upstreamMaxWaitingPerClient: intVar(env, 'UPSTREAM_MAX_WAITING_PER_CLIENT'),
    upstreamConsensus: Object.freeze({
      mainnet: consensusVar(env, 'UPSTREAM_CONSENSUS_MAINNET', upstreams, 'mainnet'),
      testnet: consensusVar(env, 'UPSTREAM_CONSENSUS_TESTNET', upstreams, 'testnet'),
    }),
    upstreamConsensusLow: oneOfVar<'error' | 'accept'>(env, 'UPSTREAM_CONSENSUS_LOW'),
    upstreamConsensusStrikes: intVar(env, 'UPSTREAM_CONSENSUS_STRIKES'),
    upstreamConsensusLog: optional(env, 'UPSTREAM_CONSENSUS_LOG'),
    trustProxy: hops(env, 'TRUST_PROXY'),
    ...access(env),
    hotCacheMaxEntries: optionalIntVar(env, 'HOT_CACHE_MAX_ENTRIES'),
    // Defaults keep RSS under the benchmark's 256 MiB bound with 1M entries in SQLite.
    hotCacheMaxBytes: intVar(env, 'HOT_CACHE_MAX_BYTES'),
    abiMemoMaxBytes: intVar(env, 'ABI_MEMO_MAX_BYTES'),
    // A day at most: a contract deployed after its 404 must not stay unknown for long.
    cacheNegativeTtlS: intVar(env, 'CACHE_NEGATIVE_TTL_S'),
    bodyLimitBytes: intVar(env, 'BODY_LIMIT_BYTES'),
    logLevel: oneOfVar<LogLevel>(env, 'LOG_LEVEL'),
    adminToken: optional(env, 'ADMIN_TOKEN'),
    shutdownGraceMs: intVar(env, 'SHUTDOWN_GRACE_MS'),
    corsOrigins: origins(env, 'CORS_ORIGINS'),
    httpHeadersTimeoutMs: intVar(env, 'HTTP_HEADERS_TIMEOUT_MS'),
    httpRequestTimeoutMs: intVar(env, 'HTTP_REQUEST_TIMEOUT_MS'),
    httpMaxConnections: intVar(env, 'HTTP_MAX_CONNECTIONS'),
    chainTipMaxAgeMs: intVar(env, 'CHAIN_TIP_MAX_AGE_MS'),
    chainTipMaxAdvance: intVar(env, 'CHAIN_TIP_MAX_ADVANCE'),
    cacheMaxBlocks: optionalIntVar(env, 'CACHE_MAX_BLOCKS'),
    nodeMaxBlocks: intVar(env, 'NODE_MAX_BLOCKS'),
    nodeDefaultNetwork: oneOfVar<Network>(env, 'NODE_DEFAULT_NETWORK'),
    cacheStaleWhileRevalidateS: intVar(env, 'CACHE_STALE_WHILE_REVALIDATE_S'),
    cacheStaleIfErrorS: intVar(env, 'CACHE_STALE_IF_ERROR_S'),
    cacheStaleMaxS: intVar(env, 'CACHE_STALE_MAX_S'),
    batchMaxCalls: intVar(env, 'BATCH_MAX_CALLS'),
    watchMaxReads: intVar(env, 'WATCH_MAX_READS'),
    watchMaxStreamsPerKey: intVar(env, 'WATCH_MAX_STREAMS_PER_KEY'),
    watchMaxStreamsAnonymous: intVar(env, 'WATCH_MAX_STREAMS_ANONYMOUS'),
    watchIdleTtlS: intVar(env, 'WATCH_IDLE_TTL_S'),
    watchMaxUnsentBytes: intVar(env, 'WATCH_MAX_UNSENT_BYTES'),
    costs: Object.freeze({
      hit: intVar(env, 'COST_HIT'),
      miss: intVar(env, 'COST_MISS'),
      decode: intVar(env, 'COST_DECODE'),
    }),
    usageRetentionDays: intVar(env, 'USAGE_RETENTION_DAYS'),
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
