/** ReadThroughCache beyond get(): freshness of held entries, and the doors for listing and invalidation. */
import { describe, expect, it } from 'vitest';
import { ReadThroughCache } from '../../../src/cache/read-through.js';
import { MemoryStore } from '../../../src/cache/stores/memory.js';
import { TieredStore } from '../../../src/cache/stores/tiered.js';

function setup() {
  let now = 1_000_000;
  const clock = () => now;
  const store = new MemoryStore({ maxEntries: 100, now: clock });
  const cache = new ReadThroughCache(store, { now: clock });
  return { store, cache, advance: (ms: number) => (now += ms) };
}

describe('ReadThroughCache freshness', () => {
  it('treats a held but stale entry as a miss, and replaces it', async () => {
    const { store, cache, advance } = setup();
    await store.set('ro:k', 'old', 1_000, { keepStaleMs: 10_000 });
    expect(await cache.get('ro:k', async () => 'unused')).toMatchObject({ value: 'old', outcome: 'hit' });
    advance(1_000);
    expect((await store.get('ro:k'))?.value).toBe('old');
    expect(await cache.get('ro:k', async () => 'new', { ttlMs: 1_000 })).toMatchObject({
      value: 'new',
      outcome: 'miss',
    });
    expect((await store.get('ro:k'))?.value).toBe('new');
  });

  it('applies the request block bound to the entry height', async () => {
    const { store, cache } = setup();
    await store.set('ro:b', 'at10', undefined, { tipHeight: 10 });
    const bound = (tipHeight: number) => ({ freshness: { maxBlocks: 1, tipHeight } });
    expect(await cache.get('ro:b', async () => 'x', bound(11))).toMatchObject({
      value: 'at10',
      outcome: 'hit',
    });
    expect(await cache.get('ro:b', async () => 'at12', bound(12))).toMatchObject({
      value: 'at12',
      outcome: 'miss',
    });
  });
});

describe('ReadThroughCache listing and invalidation', () => {
  it('lists, invalidates one key and a prefix, and reports its store', async () => {
    const { store, cache } = setup();
    for (const key of ['ro:a:1', 'ro:a:2', 'ro:b:1', 'abi:x']) await store.set(key, 'v');
    expect((await cache.list('ro:')).sort()).toEqual(['ro:a:1', 'ro:a:2', 'ro:b:1']);
    expect(await cache.invalidate('ro:b:1')).toBe(true);
    expect(await cache.invalidate('ro:b:1')).toBe(false);
    expect(await cache.invalidatePrefix('ro:a:')).toBe(2);
    expect(await cache.list('ro:')).toEqual([]);
    expect(cache.kind).toBe('memory');
    expect(cache.hotEntries).toBe(1);
    // A memory store has no hot tier apart from itself to fall back on.
    expect(cache.listHeld('abi:')).toBeUndefined();
  });

  it('lists what the hot tier holds while the backing store cannot list', async () => {
    const cold = new MemoryStore({ maxEntries: 100 });
    const tiered = new TieredStore({ maxEntries: 10 }, cold);
    const cache = new ReadThroughCache(tiered);
    await tiered.set('abi:mainnet:SP1.a', '{}');
    cold.list = async () => {
      throw new Error('down');
    };
    await expect(cache.list('abi:')).rejects.toThrow('down');
    expect(cache.listHeld('abi:')).toEqual(['abi:mainnet:SP1.a']);
    expect(cache.kind).toBe('tiered');
    expect(cache.hotEntries).toBe(1);
  });
});
