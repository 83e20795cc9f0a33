/**
 * Coalescing across instances: several ReadThroughCaches ("instances"), each over its own
 * hot tier and RedisStore connection and with its own RedisCoalescer, sharing one real
 * redis-server. Waits are event-based: a loader that holds until released, and the
 * coalescer's onWait hook telling that an instance waits for another's load.
 */
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ReadThroughCache } from '../../../src/cache/read-through.js';
import { RedisCoalescer } from '../../../src/cache/redis-coalescer.js';
import { RedisStore } from '../../../src/cache/stores/redis.js';
import { TieredStore } from '../../../src/cache/stores/tiered.js';
import { GatewayError, SHARED_GATEWAY_FAILURES } from '../../../src/errors.js';
import { startRedis } from '../../support/redis-server.js';

const server = await startRedis();

interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(err: unknown): void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

interface Instance {
  readonly cache: ReadThroughCache;
  readonly coalescer: RedisCoalescer;
  readonly redis: RedisStore;
  /** Resolves the first time this instance waits for another's load of key. */
  waiting(key: string): Promise<void>;
}

describe.skipIf(server === undefined)(
  'RedisCoalescer: coalescing across instances on a real redis-server',
  () => {
    let admin: Redis;
    let prefix = '';
    let n = 0;
    const closers: Array<() => Promise<void>> = [];

    const instance = async (
      options: { pubsub?: boolean; lockTtlMs?: number; maxWaitMs?: number; url?: string } = {},
    ): Promise<Instance> => {
      const redis = new RedisStore({
        url: options.url ?? server!.url,
        keyPrefix: prefix,
        retryBaseMs: 20,
        retryMaxMs: 100,
      });
      try {
        await redis.connect();
      } catch {
        // Some tests want an unreachable Redis.
      }
      const store = new TieredStore({ maxEntries: 100 }, redis);
      const waits = new Map<string, Deferred<void>>();
      const waitFor = (key: string): Deferred<void> => {
        let d = waits.get(key);
        if (d === undefined) {
          d = deferred<void>();
          waits.set(key, d);
        }
        return d;
      };
      const coalescer = new RedisCoalescer({
        client: redis.redis,
        failures: SHARED_GATEWAY_FAILURES,
        keyPrefix: prefix,
        lockTtlMs: options.lockTtlMs ?? 3000,
        ...(options.pubsub === undefined ? {} : { pubsub: options.pubsub }),
        ...(options.maxWaitMs === undefined ? {} : { maxWaitMs: options.maxWaitMs }),
        onWait: (key) => waitFor(key).resolve(),
      });
      if (options.pubsub !== false && redis.isReady()) await coalescer.whenSubscribed();
      closers.push(async () => {
        await coalescer.close();
        await store.close();
      });
      return {
        cache: new ReadThroughCache(store, { coalescer }),
        coalescer,
        redis,
        waiting: (key) => waitFor(key).promise,
      };
    };

    /** A loader that counts its calls and holds each until `release`. */
    const gatedLoader = (value: string) => {
      const gate = deferred<void>();
      const started = deferred<void>();
      let calls = 0;
      return {
        load: async () => {
          calls++;
          started.resolve();
          await gate.promise;
          return value;
        },
        release: () => gate.resolve(),
        started: started.promise,
        get calls() {
          return calls;
        },
      };
    };

    beforeAll(async () => {
      admin = new Redis(server!.url, { lazyConnect: true });
      await admin.connect();
    });

    afterEach(async () => {
      for (const close of closers.splice(0)) await close();
    });

    afterAll(async () => {
      admin.disconnect();
      await server!.stop();
    });

    const fresh = () => {
      prefix = `co${++n}:`;
      return prefix;
    };

    it('one instance loads; the other waits and gets the value without loading', async () => {
      fresh();
      const [a, b] = [await instance(), await instance()];
      const loaderA = gatedLoader('v1');
      const loaderB = gatedLoader('never');

      const first = a.cache.get('ro:k', loaderA.load);
      await loaderA.started;
      const second = b.cache.get('ro:k', loaderB.load);
      await b.waiting('ro:k');
      loaderA.release();

      const [ra, rb] = await Promise.all([first, second]);
      expect(ra).toMatchObject({ value: 'v1', outcome: 'miss' });
      expect(rb).toMatchObject({ value: 'v1', outcome: 'coalesced' });
      expect(loaderA.calls + loaderB.calls).toBe(1);
      // The lock is gone and the value is shared. The holder releases its lock after answering,
      // without waiting (a miss pays no extra round trip), and on a fresh Redis the release
      // script is first refused (NOSCRIPT) and sent again: Redis is asked until it is done.
      await vi.waitFor(async () => expect(await admin.exists(`${prefix}lock:ro:k`)).toBe(0), {
        timeout: 2000,
        interval: 10,
      });
      expect((await b.cache.get('ro:k', loaderB.load)).outcome).toBe('hit');
    });

    it('a burst spread over three instances, many requests each, makes one load', async () => {
      fresh();
      const instances = [await instance(), await instance(), await instance()];
      let calls = 0;
      const gate = deferred<void>();
      const load = async () => {
        calls++;
        await gate.promise;
        return 'burst';
      };
      const all = instances.flatMap((inst) =>
        Array.from({ length: 10 }, () => inst.cache.get('ro:burst', load)),
      );
      // Two of the three instances wait for the third.
      let waiting = 0;
      for (const inst of instances) void inst.waiting('ro:burst').then(() => waiting++);
      await expect.poll(() => waiting).toBe(2);
      gate.resolve();
      const results = await Promise.all(all);
      expect(calls).toBe(1);
      expect(new Set(results.map((r) => r.value))).toEqual(new Set(['burst']));
      expect(results.filter((r) => r.outcome === 'miss')).toHaveLength(1);
    });

    it('shares a GatewayError of the loading instance with the waiting ones', async () => {
      fresh();
      const [a, b] = [await instance(), await instance()];
      const gate = deferred<void>();
      let calls = 0;
      const failing = async (): Promise<string> => {
        calls++;
        await gate.promise;
        throw new GatewayError(
          'UPSTREAM_API_ERROR',
          'no such contract',
          { retryable: false },
          { variant: 'unknown-contract' },
        );
      };
      const first = a.cache.get('abi:x', failing);
      await expect.poll(() => calls).toBe(1);
      const second = b.cache.get('abi:x', failing);
      await b.waiting('abi:x');
      gate.resolve();
      const errors = await Promise.all([first.catch((e: unknown) => e), second.catch((e: unknown) => e)]);
      for (const err of errors) {
        expect(err).toBeInstanceOf(GatewayError);
        expect(err).toMatchObject({ code: 'UPSTREAM_API_ERROR', status: 404, message: 'no such contract' });
      }
      expect(calls).toBe(1);
    });

    it('takes over when the lock holder dies (its lock expires without a value)', async () => {
      fresh();
      const a = await instance({ lockTtlMs: 200 });
      // A dead instance's lock: nobody renews it, nobody publishes.
      await admin.set(`${prefix}lock:ro:orphan`, 'dead-instance:1', 'PX', 200);
      let calls = 0;
      const started = performance.now();
      const result = await a.cache.get('ro:orphan', async () => {
        calls++;
        return 'recovered';
      });
      expect(result.value).toBe('recovered');
      expect(calls).toBe(1);
      // It waited for the dead lock to expire, not for the long maxWait.
      const waited = performance.now() - started;
      expect(waited).toBeGreaterThanOrEqual(150);
      expect(waited).toBeLessThan(2000);
    });

    it('a live holder keeps its lock past lockTtlMs by renewing it', async () => {
      fresh();
      const [a, b] = [await instance({ lockTtlMs: 150 }), await instance({ lockTtlMs: 150 })];
      const slow = gatedLoader('slow');
      const other = gatedLoader('dup');
      const first = a.cache.get('ro:slow', slow.load);
      await slow.started;
      const second = b.cache.get('ro:slow', other.load);
      await b.waiting('ro:slow');
      // Several lock lifetimes pass while a is still loading: the lock stays a's, b never loads.
      const lockKey = `${prefix}lock:ro:slow`;
      const holder = await admin.get(lockKey);
      expect(holder).not.toBeNull();
      const seen = new Set<string | null>();
      const t0 = performance.now();
      await expect
        .poll(
          async () => {
            seen.add(await admin.get(lockKey));
            return performance.now() - t0;
          },
          { interval: 50, timeout: 5000 },
        )
        .toBeGreaterThan(600);
      expect([...seen]).toEqual([holder]);
      expect(other.calls).toBe(0);
      slow.release();
      expect((await second).value).toBe('slow');
      expect((await first).value).toBe('slow');
      expect(other.calls).toBe(0);
    });

    it('a bust does not join a load that began before it: it loads after it, and its value stays', async () => {
      fresh();
      const [a, b] = [await instance(), await instance()];
      const loaderA = gatedLoader('old');
      const loaderB = gatedLoader('new');
      const first = a.cache.get('ro:bust', loaderA.load);
      await loaderA.started;
      const second = b.cache.get('ro:bust', loaderB.load, { bust: true });
      await b.waiting('ro:bust');
      // The older load ends: b does not take its value, but loads once the lock is free.
      loaderA.release();
      expect(await first).toMatchObject({ value: 'old', outcome: 'miss' });
      await loaderB.started;
      loaderB.release();
      expect(await second).toMatchObject({ value: 'new', outcome: 'bypass', stored: true });
      expect(loaderB.calls).toBe(1);
      expect((await b.redis.get('ro:bust'))?.value).toBe('new');
    });

    it('a bust coalesces on a load that began after it started', async () => {
      fresh();
      const [a, b] = [await instance(), await instance()];
      const readGate = deferred<void>();
      const readStarted = deferred<void>();
      const loaderA = gatedLoader('newer');
      // a holds the lock but has not begun loading (its re-read of the store is held).
      const first = a.coalescer.run('ro:late', {
        load: loaderA.load,
        read: async () => {
          readStarted.resolve();
          await readGate.promise;
          return undefined;
        },
        stores: false,
        fresh: false,
      });
      await readStarted.promise;
      let bLoads = 0;
      const second = b.coalescer.run('ro:late', {
        load: async () => {
          bLoads++;
          return 'never';
        },
        read: async () => undefined,
        stores: false,
        fresh: true,
      });
      await b.waiting('ro:late');
      // Make sure a's load begins in a later millisecond than b's start.
      await new Promise((resolve) => setTimeout(resolve, 2));
      readGate.resolve();
      await loaderA.started;
      loaderA.release();
      expect(await first).toMatchObject({ value: 'newer', loadedHere: true });
      expect(await second).toMatchObject({ value: 'newer', loadedHere: false });
      expect(bLoads).toBe(0);
    });

    it('without pub/sub, waiters poll the store and still make one load', async () => {
      fresh();
      const [a, b] = [await instance({ pubsub: false }), await instance({ pubsub: false })];
      const loaderA = gatedLoader('polled');
      const loaderB = gatedLoader('never');
      const first = a.cache.get('ro:poll', loaderA.load);
      await loaderA.started;
      const second = b.cache.get('ro:poll', loaderB.load);
      await b.waiting('ro:poll');
      loaderA.release();
      expect((await second).value).toBe('polled');
      expect((await first).value).toBe('polled');
      expect(loaderB.calls).toBe(0);
    });

    it('a value loaded with skipCache elsewhere is stored by a waiter that wants it stored', async () => {
      fresh();
      const [a, b] = [await instance(), await instance()];
      const loaderA = gatedLoader('unstored');
      const first = a.cache.get('ro:skip', loaderA.load, { skip: true });
      await loaderA.started;
      const second = b.cache.get('ro:skip', async () => 'never');
      await b.waiting('ro:skip');
      loaderA.release();
      expect((await second).value).toBe('unstored');
      await first;
      expect(await admin.exists(`${prefix}k:ro:skip`)).toBe(1);
    });

    it('loads by itself after maxWaitMs when the holder stays alive but silent', async () => {
      fresh();
      const [a, b] = [await instance(), await instance({ maxWaitMs: 200 })];
      const stuck = gatedLoader('late');
      const first = a.cache.get('ro:stuck', stuck.load);
      await stuck.started;
      const result = await b.cache.get('ro:stuck', async () => 'own');
      expect(result).toMatchObject({ value: 'own', outcome: 'miss' });
      stuck.release();
      await first;
    });

    it('with Redis unreachable, loads at once (in-process coalescing only) and never fails', async () => {
      fresh();
      const a = await instance({ url: 'redis://127.0.0.1:1' });
      let calls = 0;
      const gate = deferred<void>();
      const load = async () => {
        calls++;
        await gate.promise;
        return 'local';
      };
      const results = Promise.all(Array.from({ length: 5 }, () => a.cache.get('ro:down', load)));
      await expect.poll(() => calls).toBe(1);
      gate.resolve();
      expect((await results).map((r) => r.value)).toEqual(Array(5).fill('local'));
      expect(calls).toBe(1);
    });
  },
);
