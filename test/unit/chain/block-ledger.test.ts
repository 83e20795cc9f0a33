import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BlockLedger,
  type ObservedBlock,
  TOUCHES_ALL,
  type Touched,
} from '../../../src/chain/block-ledger.js';

const hash = (n: number, fork = 0) => (fork * 1_000_000 + n).toString(16).padStart(64, '0');
const some = (...ids: string[]): Touched => ({ all: false, contracts: new Set(ids) });

function block(height: number, touched: Touched = some(), fork = 0, parentFork = fork): ObservedBlock {
  return {
    height,
    indexBlockHash: hash(height, fork),
    parentIndexBlockHash: hash(height - 1, parentFork),
    touched,
    deployed: [],
  };
}

const A = new Set(['SP1.a']);
const B = new Set(['SP1.b']);
const AB = new Set(['SP1.a', 'SP1.b']);

describe('BlockLedger', () => {
  it('holds the tip /v2/info described: its first observed child continues proofs read at it', () => {
    const ledger = new BlockLedger();
    const g0 = ledger.generation;
    expect(ledger.hold({ height: 100, indexBlockHash: hash(100) }, 1000)).toBe(true);
    expect(ledger.generation).toBeGreaterThan(g0);
    // Read at the held tip, after it was held.
    expect(ledger.current({ height: 100, readAt: 1000, dependsOn: A }, 100)).toBe(true);
    expect(ledger.append(block(101, some('SP1.b')), 1100)).toBe('extended');
    expect(ledger.current({ height: 100, readAt: 1000, dependsOn: A }, 101)).toBe(true);
    expect(ledger.current({ height: 100, readAt: 1000, dependsOn: B }, 101)).toBe(false);
    expect(ledger.current({ height: 100, readAt: 999, dependsOn: A }, 101)).toBe(false);
    expect(ledger.breaks).toBe(0);
    // Only while no run is under way.
    expect(ledger.hold({ height: 101, indexBlockHash: hash(101) }, 1200)).toBe(false);
  });

  it('a held tip the first block does not follow is no break; the held block itself is taken in', () => {
    const other = new BlockLedger();
    other.hold({ height: 100, indexBlockHash: hash(100, 7) }, 1000);
    expect(other.append(block(101), 1100)).toBe('started');
    expect(other.breaks).toBe(0);
    expect(other.current({ height: 100, readAt: 1000, dependsOn: A }, 101)).toBe(false);
    const same = new BlockLedger();
    same.hold({ height: 100, indexBlockHash: hash(100) }, 1000);
    expect(same.append(block(100), 1050)).toBe('extended');
    expect(same.append(block(101), 1100)).toBe('extended');
    expect(same.current({ height: 100, readAt: 1000, dependsOn: A }, 101)).toBe(true);
  });

  it('proves an entry current across consecutive blocks that did not touch it', () => {
    const ledger = new BlockLedger();
    expect(ledger.append(block(100), 1000)).toBe('started');
    expect(ledger.append(block(101, some('SP1.b')), 1001)).toBe('extended');
    expect(ledger.append(block(102), 1002)).toBe('extended');
    expect(ledger.current({ height: 100, readAt: 1000, dependsOn: A }, 102)).toBe(true);
    expect(ledger.current({ height: 100, readAt: 1000, dependsOn: B }, 102)).toBe(false);
    expect(ledger.current({ height: 100, readAt: 1000, dependsOn: B }, 100)).toBe(true);
    expect(ledger.current({ height: 101, readAt: 1001, dependsOn: B }, 102)).toBe(true);
    expect(ledger.current({ height: 100, readAt: 1000, dependsOn: AB }, 102)).toBe(false);
    expect(ledger.current({ height: 100, readAt: 1000, dependsOn: 'volatile' }, 100)).toBe(false);
    // Not past what it holds, nor before the run started.
    expect(ledger.current({ height: 100, readAt: 1000, dependsOn: A }, 103)).toBe(false);
    expect(ledger.current({ height: 99, readAt: 1000, dependsOn: A }, 102)).toBe(false);
    expect(ledger.current({ height: 100, readAt: 999, dependsOn: A }, 102)).toBe(false);
  });

  it('a block touching everything ends proofs past it', () => {
    const ledger = new BlockLedger();
    ledger.append(block(1), 0);
    ledger.append(block(2, TOUCHES_ALL), 0);
    ledger.append(block(3), 0);
    expect(ledger.current({ height: 1, readAt: 0, dependsOn: A }, 3)).toBe(false);
    expect(ledger.current({ height: 2, readAt: 0, dependsOn: A }, 3)).toBe(true);
  });

  it('a gap, a reorg or an unusable payload ends proofs for entries read before it', () => {
    const gap = new BlockLedger();
    gap.append(block(1), 0);
    expect(gap.append(block(3, some(), 0, 0), 10)).toBe('restarted');
    expect(gap.current({ height: 1, readAt: 0, dependsOn: A }, 3)).toBe(false);
    gap.append(block(4), 11);
    // Read at the block that began the new run: another fork's block of that height, maybe.
    expect(gap.current({ height: 3, readAt: 10, dependsOn: A }, 4)).toBe(false);
    gap.append(block(5), 12);
    expect(gap.current({ height: 4, readAt: 11, dependsOn: A }, 5)).toBe(true);
    expect(gap.breaks).toBe(1);

    const reorg = new BlockLedger();
    reorg.append(block(1), 0);
    reorg.append(block(2), 0);
    expect(reorg.append(block(3, some(), 0, 7), 5)).toBe('restarted');
    expect(reorg.current({ height: 2, readAt: 0, dependsOn: A }, 3)).toBe(false);
    expect(reorg.current({ height: 3, readAt: 5, dependsOn: A }, 3)).toBe(false);
    reorg.append(block(4), 6);
    reorg.append(block(5), 7);
    expect(reorg.current({ height: 4, readAt: 6, dependsOn: A }, 5)).toBe(true);

    const lost = new BlockLedger();
    lost.append(block(1), 0);
    lost.interrupt();
    expect(lost.tip).toBeUndefined();
    expect(lost.current({ height: 1, readAt: 0, dependsOn: A }, 1)).toBe(false);
    expect(lost.append(block(2), 5)).toBe('restarted');
    expect(lost.current({ height: 1, readAt: 0, dependsOn: A }, 2)).toBe(false);
  });

  it('keeps only the last maxBlocks blocks', () => {
    const ledger = new BlockLedger({ maxBlocks: 3 });
    for (let h = 1; h <= 10; h++) ledger.append(block(h), 0);
    expect(ledger.current({ height: 7, readAt: 0, dependsOn: A }, 10)).toBe(false);
    expect(ledger.current({ height: 8, readAt: 0, dependsOn: A }, 10)).toBe(true);
  });

  const op = fc.oneof(
    {
      weight: 6,
      arbitrary: fc.record({
        kind: fc.constant('next' as const),
        touch: fc.subarray(['SP1.a', 'SP1.b', 'SP1.c']),
        all: fc.boolean(),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({ kind: fc.constant('gap' as const), skip: fc.integer({ min: 2, max: 4 }) }),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('fork' as const) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('lost' as const) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('dup' as const) }) },
  );

  it('properties: never current past a block that touched a dependency or a break; duplicates change nothing', () => {
    fc.assert(
      fc.property(
        fc.array(op, { maxLength: 40 }),
        fc.subarray(['SP1.a', 'SP1.b', 'SP1.c'], { minLength: 1 }),
        (ops, deps) => {
          const ledger = new BlockLedger();
          const all: { block: ObservedBlock; at: number; brokeBefore: boolean }[] = [];
          let height = 0;
          let fork = 0;
          let parentFork = 0;
          let pendingBreak = false;
          let now = 0;
          for (const o of ops) {
            now++;
            if (o.kind === 'lost') {
              ledger.interrupt();
              pendingBreak = true;
              continue;
            }
            if (o.kind === 'dup') {
              const old = all[all.length - 1];
              if (old !== undefined) expect(ledger.append(old.block, now)).toBe('duplicate');
              continue;
            }
            if (o.kind === 'gap') {
              height += o.skip;
              pendingBreak = true;
            } else height++;
            if (o.kind === 'fork') {
              parentFork = fork + 7;
              fork += 13;
              pendingBreak = true;
            }
            const touched =
              o.kind === 'next' && o.all ? TOUCHES_ALL : some(...(o.kind === 'next' ? o.touch : []));
            const b = block(height, touched, fork, parentFork);
            parentFork = fork;
            ledger.append(b, now);
            all.push({ block: b, at: now, brokeBefore: pendingBreak });
            pendingBreak = false;
          }
          const dependsOn = new Set(deps);
          for (let i = 0; i < all.length; i++) {
            for (let j = i; j < all.length; j++) {
              const read = { height: all[i]!.block.height, readAt: all[i]!.at, dependsOn };
              const verdict = ledger.current(read, all[j]!.block.height);
              const later = all.slice(i + 1, j + 1);
              const touchedLater = later.some(
                ({ block: b }) =>
                  b.touched.all || deps.some((d) => !b.touched.all && b.touched.contracts.has(d)),
              );
              const brokeLater =
                later.some((b) => b.brokeBefore) || all.slice(j + 1).some((b) => b.brokeBefore);
              // Read at the first block of a run that began at a break: maybe on the other fork.
              const atBrokenStart = all[i]!.brokeBefore && i > 0;
              if (touchedLater || brokeLater || atBrokenStart) expect(verdict).toBe(false);
              // Nothing lost, nothing touched: the proof holds (unless an interruption came after the last block).
              if (!touchedLater && !brokeLater && !atBrokenStart && ledger.tip !== undefined)
                expect(verdict).toBe(true);
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
