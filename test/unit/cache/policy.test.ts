import { describe, expect, it } from 'vitest';
import { newEntry } from '../../../src/cache/entry.js';
import { classify } from '../../../src/cache/policy.js';

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

describe('classify', () => {
  it('today: fresh until the ttl ends, expired after (no stale window)', () => {
    const entry = newEntry('v', 0, 1_000);
    expect(classify(entry, 999)).toBe('fresh');
    expect(classify(entry, 1_000)).toBe('expired');
    expect(classify(newEntry('v', 0), Number.MAX_SAFE_INTEGER)).toBe('fresh');
  });

  it('stale between staleAt and expiresAt', () => {
    const entry = newEntry('v', 0, 1_000, { keepStaleMs: 500 });
    expect(classify(entry, 999)).toBe('fresh');
    expect(classify(entry, 1_000)).toBe('stale');
    expect(classify(entry, 1_499)).toBe('stale');
    expect(classify(entry, 1_500)).toBe('expired');
  });

  it('applies a block bound against the current tip; an entry without a height fits none', () => {
    const at10 = newEntry('v', 0, undefined, { tipHeight: 10 });
    expect(classify(at10, 1, { maxBlocks: 2, tipHeight: 12 })).toBe('fresh');
    expect(classify(at10, 1, { maxBlocks: 2, tipHeight: 13 })).toBe('stale');
    expect(classify(at10, 1, { maxBlocks: 0, tipHeight: undefined })).toBe('stale');
    expect(classify(newEntry('v', 0), 1, { maxBlocks: 100, tipHeight: 10 })).toBe('stale');
    expect(classify(newEntry('v', 0), 1, {})).toBe('fresh');
  });
});
