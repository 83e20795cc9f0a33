/**
 * Environment -> frozen, validated configuration. Every limit of the interface is a default
 * here (decisions.md, "Configuration"); an invalid value stops start-up with one line naming
 * the variable.
 */
import path from 'node:path';

export type Network = 'mainnet' | 'testnet';
export const NETWORKS: readonly Network[] = ['mainnet', 'testnet'];
export type CacheStoreKind = 'sqlite' | 'memory' | 'redis';
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface Config {
  readonly port: number;
  readonly host: string;
  readonly upstreamUrls: Readonly<Record<Network, string>>;
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
}

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`invalid configuration: ${variable} ${message}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

const MIB = 1024 * 1024;

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

function url(env: Env, name: string, fallback: string): string {
  const raw = str(env, name, fallback);
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(name, `must be an http(s) URL, got "${raw}"`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new ConfigError(name, `must be an http(s) URL, got "${raw}"`);
  }
  return raw.replace(/\/+$/, '');
}

export function loadConfig(env: Env = process.env): Config {
  const cacheStore = oneOf<CacheStoreKind>(env, 'CACHE_STORE', 'sqlite', ['sqlite', 'memory', 'redis']);
  const redisUrl = optional(env, 'REDIS_URL');
  if (cacheStore === 'redis') {
    if (redisUrl === undefined) throw new ConfigError('REDIS_URL', 'is required when CACHE_STORE=redis');
    if (!/^rediss?:\/\//.test(redisUrl))
      throw new ConfigError('REDIS_URL', `must be a redis:// URL, got "${redisUrl}"`);
  }
  const config: Config = {
    port: int(env, 'PORT', 3000, 0, 65535),
    host: str(env, 'HOST', '0.0.0.0'),
    upstreamUrls: Object.freeze({
      mainnet: url(env, 'STACKS_API_URL_MAINNET', 'https://api.hiro.so'),
      testnet: url(env, 'STACKS_API_URL_TESTNET', 'https://api.testnet.hiro.so'),
    }),
    stacksApiKey: optional(env, 'STACKS_API_KEY'),
    cacheStore,
    dataDir: path.resolve(str(env, 'DATA_DIR', './data')),
    redisUrl,
    upstreamTimeoutMs: int(env, 'UPSTREAM_TIMEOUT_MS', 5000, 1),
    upstreamRetries: int(env, 'UPSTREAM_RETRIES', 3, 0, 10),
    upstreamRetryBaseMs: int(env, 'UPSTREAM_RETRY_BASE_MS', 500, 0),
    upstreamRetryAfterCapMs: int(env, 'UPSTREAM_RETRY_AFTER_CAP_MS', 10_000, 0),
    upstreamRateLimitPerMinute: int(env, 'UPSTREAM_RATE_LIMIT_PER_MINUTE', 20, 1),
    upstreamQueueTimeoutMs: int(env, 'UPSTREAM_QUEUE_TIMEOUT_MS', 10_000, 0),
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
  };
  return Object.freeze(config);
}
