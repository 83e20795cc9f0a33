import { describe, expect, it } from 'vitest';
import { cacheHeaders } from '../../../src/service/cache-status.js';

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
});
