import { describe, expect, it } from 'vitest';
import { ChainTips } from '../../../src/chain/tips.js';

const HASH = 'ab'.repeat(32);

describe('ChainTips', () => {
  it('knows nothing before it learns, and per network', () => {
    const tips = new ChainTips(() => 1_000);
    expect(tips.current('mainnet')).toBeUndefined();
    expect(tips.learn('mainnet', { height: 10 })).toBe(true);
    expect(tips.current('mainnet')).toEqual({ height: 10, indexBlockHash: undefined, learnedAt: 1_000 });
    expect(tips.current('testnet')).toBeUndefined();
  });

  it('only moves forward: a lower height never replaces a higher one', () => {
    let now = 0;
    const tips = new ChainTips(() => now);
    tips.learn('mainnet', { height: 100, indexBlockHash: HASH });
    now = 5;
    expect(tips.learn('mainnet', { height: 99 })).toBe(false);
    expect(tips.current('mainnet')).toEqual({ height: 100, indexBlockHash: HASH, learnedAt: 0 });
    expect(tips.learn('mainnet', { height: 101 })).toBe(true);
    expect(tips.current('mainnet')).toEqual({ height: 101, indexBlockHash: undefined, learnedAt: 5 });
  });

  it('keeps the hash of a height confirmed again by a header alone, and refreshes learnedAt', () => {
    let now = 0;
    const tips = new ChainTips(() => now);
    tips.learn('testnet', { height: 7, indexBlockHash: HASH });
    now = 50;
    expect(tips.learn('testnet', { height: 7 })).toBe(true);
    expect(tips.current('testnet')).toEqual({ height: 7, indexBlockHash: HASH, learnedAt: 50 });
  });

  it('ignores heights that are not non-negative integers', () => {
    const tips = new ChainTips();
    for (const height of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(tips.learn('mainnet', { height })).toBe(false);
    }
    expect(tips.current('mainnet')).toBeUndefined();
  });

  it('answers fresh() only within the given age', () => {
    let now = 0;
    const tips = new ChainTips(() => now);
    tips.learn('mainnet', { height: 3 });
    now = 5_000;
    expect(tips.fresh('mainnet', 5_000)?.height).toBe(3);
    now = 5_001;
    expect(tips.fresh('mainnet', 5_000)).toBeUndefined();
    expect(tips.current('mainnet')?.height).toBe(3);
  });
});
