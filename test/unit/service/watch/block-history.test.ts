/** What a resume may rely on (src/service/watch/block-history.ts): canonical, replaced, or unknown. */
import { describe, expect, it } from 'vitest';
import { BlockHistory } from '../../../../src/service/watch/block-history.js';

const H = (height: number, fork = 0) => (height * 1000 + fork).toString(16).padStart(64, '0');
const block = (height: number, fork = 0, parentFork = fork) => ({
  height,
  indexBlockHash: H(height, fork),
  parentIndexBlockHash: H(height - 1, parentFork),
  receivedAt: 0,
});

describe('the blocks a watch holds', () => {
  it('tells canonical blocks from replaced and unknown ones', () => {
    const h = new BlockHistory();
    for (const n of [10, 11, 12]) h.add(block(n));
    expect(h.standing(11, H(11))).toBe('canonical');
    // A reorg at 11: 11 and 12 of the old fork are replaced, 10 stays.
    h.add(block(11, 1, 0));
    expect(h.standing(11, H(11))).toBe('not-canonical');
    expect(h.standing(12, H(12))).toBe('not-canonical');
    expect(h.standing(11, H(11, 1))).toBe('canonical');
    expect(h.standing(10, H(10))).toBe('canonical');
    expect(h.standing(9, H(9))).toBe('unknown');
    // A known hash named with another height is no block the gateway saw.
    expect(h.standing(99, H(12))).toBe('unknown');
  });

  it('a block whose parent differs from the one held below it vouches for nothing held', () => {
    const h = new BlockHistory();
    for (const n of [20, 21]) h.add(block(n));
    // 22 of another fork, whose parent is not the 21 held: 20 and 21 can no longer be vouched for.
    h.add(block(22, 2, 2));
    expect(h.standing(21, H(21))).toBe('not-canonical');
    expect(h.standing(20, H(20))).toBe('not-canonical');
    expect(h.standing(22, H(22, 2))).toBe('canonical');
  });
});
