import { describe, expect, it } from 'vitest';
import { newEntry } from '../../../src/cache/entry.js';

describe('newEntry', () => {
  it('without a ttl is never stale and never expires', () => {
    expect(newEntry('v', 100)).toEqual({
      value: 'v',
      storedAt: 100,
      staleAt: null,
      expiresAt: null,
      tipHeight: null,
    });
    expect(newEntry('v', 100, 0, { keepStaleMs: 50 })).toMatchObject({ staleAt: null, expiresAt: null });
  });

  it('with a ttl goes stale at its end and is kept keepStaleMs longer', () => {
    expect(newEntry('v', 100, 1_000)).toMatchObject({ staleAt: 1_100, expiresAt: 1_100 });
    expect(newEntry('v', 100, 1_000, { keepStaleMs: 500, tipHeight: 9 })).toEqual({
      value: 'v',
      storedAt: 100,
      staleAt: 1_100,
      expiresAt: 1_600,
      tipHeight: 9,
    });
  });
});
