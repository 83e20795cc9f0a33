import { describe, expect, it } from 'vitest';
import { cacheHeaders, hitHeaderPairs } from '../../../src/http/reply.js';

const now = 1_000_000;

describe('cacheHeaders (RFC 9211 Cache-Status, Age)', () => {
  it('describes hits with their age and, when finite, the ttl left', () => {
    expect(
      cacheHeaders(
        {
          outcome: 'hit',
          entry: { value: '', storedAt: now - 5_500, staleAt: null, expiresAt: null, tipHeight: null },
          stored: false,
          ttlMs: undefined,
        },
        now,
      ),
    ).toEqual({
      'cache-status': 'clarity-cache; hit',
      age: '5',
    });
    expect(
      cacheHeaders(
        {
          outcome: 'hit',
          entry: {
            value: '',
            storedAt: now,
            staleAt: now + 59_999,
            expiresAt: now + 59_999,
            tipHeight: null,
          },
          stored: false,
          ttlMs: undefined,
        },
        now,
      ),
    ).toEqual({ 'cache-status': 'clarity-cache; hit; ttl=59', age: '0' });
    expect(
      cacheHeaders(
        {
          outcome: 'hit',
          entry: { value: '', storedAt: now - 1000, staleAt: now - 1, expiresAt: now - 1, tipHeight: null },
          stored: false,
          ttlMs: undefined,
        },
        now,
      )['cache-status'],
    ).toBe('clarity-cache; hit; ttl=0');
  });

  it('describes misses, collapsed misses, bypasses and unstored answers', () => {
    const h = (outcome: 'miss' | 'coalesced' | 'bypass', stored: boolean, ttlMs?: number) =>
      cacheHeaders({ outcome, stored, ttlMs }, now)['cache-status'];
    expect(h('miss', true)).toBe('clarity-cache; fwd=miss; stored');
    expect(h('miss', true, 30_000)).toBe('clarity-cache; fwd=miss; stored; ttl=30');
    expect(h('miss', false, 30_000)).toBe('clarity-cache; fwd=miss');
    expect(h('coalesced', true)).toBe('clarity-cache; fwd=miss; collapsed; stored');
    expect(h('bypass', true)).toBe('clarity-cache; fwd=request; stored');
    expect(cacheHeaders({ outcome: 'miss', stored: true, ttlMs: undefined }, now).age).toBe('0');
  });

  it('describes stale entries: refetched, answered while revalidating, answered on error', () => {
    const entry = { value: '', storedAt: now - 90_000, staleAt: null, expiresAt: null, tipHeight: 7 };
    const staleSince = now - 12_400;
    expect(cacheHeaders({ outcome: 'miss', stored: true, ttlMs: undefined, stale: 'refetch' }, now)).toEqual({
      'cache-status': 'clarity-cache; fwd=stale; stored',
      age: '0',
    });
    expect(
      cacheHeaders({ outcome: 'coalesced', stored: true, ttlMs: 60_000, stale: 'refetch' }, now),
    ).toEqual({
      'cache-status': 'clarity-cache; fwd=stale; collapsed; stored; ttl=60',
      age: '0',
    });
    expect(
      cacheHeaders(
        { outcome: 'hit', entry, stored: false, ttlMs: undefined, stale: 'while-revalidate', staleSince },
        now,
      ),
    ).toEqual({ 'cache-status': 'clarity-cache; hit; ttl=-12; detail=stale-while-revalidate', age: '90' });
    expect(
      cacheHeaders(
        { outcome: 'hit', entry, stored: false, ttlMs: undefined, stale: 'if-error', staleSince: now },
        now,
      ),
    ).toEqual({ 'cache-status': 'clarity-cache; fwd=stale; ttl=0; detail=stale-if-error', age: '90' });
  });

  it('ends with attested=N when the answer is attested: a hit, a miss, a stale answer', () => {
    const entry = {
      value: '',
      storedAt: now - 5_500,
      staleAt: now + 10_000,
      expiresAt: now + 10_000,
      tipHeight: 7,
      votes: 3,
    };
    expect(cacheHeaders({ outcome: 'hit', entry, stored: false, ttlMs: undefined }, now)).toEqual({
      'cache-status': 'clarity-cache; hit; ttl=10; attested=3',
      age: '5',
    });
    // A miss: the load's votes.
    expect(cacheHeaders({ outcome: 'miss', stored: true, ttlMs: 30_000, meta: { votes: 2 } }, now)).toEqual({
      'cache-status': 'clarity-cache; fwd=miss; stored; ttl=30; attested=2',
      age: '0',
    });
    expect(
      cacheHeaders({ outcome: 'coalesced', stored: true, ttlMs: undefined, meta: { votes: 2 } }, now)[
        'cache-status'
      ],
    ).toBe('clarity-cache; fwd=miss; collapsed; stored; attested=2');
    expect(
      cacheHeaders(
        { outcome: 'miss', stored: true, ttlMs: undefined, stale: 'refetch', meta: { votes: 1 } },
        now,
      )['cache-status'],
    ).toBe('clarity-cache; fwd=stale; stored; attested=1');
    // Stale answers of an attested entry.
    const staleSince = now - 2_000;
    expect(
      cacheHeaders(
        { outcome: 'hit', entry, stored: false, ttlMs: undefined, stale: 'while-revalidate', staleSince },
        now,
      ),
    ).toEqual({
      'cache-status': 'clarity-cache; hit; ttl=-2; detail=stale-while-revalidate; attested=3',
      age: '5',
    });
    expect(
      cacheHeaders(
        { outcome: 'hit', entry, stored: false, ttlMs: undefined, stale: 'if-error', staleSince },
        now,
      )['cache-status'],
    ).toBe('clarity-cache; fwd=stale; ttl=-2; detail=stale-if-error; attested=3');
    // A replayed hit tells it too.
    expect(hitHeaderPairs(entry)(now)).toEqual([
      'cache-status',
      'clarity-cache; hit; ttl=10; attested=3',
      'age',
      '5',
    ]);
  });

  it('no attested without votes', () => {
    const entry = { value: '', storedAt: now, staleAt: null, expiresAt: null, tipHeight: null };
    const statuses = [
      cacheHeaders({ outcome: 'hit', entry, stored: false, ttlMs: undefined }, now),
      cacheHeaders({ outcome: 'miss', stored: true, ttlMs: 30_000 }, now),
      cacheHeaders({ outcome: 'miss', stored: true, ttlMs: 30_000, meta: { tipHeight: 4 } }, now),
      cacheHeaders(
        { outcome: 'hit', entry, stored: false, ttlMs: undefined, stale: 'if-error', staleSince: now },
        now,
      ),
    ].map((h) => h['cache-status']);
    for (const s of statuses) expect(s).not.toMatch(/attested/);
    expect(statuses[1]).toBe('clarity-cache; fwd=miss; stored; ttl=30');
  });
});

describe('hitHeaderPairs (replayed hits)', () => {
  it('gives the hit headers of the moment, and the same array until Age or ttl moves a whole second', () => {
    const entry = {
      value: '',
      storedAt: now,
      staleAt: now + 10_500,
      expiresAt: now + 10_500,
      tipHeight: null,
    };
    const pairs = hitHeaderPairs(entry);
    const expected = (t: number) => {
      const h = cacheHeaders({ outcome: 'hit', entry, stored: false, ttlMs: undefined }, t);
      return ['cache-status', h['cache-status'], 'age', h.age];
    };
    const first = pairs(now + 100);
    expect(first).toEqual(expected(now + 100));
    expect(pairs(now + 400)).toBe(first);
    // ttl moves first (10.5 s of freshness: 10 left until +500, 9 after), then Age at +1000.
    const second = pairs(now + 600);
    expect(second).not.toBe(first);
    expect(second).toEqual(expected(now + 600));
    const third = pairs(now + 1_000);
    expect(third).toEqual(expected(now + 1_000));
    expect(third[3]).toBe('1');
    for (let t = now; t < now + 12_000; t += 137) expect(pairs(t)).toEqual(expected(t));
  });
});
