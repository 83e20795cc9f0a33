import { describe, expect, it } from 'vitest';
import { type CachePolicy, ReadThroughCache } from '../../../src/cache/read-through.js';
import type { CacheStore } from '../../../src/cache/store.js';
import { MemoryStore } from '../../../src/cache/stores/memory.js';

function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

function setup() {
  let now = 1_000_000;
  const store = new MemoryStore({ maxEntries: 100, now: () => now });
  const errors: string[] = [];
  const cache = new ReadThroughCache(store, { onStoreError: (_err, op) => errors.push(op), now: () => now });
  return { store, cache, errors, advance: (ms: number) => (now += ms) };
}

describe('ReadThroughCache', () => {
  it('loads on a miss, stores, and serves the next read as a hit', async () => {
    const { cache } = setup();
    let loads = 0;
    const load = async () => `v${++loads}`;
    expect(await cache.get('k', load)).toMatchObject({ value: 'v1', outcome: 'miss' });
    const hit = await cache.get('k', load);
    expect(hit).toMatchObject({ value: 'v1', outcome: 'hit' });
    expect(hit.entry?.expiresAt).toBeNull();
    expect(loads).toBe(1);
  });

  it('bust fetches fresh and stores the fresh value', async () => {
    const { cache } = setup();
    let loads = 0;
    const load = async () => `v${++loads}`;
    await cache.get('k', load);
    expect(await cache.get('k', load, { bust: true })).toMatchObject({ value: 'v2', outcome: 'bypass' });
    expect(await cache.get('k', load)).toMatchObject({ value: 'v2', outcome: 'hit' });
  });

  it('skip does not store, and bust + skip leaves the old entry in place', async () => {
    const { cache, store } = setup();
    let loads = 0;
    const load = async () => `v${++loads}`;
    await cache.get('a', load, { skip: true });
    expect(await store.get('a')).toBeUndefined();
    await cache.get('b', load);
    await cache.get('b', load, { bust: true, skip: true });
    expect((await store.get('b'))?.value).toBe('v2');
  });

  it('honours a per-request ttl', async () => {
    const { cache, advance } = setup();
    let loads = 0;
    const load = async () => `v${++loads}`;
    await cache.get('k', load, { ttlMs: 5_000 });
    advance(4_999);
    expect((await cache.get('k', load)).outcome).toBe('hit');
    advance(2);
    expect(await cache.get('k', load)).toMatchObject({ value: 'v2', outcome: 'miss' });
  });

  it('coalesces identical concurrent misses into one load and shares its failure', async () => {
    const { cache } = setup();
    const gate = deferred<string>();
    let loads = 0;
    const load = () => {
      loads++;
      return gate.promise;
    };
    const all = Promise.all(Array.from({ length: 50 }, () => cache.get('k', load)));
    // Every reader has passed the (async) store lookup once the leader's load started.
    await expect.poll(() => cache.inflight).toBe(1);
    gate.resolve('shared');
    const results = await all;
    expect(loads).toBe(1);
    expect(results.map((r) => r.value)).toEqual(Array(50).fill('shared'));
    expect(results.filter((r) => r.outcome === 'miss')).toHaveLength(1);
    expect(results.filter((r) => r.outcome === 'coalesced')).toHaveLength(49);

    const failing = deferred<string>();
    const both = Promise.allSettled([
      cache.get('f', () => failing.promise),
      cache.get('f', () => failing.promise),
    ]);
    failing.reject(new Error('upstream down'));
    const settled = await both;
    expect(settled.every((s) => s.status === 'rejected')).toBe(true);
    expect(cache.inflight).toBe(0);
    // A failure is not cached: the next read loads again.
    expect((await cache.get('f', async () => 'ok')).outcome).toBe('miss');
  });

  /** A loader that says when it starts and answers when told. */
  function heldLoader() {
    const started = deferred<void>();
    const value = deferred<string>();
    let calls = 0;
    return {
      load: () => {
        calls++;
        started.resolve();
        return value.promise;
      },
      started: started.promise,
      answer: (v: string) => value.resolve(v),
      get calls() {
        return calls;
      },
    };
  }

  /**
   * A plain read of 'k' whose load is held, and a bust (`policy`) that arrives while it is in
   * flight: both loads started, neither answered.
   */
  async function bustWhileLoading(policy: CachePolicy) {
    const { cache, store } = setup();
    const older = heldLoader();
    const newer = heldLoader();
    const first = cache.get('k', older.load);
    await older.started;
    const bust = cache.get('k', newer.load, policy);
    await newer.started;
    return { cache, store, older, newer, first, bust };
  }

  it('a bust that arrives while an older load is in flight starts a new load; the older value is not stored over it', async () => {
    const { cache, store, older, newer, first, bust } = await bustWhileLoading({ bust: true });
    // A plain request after the bust joins the newer load, not the older one.
    const later = cache.get('k', async () => 'never');
    newer.answer('new');
    expect(await bust).toMatchObject({ value: 'new', outcome: 'bypass', stored: true });
    expect(await later).toMatchObject({ value: 'new', outcome: 'coalesced' });
    older.answer('old');
    // The older request still gets its own load's value, but does not store it.
    expect(await first).toMatchObject({ value: 'old', outcome: 'miss', stored: false });
    expect((await store.get('k'))?.value).toBe('new');
    expect(older.calls + newer.calls).toBe(2);
    expect(cache.inflight).toBe(0);
  });

  it('a superseded load that ends first does not store either: the bust stores its own', async () => {
    const { store, older, newer, first, bust } = await bustWhileLoading({ bust: true });
    older.answer('old');
    expect(await first).toMatchObject({ value: 'old', stored: false });
    expect(await store.get('k')).toBeUndefined();
    newer.answer('new');
    expect(await bust).toMatchObject({ value: 'new', stored: true });
    expect((await store.get('k'))?.value).toBe('new');
  });

  it('a bust with skipCache has no value to protect: the older load still stores its own', async () => {
    const { store, older, newer, first, bust } = await bustWhileLoading({ bust: true, skip: true });
    newer.answer('new');
    expect(await bust).toMatchObject({ value: 'new', stored: false });
    older.answer('old');
    expect(await first).toMatchObject({ value: 'old', stored: true });
    expect((await store.get('k'))?.value).toBe('old');
  });

  it('a joiner that wants the value stored stores it when the leader skipped', async () => {
    const { cache, store } = setup();
    const gate = deferred<string>();
    const leader = cache.get('k', () => gate.promise, { skip: true });
    await expect.poll(() => cache.inflight).toBe(1);
    const joiner = cache.get('k', () => gate.promise);
    gate.resolve('v');
    await Promise.all([leader, joiner]);
    expect((await store.get('k'))?.value).toBe('v');
  });

  it('a failing store degrades to misses and reports, never throws', async () => {
    const broken: CacheStore = {
      kind: 'broken',
      get: async () => {
        throw new Error('disk gone');
      },
      set: async () => {
        throw new Error('disk gone');
      },
      delete: async () => false,
      list: async () => [],
      close: async () => {},
    };
    const errors: string[] = [];
    const cache = new ReadThroughCache(broken, { onStoreError: (_e, op) => errors.push(op) });
    expect(await cache.get('k', async () => 'fresh')).toMatchObject({ value: 'fresh', outcome: 'miss' });
    expect(errors).toEqual(['get', 'set']);
  });

  it('tells the caller whether the value was stored: a failed write is not claimed, for the leader and its joiners', async () => {
    let failWrites = true;
    const inner = new MemoryStore({ maxEntries: 10 });
    const flaky: CacheStore = {
      kind: 'flaky',
      get: (key) => inner.get(key),
      set: async (key, value, ttl) => {
        if (failWrites) throw new Error('SQLITE_FULL');
        await inner.set(key, value, ttl);
      },
      delete: (key) => inner.delete(key),
      list: (prefix) => inner.list(prefix),
      close: () => inner.close(),
    };
    const errors: string[] = [];
    const cache = new ReadThroughCache(flaky, { onStoreError: (_e, op) => errors.push(op) });
    const gate = deferred<string>();
    const leader = cache.get('k', () => gate.promise, { bust: true });
    // (A plain request joins; a second bust would start its own load.)
    const joiner = cache.get('k', async () => 'unused');
    gate.resolve('v1');
    expect(await leader).toMatchObject({ value: 'v1', outcome: 'bypass', stored: false });
    expect(await joiner).toMatchObject({ value: 'v1', outcome: 'coalesced', stored: false });
    expect(errors).toEqual(['set']);
    expect(await cache.put('k', 'v')).toBe(false);

    failWrites = false;
    expect(await cache.get('k', async () => 'v2', { bust: true })).toMatchObject({ stored: true });
    expect(await cache.get('k', async () => 'v3', { bust: true, skip: true })).toMatchObject({
      stored: false,
    });
    const hit = await cache.get('k', async () => 'v4');
    expect(hit).toMatchObject({ outcome: 'hit', value: 'v2' });
    expect(hit.stored).not.toBe(true);
  });
});
