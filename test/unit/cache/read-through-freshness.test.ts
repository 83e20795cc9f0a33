/** ReadThroughCache beyond get(): freshness of held entries, and the doors for listing and invalidation. */
import { describe, expect, it } from 'vitest';
import type { TipView } from '../../../src/cache/judge.js';
import { ReadThroughCache } from '../../../src/cache/read-through.js';
import { MemoryStore } from '../../../src/cache/stores/memory.js';
import { TieredStore } from '../../../src/cache/stores/tiered.js';

/** The chain seen at one tip height, learned nobody knows when. */
const tipAt = (height: number): TipView => ({ height, firstLearnedAt: () => undefined });

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
    const bound = (tipHeight: number) => ({ freshness: { maxBlocks: 1 }, tipView: () => tipAt(tipHeight) });
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

describe('ReadThroughCache and the judge', () => {
  /** A proof that holds at every tip, counting what it was asked and what it kept fresh. */
  const proof = () => {
    const p = {
      asked: 0,
      kept: 0,
      holds: () => {
        p.asked++;
        return true;
      },
      keptFresh: () => {
        p.kept++;
      },
    };
    return p;
  };

  it('an answer from a stored entry carries the verdict it was served under, with the tip it is current at', async () => {
    const { store, cache } = setup();
    await store.set('ro:p', 'at10', undefined, { tipHeight: 10, tipReported: true });
    const p = proof();
    const hit = await cache.get('ro:p', async () => 'x', {
      freshness: { maxBlocks: 0 },
      tipView: () => tipAt(14),
      proof: p,
    });
    expect(hit).toMatchObject({ value: 'at10', outcome: 'hit', verdict: { use: 'fresh', currentAt: 14 } });
    expect(p.kept).toBe(1);
    // Without the proof the same entry is refetched: a load carries no verdict.
    const load = await cache.get('ro:p', async () => 'at14', {
      freshness: { maxBlocks: 0 },
      tipView: () => tipAt(14),
    });
    expect(load).toMatchObject({ value: 'at14', outcome: 'miss', stale: 'refetch' });
    expect(load.verdict).toBeUndefined();
  });

  it('learns the tip only when the judge would look at it', async () => {
    const { store, cache, advance } = setup();
    await store.set('ro:t', 'v', 1_000, { tipHeight: 10, tipReported: true, keepStaleMs: 10_000 });
    let learned = 0;
    const tipView = () => {
      learned++;
      return { height: 11, firstLearnedAt: () => undefined };
    };
    await cache.get('ro:t', async () => 'x', { tipView });
    expect(learned).toBe(0);
    // A proof, even without a bound, asks which tip the entry is current at.
    const p = proof();
    expect(await cache.get('ro:t', async () => 'x', { tipView, proof: p })).toMatchObject({
      verdict: { use: 'fresh', currentAt: 11 },
    });
    expect(learned).toBe(1);
    expect(p.kept).toBe(0);
    // Stale by its ttl: the tip changes nothing, so it is not learned.
    advance(1_000);
    await cache.get('ro:t', async () => 'y', { tipView, proof: p, freshness: { maxBlocks: 5 } });
    expect(learned).toBe(1);
  });

  it("stale-if-error answers within the judge's window only, telling the loader so", async () => {
    const { store, cache, advance } = setup();
    await store.set('ro:e', 'old', 1_000, { keepStaleMs: 60_000 });
    const failing = (seen: boolean[]) => async (lc: { staleAtHand: boolean }) => {
      seen.push(lc.staleAtHand);
      throw new Error('upstream down');
    };
    const policy = { staleIfErrorMs: 5_000, isTransient: () => true };
    advance(3_000);
    const seen: boolean[] = [];
    expect(await cache.get('ro:e', failing(seen), policy)).toMatchObject({
      value: 'old',
      stale: 'if-error',
      staleSince: 1_001_000,
      verdict: { use: 'stale', ifError: true },
    });
    // Past the window (counted from the moment it went stale): the failure is the answer.
    advance(4_000);
    await expect(cache.get('ro:e', failing(seen), policy)).rejects.toThrow('upstream down');
    // Without a way to tell a transient failure, no window at all.
    await expect(cache.get('ro:e', failing(seen), { staleIfErrorMs: 60_000 })).rejects.toThrow();
    expect(seen).toEqual([true, false, false]);
  });

  it("stillServes gives the judge's fresh verdict for the hot entry, else nothing", async () => {
    const { store, cache } = setup();
    await store.set('ro:s', 'v', undefined, { tipHeight: 10, tipReported: true });
    const entry = store.peekHot('ro:s')!;
    let tip = 10;
    const policy = { freshness: { maxBlocks: 1 }, tipView: () => tipAt(tip), proof: proof() };
    expect(cache.stillServes('ro:s', entry, policy)).toEqual({ use: 'fresh' });
    tip = 15;
    expect(cache.stillServes('ro:s', entry, policy)).toEqual({ use: 'fresh', currentAt: 15 });
    expect(
      cache.stillServes('ro:s', entry, { freshness: { maxBlocks: 1 }, tipView: () => tipAt(tip) }),
    ).toBeUndefined();
    expect(cache.stillServes('ro:s', { ...entry }, policy)).toBeUndefined();
  });
});
