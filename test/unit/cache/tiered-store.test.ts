import { describe, expect, it, vi } from 'vitest';
import type { CacheEntry, CacheStore } from '../../../src/cache/store.js';
import { MemoryStore } from '../../../src/cache/stores/memory.js';
import { TieredStore } from '../../../src/cache/stores/tiered.js';
import { testClock } from './store-contract.js';

/** A memory store whose calls are counted. */
function spiedCold(now: () => number) {
  const inner = new MemoryStore({ maxEntries: 1_000, now });
  const cold = {
    kind: 'spy',
    get: vi.fn((key: string) => inner.get(key)),
    set: vi.fn((key: string, value: string, ttlMs?: number) => inner.set(key, value, ttlMs)),
    delete: vi.fn((key: string) => inner.delete(key)),
    list: vi.fn((prefix: string) => inner.list(prefix)),
    close: vi.fn(() => inner.close()),
  } satisfies CacheStore;
  return { cold, inner };
}

/** A cold store that is down: every method rejects (get throws synchronously, to cover both). */
function brokenCold(): CacheStore {
  const down = (): Promise<never> => Promise.reject(new Error('cold store down'));
  return {
    kind: 'broken',
    get: () => {
      throw new Error('cold store down (sync)');
    },
    set: down,
    delete: down,
    list: down,
    close: down,
  };
}

function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe('TieredStore', () => {
  it('answers a hot hit without touching the cold store', async () => {
    const clock = testClock();
    const { cold } = spiedCold(clock.now);
    const store = new TieredStore({ maxEntries: 10 }, cold, { now: clock.now });
    await store.set('abi:mainnet:SP1.a', 'v');
    expect(cold.set).toHaveBeenCalledWith('abi:mainnet:SP1.a', 'v', undefined);
    expect((await store.get('abi:mainnet:SP1.a'))?.value).toBe('v');
    expect((await store.get('abi:mainnet:SP1.a'))?.value).toBe('v');
    expect(cold.get).not.toHaveBeenCalled();
  });

  it('promotes a cold hit, keeping its write time and expiry', async () => {
    const clock = testClock();
    const { cold, inner } = spiedCold(clock.now);
    const t = clock.now();
    await inner.set('ro:k', 'from cold', 1_000);
    const store = new TieredStore({ maxEntries: 10 }, cold, { now: clock.now });
    clock.advance(400);
    expect(await store.get('ro:k')).toEqual({
      value: 'from cold',
      storedAt: t,
      staleAt: t + 1_000,
      expiresAt: t + 1_000,
      tipHeight: null,
    });
    expect(await store.get('ro:k')).toEqual({
      value: 'from cold',
      storedAt: t,
      staleAt: t + 1_000,
      expiresAt: t + 1_000,
      tipHeight: null,
    });
    expect(cold.get).toHaveBeenCalledTimes(1);
    expect(store.hotSize).toBe(1);
    // The promoted copy expires with the original, not a full ttl after promotion.
    clock.advance(600);
    expect(await store.get('ro:k')).toBeUndefined();
  });

  it('bounds the hot tier at maxEntries while the cold store keeps everything', async () => {
    const clock = testClock();
    const { cold } = spiedCold(clock.now);
    const store = new TieredStore({ maxEntries: 3 }, cold, { now: clock.now });
    for (let i = 0; i < 20; i++) await store.set(`k:${i}`, String(i));
    expect(store.hotSize).toBe(3);
    expect(await store.list('k:')).toHaveLength(20);
    expect((await store.get('k:0'))?.value).toBe('0');
    expect(cold.get).toHaveBeenCalledWith('k:0');
    expect(store.hotSize).toBe(3);
  });

  it('keeps entries larger than the hot byte budget in the cold store only', async () => {
    const clock = testClock();
    const { cold } = spiedCold(clock.now);
    const store = new TieredStore({ maxEntries: 10, maxBytes: 10_000 }, cold, { now: clock.now });
    await store.set('big', 'x'.repeat(20_000));
    expect(store.hotSize).toBe(0);
    expect((await store.get('big'))?.value).toHaveLength(20_000);
    expect(cold.get).toHaveBeenCalledTimes(1);
  });

  it('deletes from both tiers', async () => {
    const clock = testClock();
    const { cold, inner } = spiedCold(clock.now);
    const store = new TieredStore({ maxEntries: 10 }, cold, { now: clock.now });
    await store.set('k', 'v');
    expect(await store.delete('k')).toBe(true);
    expect(store.hotSize).toBe(0);
    expect(await inner.get('k')).toBeUndefined();
    // Only in the hot tier (its cold write failed earlier): still reported as removed.
    cold.set.mockRejectedValueOnce(new Error('down'));
    await expect(store.set('h', 'v')).rejects.toThrow('down');
    expect(await store.delete('h')).toBe(true);
  });

  it('with a failing cold store, set fills the hot tier but rejects (the caller reports it), and get answers from the hot tier', async () => {
    const onError = vi.fn();
    const store = new TieredStore({ maxEntries: 10 }, brokenCold(), { onError });
    await expect(store.set('abi:mainnet:SP1.a', 'v', 60_000)).rejects.toThrow('cold store down');
    expect(onError).not.toHaveBeenCalled();
    expect((await store.get('abi:mainnet:SP1.a'))?.value).toBe('v');
    expect(onError).not.toHaveBeenCalled();
    // A miss needs the cold store: it degrades to "absent" instead of failing.
    await expect(store.get('abi:mainnet:SP2.b')).resolves.toBeUndefined();
    expect(onError).toHaveBeenLastCalledWith(
      expect.objectContaining({ message: 'cold store down (sync)' }),
      'get',
    );
    await expect(store.close()).resolves.toBeUndefined();
    expect(onError).toHaveBeenLastCalledWith(expect.any(Error), 'close');
  });

  it('with a failing cold store, delete and list (which need it) reject, unreported', async () => {
    const onError = vi.fn();
    const store = new TieredStore({ maxEntries: 10 }, brokenCold(), { onError });
    await store.set('k:1', 'v').catch(() => {});
    onError.mockClear();
    await expect(store.list('k:')).rejects.toThrow('cold store down');
    await expect(store.delete('k:1')).rejects.toThrow('cold store down');
    // The hot copy is gone regardless, so the deleted value is not served.
    expect(store.hotSize).toBe(0);
    expect(onError).not.toHaveBeenCalled();
  });

  it('lists keys whose cold write failed but that the hot tier still serves', async () => {
    const clock = testClock();
    const { cold } = spiedCold(clock.now);
    const onError = vi.fn();
    const store = new TieredStore({ maxEntries: 10 }, cold, { now: clock.now, onError });
    await store.set('abi:mainnet:SP1.a', 'v');
    cold.set.mockRejectedValueOnce(new Error('blip'));
    await expect(store.set('abi:mainnet:SP2.b', 'v')).rejects.toThrow('blip');
    expect((await store.list('abi:')).sort()).toEqual(['abi:mainnet:SP1.a', 'abi:mainnet:SP2.b']);
  });

  it('after a failed cold write, the older cold value is deleted so it never comes back', async () => {
    const clock = testClock();
    const { cold, inner } = spiedCold(clock.now);
    const store = new TieredStore({ maxEntries: 10 }, cold, { now: clock.now });
    await store.set('ro:k', 'old');
    cold.set.mockRejectedValueOnce(new Error('disk full'));
    await expect(store.set('ro:k', 'new')).rejects.toThrow('disk full');
    expect((await store.get('ro:k'))?.value).toBe('new');
    expect(await inner.get('ro:k')).toBeUndefined();
    // Evicted from the hot tier (e.g. by pressure): a miss, never the older value.
    store.evictHot('ro:k');
    expect(await store.get('ro:k')).toBeUndefined();
  });

  it('after a failed cold write that it cannot even delete, the cold copy is not served until a write succeeds', async () => {
    const clock = testClock();
    const { cold, inner } = spiedCold(clock.now);
    const store = new TieredStore({ maxEntries: 10 }, cold, { now: clock.now });
    await store.set('ro:k', 'old');
    cold.set.mockRejectedValueOnce(new Error('disk full'));
    cold.delete.mockRejectedValueOnce(new Error('disk full'));
    await expect(store.set('ro:k', 'new')).rejects.toThrow('disk full');
    expect((await inner.get('ro:k'))?.value).toBe('old');
    store.evictHot('ro:k');
    expect(await store.get('ro:k')).toBeUndefined();
    await store.set('ro:k', 'newer');
    store.evictHot('ro:k');
    expect((await store.get('ro:k'))?.value).toBe('newer');
  });

  it('reports the hot tier size in bytes, never above its budget', async () => {
    const clock = testClock();
    const { cold } = spiedCold(clock.now);
    const store = new TieredStore({ maxEntries: 1000, maxBytes: 64 * 1024 }, cold, { now: clock.now });
    for (let i = 0; i < 100; i++) await store.set(`ro:${i}`, 'x'.repeat(4096));
    expect(store.hotBytes()).toBeGreaterThan(32 * 1024);
    expect(store.hotBytes()).toBeLessThanOrEqual(64 * 1024);
    expect(store.hotSize).toBeLessThan(100);
  });

  it('does not promote a cold read that a concurrent set overtook', async () => {
    const clock = testClock();
    const { cold } = spiedCold(clock.now);
    const store = new TieredStore({ maxEntries: 10 }, cold, { now: clock.now });
    const slow = deferred<CacheEntry | undefined>();
    cold.get.mockReturnValueOnce(slow.promise);
    const reading = store.get('k');
    await store.set('k', 'new');
    slow.resolve({ value: 'old', storedAt: 0, staleAt: null, expiresAt: null, tipHeight: null });
    expect((await reading)?.value).toBe('old'); // that read started before the write
    expect((await store.get('k'))?.value).toBe('new');
  });

  it('does not resurrect a key through a cold read that a concurrent delete overtook', async () => {
    const clock = testClock();
    const { cold } = spiedCold(clock.now);
    const store = new TieredStore({ maxEntries: 10 }, cold, { now: clock.now });
    const slow = deferred<CacheEntry | undefined>();
    cold.get.mockReturnValueOnce(slow.promise);
    const reading = store.get('k');
    await store.delete('k');
    slow.resolve({ value: 'old', storedAt: 0, staleAt: null, expiresAt: null, tipHeight: null });
    await reading;
    expect(store.hotSize).toBe(0);
    expect(await store.get('k')).toBeUndefined();
  });

  it('closes the cold store once', async () => {
    const clock = testClock();
    const { cold } = spiedCold(clock.now);
    const store = new TieredStore({ maxEntries: 10 }, cold, { now: clock.now });
    await store.close();
    await store.close();
    expect(cold.close).toHaveBeenCalledTimes(1);
  });

  it('announces cold writes and removals, and evicts a hot copy on request so the next read is cold', async () => {
    const clock = testClock();
    const { cold, inner } = spiedCold(clock.now);
    const changed: string[] = [];
    const store = new TieredStore({ maxEntries: 10 }, cold, {
      now: clock.now,
      onChange: (k) => changed.push(k),
    });
    await store.set('ro:k', 'v1');
    await store.delete('ro:gone');
    expect(changed).toEqual(['ro:k', 'ro:gone']);

    // Another instance rewrote the shared entry: the hot copy is stale until evicted.
    await inner.set('ro:k', 'v2');
    expect((await store.get('ro:k'))?.value).toBe('v1');
    store.evictHot('ro:k');
    expect((await store.get('ro:k'))?.value).toBe('v2');
    expect(store.listHot('ro:')).toEqual(['ro:k']);
  });

  it('does not announce a write the cold store refused', async () => {
    const changed: string[] = [];
    const store = new TieredStore({ maxEntries: 10 }, brokenCold(), { onChange: (k) => changed.push(k) });
    await expect(store.set('ro:k', 'v')).rejects.toThrow('cold store down');
    expect(changed).toEqual([]);
    expect(store.listHot('ro:')).toEqual(['ro:k']);
  });
});
