import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { namespaceOf, type RedisStatus, RedisStore } from '../../../src/cache/stores/redis.js';
import { TieredStore } from '../../../src/cache/stores/tiered.js';
import { startRedis } from '../../support/redis-server.js';
import { testClock } from './store-contract.js';

const server = await startRedis();

describe('namespaceOf', () => {
  it('is the key up to and including its first colon', () => {
    expect(namespaceOf('abi:mainnet:SP1.a')).toBe('abi:');
    expect(namespaceOf('ro:x')).toBe('ro:');
    expect(namespaceOf(':x')).toBe(':');
    expect(namespaceOf('plain')).toBe('');
  });
});

describe.skipIf(server === undefined)('RedisStore against a real redis-server', () => {
  let admin: Redis;
  const stores: RedisStore[] = [];
  let n = 0;

  /** A store on its own key prefix, with status transitions recorded. */
  const makeStore = (options: { now?: () => number; url?: string } = {}) => {
    const statuses: RedisStatus[] = [];
    const store = new RedisStore({
      url: options.url ?? server!.url,
      keyPrefix: `rs${++n}:`,
      retryBaseMs: 20,
      retryMaxMs: 100,
      ...(options.now === undefined ? {} : { now: options.now }),
      onStatus: (status) => statuses.push(status),
    });
    stores.push(store);
    return { store, statuses };
  };

  beforeAll(async () => {
    admin = new Redis(server!.url, { lazyConnect: true });
    await admin.connect();
  });

  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
  });

  afterAll(async () => {
    admin.disconnect();
    await server!.stop();
  });

  it('pages keys written by a version without the lex index (it is filled from the expiry index once)', async () => {
    const { store } = makeStore();
    await store.connect();
    const p = store.keyPrefix;
    for (const name of ['b', 'a', 'c']) await store.set(`abi:mainnet:SP1.${name}`, '{}');
    // What an older version leaves behind: the expiry index only.
    await admin.del(`${p}lex:abi:`);
    const reopened = new RedisStore({ url: server!.url, keyPrefix: p });
    stores.push(reopened);
    await reopened.connect();
    expect(await reopened.listPage('abi:', undefined, 2)).toEqual(['abi:mainnet:SP1.a', 'abi:mainnet:SP1.b']);
    expect(await reopened.listPage('abi:', 'abi:mainnet:SP1.b', 2)).toEqual(['abi:mainnet:SP1.c']);
    expect(await reopened.count('abi:mainnet:')).toBe(3);
    expect(await admin.zcard(`${p}lex:abi:`)).toBe(3);
  });

  it('trims expired keys from the lex index too, so it does not grow with expired results', async () => {
    let now = Date.now();
    const { store } = makeStore({ now: () => now });
    await store.connect();
    const p = store.keyPrefix;
    for (let i = 0; i < 5; i++) await store.set(`ro:mainnet:k${i}`, 'v', 1000);
    expect(await admin.zcard(`${p}lex:ro:`)).toBe(5);
    now += 2000;
    await store.set('ro:mainnet:later', 'v');
    expect(await admin.zrange(`${p}lex:ro:`, 0, -1)).toEqual(['ro:mainnet:later']);
    expect(await admin.zrange(`${p}idx:ro:`, 0, -1)).toEqual(['ro:mainnet:later']);
  });

  it('stores under the key prefix with a real PX expiry', async () => {
    const { store } = makeStore();
    await store.connect();
    const p = store.keyPrefix;
    await store.set('ro:mainnet:a', 'v', 60_000);
    const pttl = await admin.pttl(`${p}k:ro:mainnet:a`);
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(60_000);
    // Overwriting without a ttl removes the expiry; with one, sets it again.
    await store.set('ro:mainnet:a', 'v');
    expect(await admin.pttl(`${p}k:ro:mainnet:a`)).toBe(-1);
    await store.set('ro:mainnet:a', 'v', 5_000);
    expect(await admin.pttl(`${p}k:ro:mainnet:a`)).toBeGreaterThan(0);
    // Fractional ttls round up, never down to "no expiry".
    await store.set('ro:mainnet:b', 'v', 0.4);
    expect(await admin.pttl(`${p}k:ro:mainnet:b`)).not.toBe(-1);
  });

  it('really expires in Redis: a key Redis dropped is neither read nor listed', async () => {
    const { store } = makeStore();
    await store.connect();
    await store.set('ro:x', 'v', 60_000);
    // Make Redis expire it now (instead of sleeping out the ttl).
    await admin.pexpireat(`${store.keyPrefix}k:ro:x`, 1);
    expect(await admin.exists(`${store.keyPrefix}k:ro:x`)).toBe(0);
    expect(await store.get('ro:x')).toBeUndefined();
    expect(await store.list('ro:')).toEqual([]);
  });

  it('lists from the namespace index, never with KEYS or SCAN', async () => {
    const { store } = makeStore();
    await store.connect();
    const p = store.keyPrefix;
    await store.set('abi:mainnet:SP1.a', 'a');
    await store.set('abi:testnet:ST1.b', 'b');
    await store.set('ro:mainnet:SP1.a:f', 'r');
    expect((await admin.zrange(`${p}idx:abi:`, 0, -1)).sort()).toEqual([
      'abi:mainnet:SP1.a',
      'abi:testnet:ST1.b',
    ]);
    expect(await admin.zscore(`${p}idx:abi:`, 'abi:mainnet:SP1.a')).toBe('inf');

    const monitor = await admin.duplicate().monitor();
    const commands: string[][] = [];
    monitor.on('monitor', (_time: string, args: string[]) => commands.push(args));
    // MONITOR only echoes commands issued after it started; a marker shows it is live.
    await admin.ping('monitor-start');
    expect((await store.list('abi:')).sort()).toEqual(['abi:mainnet:SP1.a', 'abi:testnet:ST1.b']);
    expect((await store.list('a')).sort()).toEqual(['abi:mainnet:SP1.a', 'abi:testnet:ST1.b']);
    await admin.ping('monitor-end');
    await vi.waitFor(() => expect(commands.some((c) => c[1] === 'monitor-end')).toBe(true));
    monitor.disconnect();

    const names = commands.map((c) => c[0]!.toLowerCase());
    expect(names).not.toContain('keys');
    expect(names).not.toContain('scan');
    expect(commands).toContainEqual(['zrangebyscore', `${p}idx:abi:`, expect.any(String), '+inf']);
    // A prefix without ':' first consults the namespace registry.
    expect(commands).toContainEqual(['smembers', `${p}namespaces`]);
    expect(commands.filter((c) => c[0] === 'zrangebyscore').map((c) => c[1])).not.toContain(`${p}idx:ro:`);
  });

  it('delete removes the key and its index entry', async () => {
    const { store } = makeStore();
    await store.connect();
    await store.set('abi:mainnet:SP1.a', 'a');
    expect(await store.delete('abi:mainnet:SP1.a')).toBe(true);
    expect(await admin.exists(`${store.keyPrefix}k:abi:mainnet:SP1.a`)).toBe(0);
    expect(await admin.zscore(`${store.keyPrefix}idx:abi:`, 'abi:mainnet:SP1.a')).toBeNull();
  });

  it('drops index members of expired or vanished keys lazily', async () => {
    const clock = testClock();
    const { store } = makeStore({ now: clock.now });
    await store.connect();
    const idx = `${store.keyPrefix}idx:abi:`;
    await store.set('abi:mainnet:short', 'v', 1_000);
    await store.set('abi:mainnet:gone', 'v');
    await store.set('abi:mainnet:kept', 'v');
    expect(await admin.zscore(idx, 'abi:mainnet:short')).toBe(String(clock.now() + 1_000));
    // Deleted behind the store's back (eviction, a manual DEL).
    await admin.del(`${store.keyPrefix}k:abi:mainnet:gone`);
    clock.advance(1_000);
    expect(await store.list('abi:')).toEqual(['abi:mainnet:kept']);
    expect(await admin.zrange(idx, 0, -1)).toEqual(['abi:mainnet:kept']);
  });

  it('trims expired index members on writes, so an unlisted namespace does not grow', async () => {
    const clock = testClock();
    const { store } = makeStore({ now: clock.now });
    await store.connect();
    const idx = `${store.keyPrefix}idx:ro:`;
    for (let i = 0; i < 5; i++) await store.set(`ro:${i}`, 'v', 100);
    expect(await admin.zcard(idx)).toBe(5);
    clock.advance(100);
    await store.set('ro:new', 'v', 100);
    expect(await admin.zrange(idx, 0, -1)).toEqual(['ro:new']);
  });

  it('fails a read of a corrupt entry instead of inventing a value', async () => {
    const { store } = makeStore();
    await store.connect();
    await admin.set(`${store.keyPrefix}k:bad`, 'not json');
    await expect(store.get('bad')).rejects.toThrow(/not JSON/);
    await admin.set(`${store.keyPrefix}k:bad`, '{"v":1}');
    await expect(store.get('bad')).rejects.toThrow(/unexpected shape/);
  });

  it('keeps votes in the field n, only when there are any, and refuses an n that is no count', async () => {
    const { store } = makeStore();
    await store.connect();
    await store.set('voted', 'a', undefined, { votes: 2 });
    await store.set('plain', 'b');
    expect(JSON.parse((await admin.get(`${store.keyPrefix}k:voted`))!)).toMatchObject({ v: 'a', n: 2 });
    expect(JSON.parse((await admin.get(`${store.keyPrefix}k:plain`))!)).not.toHaveProperty('n');
    for (const n of [0, -1, 1.5, '3', null]) {
      await admin.set(`${store.keyPrefix}k:bad`, JSON.stringify({ v: 'c', s: 3, e: null, n }));
      await expect(store.get('bad'), JSON.stringify(n)).rejects.toThrow(/unexpected shape/);
    }
  });

  it('reads a value written before staleAt and tipHeight were stored', async () => {
    const { store } = makeStore();
    await store.connect();
    await admin.set(`${store.keyPrefix}k:old:ttl`, JSON.stringify({ v: 'a', s: 1, e: 8_000_000_000_000 }));
    await admin.set(`${store.keyPrefix}k:old:forever`, JSON.stringify({ v: 'b', s: 2, e: null }));
    expect(await store.get('old:ttl')).toEqual({
      value: 'a',
      storedAt: 1,
      staleAt: 8_000_000_000_000,
      expiresAt: 8_000_000_000_000,
      tipHeight: null,
    });
    expect(await store.get('old:forever')).toEqual({
      value: 'b',
      storedAt: 2,
      staleAt: null,
      expiresAt: null,
      tipHeight: null,
    });
    await admin.set(`${store.keyPrefix}k:bad`, JSON.stringify({ v: 'c', s: 3, e: null, h: 'tall' }));
    await expect(store.get('bad')).rejects.toThrow(/unexpected shape/);
  });

  it('exposes its client and readiness', async () => {
    const { store, statuses } = makeStore();
    expect(store.isReady()).toBe(false);
    await store.connect();
    expect(store.isReady()).toBe(true);
    expect(statuses).toEqual(['ready']);
    expect(await store.redis.ping()).toBe('PONG');
    await store.close();
    expect(store.isReady()).toBe(false);
    await expect(store.connect()).rejects.toThrow(/closed/);
  });
});

describe.skipIf(server === undefined)('RedisStore through a Redis outage', () => {
  let outage: NonNullable<Awaited<ReturnType<typeof startRedis>>>;
  const closers: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    // Its own server, so killing it does not disturb the other suites.
    outage = (await startRedis())!;
  });

  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
  });

  afterAll(async () => {
    await outage.stop();
  });

  const within = <T>(promise: Promise<T>, ms: number): Promise<T> =>
    Promise.race([
      promise,
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms).unref(),
      ),
    ]);

  function tracked(url: string) {
    const seen: RedisStatus[] = [];
    const listeners = new Set<() => void>();
    const store = new RedisStore({
      url,
      keyPrefix: 'outage:',
      retryBaseMs: 20,
      retryMaxMs: 100,
      onStatus: (status) => {
        seen.push(status);
        for (const l of listeners) l();
      },
    });
    closers.push(() => store.close());
    /** Resolves once status has been reported `count` times in total. */
    const reached = (status: RedisStatus, count = 1): Promise<void> =>
      new Promise((resolve) => {
        const check = (): void => {
          if (seen.filter((s) => s === status).length >= count) {
            listeners.delete(check);
            resolve();
          }
        };
        listeners.add(check);
        check();
      });
    return { store, seen, reached };
  }

  it('fails fast while down, reports down/ready, and reconnects by itself', async () => {
    const { store, seen, reached } = tracked(outage.url);
    await store.connect();
    await store.set('abi:mainnet:SP1.a', 'v');

    await outage.kill();
    await reached('down');
    expect(store.isReady()).toBe(false);
    // No offline queue: commands are refused at once instead of waiting for Redis.
    await expect(within(store.get('abi:mainnet:SP1.a'), 1_000)).rejects.toThrow(
      /enableOfflineQueue|Connection/,
    );
    await expect(within(store.set('k:x', 'v'), 1_000)).rejects.toThrow();

    await outage.restart();
    await reached('ready', 2);
    expect(seen).toEqual(['ready', 'down', 'ready']);
    expect(store.isReady()).toBe(true);
    await store.set('k:after', 'v');
    expect((await store.get('k:after'))?.value).toBe('v');
  });

  it('a tiered store keeps answering from its hot tier while Redis is down', async () => {
    const { store: cold, reached } = tracked(outage.url);
    await cold.connect();
    const onError = vi.fn();
    const tiered = new TieredStore({ maxEntries: 100 }, cold, { onError });
    closers.push(() => tiered.close());
    await tiered.set('abi:mainnet:SP1.a', 'abi');

    await outage.kill();
    await reached('down');
    expect((await within(tiered.get('abi:mainnet:SP1.a'), 1_000))?.value).toBe('abi');
    // The write is refused (the caller reports it and does not claim it stored), promptly.
    await expect(within(tiered.set('ro:mainnet:x', 'r', 60_000), 1_000)).rejects.toThrow(/writeable/);
    expect((await tiered.get('ro:mainnet:x'))?.value).toBe('r');
    expect(await within(tiered.get('ro:mainnet:absent'), 1_000)).toBeUndefined();
    expect(onError).toHaveBeenCalledWith(expect.any(Error), 'get');
    // Listing needs Redis: it fails instead of answering from a partial hot tier.
    await expect(tiered.list('abi:')).rejects.toThrow();

    await outage.restart();
    await reached('ready', 2);
    await tiered.set('ro:mainnet:y', 'again');
    expect((await cold.get('ro:mainnet:y'))?.value).toBe('again');
  });

  it('starts while Redis is down and connects once it is up', async () => {
    await outage.kill();
    const { store, reached, seen } = tracked(outage.url);
    await expect(store.connect()).rejects.toThrow(/ECONNREFUSED/);
    expect(seen).toEqual(['down']);
    await outage.restart();
    await reached('ready');
    expect(store.isReady()).toBe(true);
    await store.set('k', 'v');
    expect((await store.get('k'))?.value).toBe('v');
  });
});
