/**
 * Wiring step: usage metered per key (docs/usage.md). The rows live where the cache does: a
 * table of the SQLite file, hashes of the shared Redis (the fleet's rows), or memory. The
 * recorder aggregates answers in memory and writes them once a second, and on close.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { CacheStore } from '../cache/store.js';
import { RedisStore } from '../cache/stores/redis.js';
import { SqliteStore } from '../cache/stores/sqlite.js';
import type { Config } from '../config/index.js';
import { MemoryUsageStore } from '../service/usage/memory-store.js';
import { UsageRecorder } from '../service/usage/recorder.js';
import { RedisUsageStore } from '../service/usage/redis-store.js';
import { SqliteUsageStore } from '../service/usage/sqlite-store.js';
import type { UsageStore } from '../service/usage/usage.js';

export function createUsage(config: Config, store: CacheStore, log: FastifyBaseLogger): UsageRecorder {
  const backing = store.backing ?? store;
  let rows: UsageStore;
  if (backing instanceof SqliteStore) rows = new SqliteUsageStore(backing.database);
  else if (backing instanceof RedisStore) rows = new RedisUsageStore(backing.redis, backing.keyPrefix);
  else rows = new MemoryUsageStore();
  return new UsageRecorder({
    store: rows,
    retentionDays: config.usageRetentionDays,
    onError: (err, op) =>
      log.warn({ err, op }, 'usage rows: store operation failed; figures are kept for the next write'),
  });
}
