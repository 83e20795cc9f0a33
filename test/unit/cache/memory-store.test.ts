import { describe, expect, it } from 'vitest';
import { approximateBytes, MemoryStore } from '../../../src/cache/stores/memory.js';
import { testClock } from './store-contract.js';

describe('MemoryStore', () => {
  it('holds at most maxEntries, evicting the least recently used', async () => {
    const store = new MemoryStore({ maxEntries: 3 });
    await store.set('a', '1');
    await store.set('b', '2');
    await store.set('c', '3');
    await store.get('a'); // a is now more recent than b
    await store.set('d', '4');
    expect(store.size).toBe(3);
    expect(await store.get('b')).toBeUndefined();
    expect((await store.get('a'))?.value).toBe('1');
    expect((await store.list('')).sort()).toEqual(['a', 'c', 'd']);
  });

  it('listing does not refresh recency', async () => {
    const store = new MemoryStore({ maxEntries: 2 });
    await store.set('x:1', 'v');
    await store.set('x:2', 'v');
    await store.list('x:');
    await store.set('x:3', 'v');
    expect(await store.get('x:1')).toBeUndefined();
  });

  it('stays within maxBytes and does not keep an entry larger than the budget', async () => {
    const entryBytes = approximateBytes('k:0', {
      value: 'x'.repeat(1_000),
      storedAt: 0,
      staleAt: null,
      expiresAt: null,
      tipHeight: null,
    });
    const store = new MemoryStore({ maxEntries: 1_000, maxBytes: entryBytes * 3 });
    for (let i = 0; i < 10; i++) await store.set(`k:${i}`, 'x'.repeat(1_000));
    expect(store.size).toBe(3);
    expect((await store.list('k:')).sort()).toEqual(['k:7', 'k:8', 'k:9']);
    await store.set('k:9', 'y'.repeat(100_000));
    // The oversized write must not leave the old value behind either.
    expect(await store.get('k:9')).toBeUndefined();
  });

  it('is bounded by bytes alone when no count is given: many small entries, few large ones', async () => {
    const bytesOf = (n: number) =>
      approximateBytes('k:0', {
        value: 'x'.repeat(n),
        storedAt: 0,
        staleAt: null,
        expiresAt: null,
        tipHeight: null,
      });
    const store = new MemoryStore({ maxBytes: bytesOf(1_000) * 4 });
    for (let i = 0; i < 20; i++) await store.set(`k:${i}`, 'x'.repeat(100));
    // Twenty small entries fit in the budget of four large ones: no count bound got in the way.
    expect(store.size).toBe(20);
    for (let i = 0; i < 10; i++) await store.set(`k:${i}`, 'x'.repeat(1_000));
    expect(store.size).toBeLessThan(20);
    expect(() => new MemoryStore({})).toThrow(RangeError);
  });

  it('drops expired entries from the count when they are read', async () => {
    const clock = testClock();
    const store = new MemoryStore({ maxEntries: 10, now: clock.now });
    await store.set('t:1', 'v', 100);
    await store.set('t:2', 'v');
    clock.advance(100);
    expect(await store.get('t:1')).toBeUndefined();
    expect(store.size).toBe(1);
    expect(await store.delete('t:1')).toBe(false);
  });

  it('rejects a non-positive maxEntries', () => {
    expect(() => new MemoryStore({ maxEntries: 0 })).toThrow(RangeError);
  });
});
