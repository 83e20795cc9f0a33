import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createStore, MEMORY_STORE_ENTRY_FACTOR } from '../../../src/cache/stores/create.js';
import { MemoryStore } from '../../../src/cache/stores/memory.js';
import { RedisStore } from '../../../src/cache/stores/redis.js';
import { SqliteStore } from '../../../src/cache/stores/sqlite.js';
import { TieredStore } from '../../../src/cache/stores/tiered.js';
import type { Config } from '../../../src/config/index.js';
import { startRedis } from '../../support/redis-server.js';
import { runStoreContract } from './store-contract.js';
import { tmpDir } from './tmp-dir.js';

const redis = await startRedis();
afterAll(async () => {
  await redis?.stop();
});

let redisPrefixes = 0;
const uniquePrefix = (): string => `t${process.pid}-${++redisPrefixes}:`;

runStoreContract('memory', async ({ now }) => {
  const store = new MemoryStore({ maxEntries: 10_000, now });
  return { store, cleanup: () => store.close() };
});

runStoreContract('sqlite', async ({ now }) => {
  const tmp = tmpDir('sqlite');
  const store = SqliteStore.open(tmp.dir, 'contract.db', { now });
  return {
    store,
    cleanup: async () => {
      await store.close();
      tmp.remove();
    },
  };
});

runStoreContract('tiered (memory hot tier over sqlite)', async ({ now }) => {
  const tmp = tmpDir('tiered');
  const cold = SqliteStore.open(tmp.dir, 'contract.db', { now });
  const onError = vi.fn();
  const store = new TieredStore({ maxEntries: 8 }, cold, { now, onError });
  return {
    store,
    cleanup: async () => {
      await store.close();
      tmp.remove();
      // Nothing failed in the cold store, so nothing was absorbed.
      expect(onError).not.toHaveBeenCalled();
    },
  };
});

describe.skipIf(redis === undefined)('with a redis-server', () => {
  runStoreContract('redis', async ({ now }) => {
    const store = new RedisStore({ url: redis!.url, keyPrefix: uniquePrefix(), now });
    await store.connect();
    return { store, cleanup: () => store.close() };
  });

  runStoreContract('tiered (memory hot tier over redis)', async ({ now }) => {
    const cold = new RedisStore({ url: redis!.url, keyPrefix: uniquePrefix(), now });
    await cold.connect();
    const store = new TieredStore({ maxEntries: 8 }, cold, { now });
    return { store, cleanup: () => store.close() };
  });
});

describe('createStore', () => {
  const base = { dataDir: '', redisUrl: undefined, hotCacheMaxEntries: 3 } satisfies Partial<Config>;

  it('memory: a bounded MemoryStore of hotCacheMaxEntries * factor entries', async () => {
    const store = await createStore({ ...base, cacheStore: 'memory' }, { onError: vi.fn() });
    expect(store).toBeInstanceOf(MemoryStore);
    for (let i = 0; i < 3 * MEMORY_STORE_ENTRY_FACTOR + 5; i++) await store.set(`k:${i}`, 'v');
    expect((store as MemoryStore).size).toBe(3 * MEMORY_STORE_ENTRY_FACTOR);
    await store.close();
  });

  it('sqlite: a tiered store over a SQLite file in dataDir, hot tier of hotCacheMaxEntries', async () => {
    const tmp = tmpDir('factory');
    const dataDir = path.join(tmp.dir, 'nested', 'data');
    try {
      const store = await createStore({ ...base, cacheStore: 'sqlite', dataDir }, { onError: vi.fn() });
      expect(store).toBeInstanceOf(TieredStore);
      const tiered = store as TieredStore;
      expect(tiered.cold).toBeInstanceOf(SqliteStore);
      expect(fs.existsSync(path.join(dataDir, 'clarity-cache.db'))).toBe(true);
      for (let i = 0; i < 10; i++) await store.set(`k:${i}`, 'v');
      expect(tiered.hotSize).toBe(3);
      expect(await store.list('k:')).toHaveLength(10);
      await store.close();
    } finally {
      tmp.remove();
    }
  });

  it.skipIf(redis === undefined)('redis: a tiered store over a connected RedisStore', async () => {
    const onRedisStatus = vi.fn();
    const store = await createStore(
      { ...base, cacheStore: 'redis', redisUrl: redis!.url },
      { onError: vi.fn(), onRedisStatus },
    );
    const cold = (store as TieredStore).cold as RedisStore;
    expect(cold).toBeInstanceOf(RedisStore);
    expect(cold.isReady()).toBe(true);
    expect(onRedisStatus).toHaveBeenCalledWith('ready', undefined);
    await store.set('factory:k', 'v');
    expect(await cold.get('factory:k')).toMatchObject({ value: 'v' });
    await store.delete('factory:k');
    await store.close();
    expect(cold.isReady()).toBe(false);
  });

  it('redis: an unreachable server is reported, and the hot tier still answers', async () => {
    const onError = vi.fn();
    const onRedisStatus = vi.fn();
    // Nothing listens on port 1.
    const store = await createStore(
      { ...base, cacheStore: 'redis', redisUrl: 'redis://127.0.0.1:1' },
      { onError, onRedisStatus },
    );
    try {
      expect(onError).toHaveBeenCalledWith(expect.any(Error), 'connect');
      expect(onRedisStatus).toHaveBeenCalledWith('down', expect.any(Error));
      await expect(store.set('k:1', 'v')).rejects.toThrow();
      expect((await store.get('k:1'))?.value).toBe('v');
    } finally {
      await store.close();
    }
  });

  it('redis: refuses a missing REDIS_URL', async () => {
    await expect(createStore({ ...base, cacheStore: 'redis' }, { onError: vi.fn() })).rejects.toThrow(
      /REDIS_URL/,
    );
  });
});
