/**
 * CACHE_STORE -> the CacheStore the gateway runs on.
 *
 *   sqlite  TieredStore(hot tier, SqliteStore(DATA_DIR))       persistent, the default
 *   redis   TieredStore(hot tier, RedisStore(REDIS_URL))       persistent, shared
 *   memory  MemoryStore                                        lost on restart
 *
 * The hot tier holds at most HOT_CACHE_MAX_BYTES (and HOT_CACHE_MAX_ENTRIES entries when that
 * is set). With no store behind it, the memory store is given ten times as many entries
 * (MEMORY_STORE_ENTRY_FACTOR, when a count is set) and a larger byte budget
 * (MEMORY_STORE_MAX_BYTES): it is the whole cache, but still bounded.
 */
import type { Config } from '../../config/index.js';
import type { CacheStore } from '../store.js';
import { MemoryStore } from './memory.js';
// ioredis is loaded only for CACHE_STORE=redis (start-up time of the other modes).
import type { RedisStatus } from './redis.js';
import { SqliteStore } from './sqlite.js';
import { TieredStore } from './tiered.js';

export const MEMORY_STORE_ENTRY_FACTOR = 10;
const MEMORY_STORE_MAX_BYTES = 256 * 1024 * 1024;
/** Hot-tier byte budget when none is configured (HOT_CACHE_MAX_BYTES's default). */
export const HOT_TIER_MAX_BYTES = 32 * 1024 * 1024;

/** Store operations whose failures are reported instead of thrown. */
export type StoreOp = 'get' | 'set' | 'close' | 'connect';

export interface StoreHooks {
  /** A persistent-store failure that was absorbed (the hot tier answered instead). */
  onError(err: unknown, op: StoreOp): void;
  /** Redis connection transitions (CACHE_STORE=redis only). */
  onRedisStatus?(status: RedisStatus, err?: unknown): void;
  /** A shared (Redis) entry was written or removed (CACHE_STORE=redis only): see hot-tier-sync.ts. */
  onSharedChange?(key: string): void;
}

type StoreConfig = Pick<Config, 'cacheStore' | 'dataDir' | 'redisUrl' | 'hotCacheMaxEntries'> &
  Partial<Pick<Config, 'hotCacheMaxBytes'>>;

/**
 * Build the configured store. For redis, an unreachable server at start-up does not stop
 * the gateway: the failure is reported as op 'connect', the hot tier serves, and the client
 * keeps reconnecting in the background.
 */
export async function createStore(config: StoreConfig, hooks: StoreHooks): Promise<CacheStore> {
  const hot = {
    maxEntries: config.hotCacheMaxEntries,
    maxBytes: config.hotCacheMaxBytes ?? HOT_TIER_MAX_BYTES,
  };
  const onError = (err: unknown, op: StoreOp): void => hooks.onError(err, op);
  switch (config.cacheStore) {
    case 'memory':
      return new MemoryStore({
        maxEntries:
          config.hotCacheMaxEntries === undefined
            ? undefined
            : config.hotCacheMaxEntries * MEMORY_STORE_ENTRY_FACTOR,
        maxBytes: MEMORY_STORE_MAX_BYTES,
      });
    case 'sqlite':
      return new TieredStore(hot, SqliteStore.open(config.dataDir), { onError });
    case 'redis': {
      if (config.redisUrl === undefined) throw new Error('CACHE_STORE=redis needs REDIS_URL');
      const { RedisStore } = await import('./redis.js');
      const redis = new RedisStore({
        url: config.redisUrl,
        ...(hooks.onRedisStatus === undefined ? {} : { onStatus: hooks.onRedisStatus.bind(hooks) }),
      });
      try {
        await redis.connect();
      } catch (err) {
        onError(err, 'connect');
      }
      return new TieredStore(hot, redis, {
        onError,
        ...(hooks.onSharedChange === undefined ? {} : { onChange: hooks.onSharedChange.bind(hooks) }),
      });
    }
  }
}
