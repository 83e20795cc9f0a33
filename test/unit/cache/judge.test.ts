/**
 * The one judge of freshness: examples of each rule, then properties over random entries,
 * requests and tip histories (fast-check): a verdict of fresh never holds for an entry whose
 * ttl or block bound is broken, stale is never servable past its window, and a window never
 * reopens while the tip is unknown.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type CacheEntry, newEntry } from '../../../src/cache/entry.js';
import { judge, needsTip, type ProofView, type TipView, tipOf } from '../../../src/cache/judge.js';

const tipAt = (height: number | undefined, learned: Record<number, number> = {}): TipView => ({
  height,
  firstLearnedAt: (h) => {
    const found = Object.keys(learned)
      .map(Number)
      .filter((k) => k >= h)
      .sort((a, b) => a - b)[0];
    return found === undefined ? undefined : learned[found];
  },
});

/** A proof whose answer the test sets, recording each tip it is asked at and each entry it kept fresh. */
const proofOf = (holds: boolean) => {
  const proof = {
    asked: [] as number[],
    kept: 0,
    holds: (_entry: CacheEntry, tipHeight: number) => {
      proof.asked.push(tipHeight);
      return holds;
    },
    keptFresh: () => {
      proof.kept++;
    },
  };
  return proof satisfies ProofView;
};

describe('judge', () => {
  it('fresh within the ttl, stale after it, unusable once gone', () => {
    const entry = newEntry('v', 0, 1_000, { keepStaleMs: 500 });
    expect(judge(entry, {}, undefined, 999)).toEqual({ use: 'fresh' });
    expect(judge(entry, { staleIfErrorMs: 200 }, undefined, 1_100)).toMatchObject({
      use: 'stale',
      since: 1_000,
      ifError: true,
      whileRevalidate: false,
    });
    expect(judge(entry, { staleIfErrorMs: 200 }, undefined, 1_300)).toMatchObject({
      use: 'stale',
      ifError: false,
    });
    expect(judge(entry, {}, undefined, 1_500)).toEqual({ use: 'unusable', why: 'expired' });
  });

  it('a block bound: fresh while the chain moved at most maxBlocks, stale since the tip that broke it', () => {
    const at10 = newEntry('v', 0, undefined, { tipHeight: 10 });
    expect(judge(at10, { maxBlocks: 2 }, tipAt(12), 50)).toEqual({ use: 'fresh' });
    expect(judge(at10, { maxBlocks: 2 }, tipAt(13, { 13: 40 }), 50)).toMatchObject({
      use: 'stale',
      since: 40,
    });
    // Read at an unknown height: no bound fits it.
    expect(judge(newEntry('v', 5), { maxBlocks: 100 }, tipAt(12), 50)).toMatchObject({
      use: 'stale',
      since: 5,
    });
  });

  it('proof of currency keeps an entry read blocks ago fresh, current at the tip it is proven at', () => {
    const at10 = newEntry('v', 0, undefined, { tipHeight: 10 });
    const proof = proofOf(true);
    const verdict = judge(at10, { maxBlocks: 0, proof }, tipAt(15), 50);
    expect(verdict).toEqual({ use: 'fresh', currentAt: 15 });
    expect(tipOf(at10, verdict)).toBe(15);
    expect(proof.asked).toEqual([15]);
    // It kept the entry fresh past its bound: counted.
    expect(proof.kept).toBe(1);
  });

  it('with the tip unknown, stale since the last knowledge that showed it fresh stopped counting', () => {
    const at10 = newEntry('v', 0, undefined, { tipHeight: 10 });
    const unknown: TipView = {
      height: undefined,
      last: { height: 10, expiredAt: 3_000 },
      firstLearnedAt: () => undefined,
    };
    expect(judge(at10, { maxBlocks: 0, staleIfErrorMs: 2_000 }, unknown, 4_000)).toMatchObject({
      use: 'stale',
      since: 3_000,
      ifError: true,
    });
    expect(judge(at10, { maxBlocks: 0, staleIfErrorMs: 2_000 }, unknown, 9_000)).toMatchObject({
      ifError: false,
    });
    // Nothing ever known: stale since it was stored.
    expect(
      judge(at10, { maxBlocks: 0 }, { height: undefined, firstLearnedAt: () => undefined }, 9_000),
    ).toMatchObject({
      since: 0,
    });
  });

  it('an entry of another chain is never served', () => {
    const entry = { ...newEntry('v', 0), chain: 'a' };
    expect(judge(entry, { chain: 'b' }, undefined, 1)).toEqual({ use: 'unusable', why: 'other-chain' });
    expect(judge(entry, { chain: 'a' }, undefined, 1)).toEqual({ use: 'fresh' });
    // While the chain is unknown, or for an entry written before it was, nothing is refused.
    expect(judge(entry, {}, undefined, 1)).toEqual({ use: 'fresh' });
    expect(judge(newEntry('v', 0), { chain: 'b' }, undefined, 1)).toEqual({ use: 'fresh' });
  });

  it('under minVotes, an entry attested by fewer (one upstream’s word counts as one) is unattested', () => {
    const UNATTESTED = { use: 'unusable', why: 'unattested' };
    const voted = (votes: number | undefined) => newEntry('v', 0, 1_000, { keepStaleMs: 500, votes });
    expect(voted(3).votes).toBe(3);
    expect(voted(undefined)).not.toHaveProperty('votes');
    for (const votes of [1, undefined]) {
      // Fresh by its ttl, stale, with a block bound: never served.
      expect(judge(voted(votes), { minVotes: 2 }, undefined, 10)).toEqual(UNATTESTED);
      expect(judge(voted(votes), { minVotes: 2, staleIfErrorMs: 1_000 }, undefined, 1_100)).toEqual(
        UNATTESTED,
      );
      expect(judge(voted(votes), { minVotes: 2, maxBlocks: 5 }, tipAt(3), 10)).toEqual(UNATTESTED);
    }
    // Enough votes: judged as usual, fresh, stale and gone alike.
    for (const votes of [2, 3]) {
      expect(judge(voted(votes), { minVotes: 2 }, undefined, 10)).toEqual({ use: 'fresh' });
      expect(judge(voted(votes), { minVotes: 2, staleIfErrorMs: 1_000 }, undefined, 1_100)).toMatchObject({
        use: 'stale',
        since: 1_000,
        ifError: true,
      });
      expect(judge(voted(votes), { minVotes: 2 }, undefined, 1_500)).toEqual({
        use: 'unusable',
        why: 'expired',
      });
    }
    expect(judge(voted(2), { minVotes: 3 }, undefined, 10)).toEqual(UNATTESTED);
    // minVotes 1 (consensus off, 1/1) refuses nothing.
    expect(judge(voted(undefined), { minVotes: 1 }, undefined, 10)).toEqual({ use: 'fresh' });
  });

  it('without minVotes, votes do not matter', () => {
    for (const votes of [undefined, 1, 2, 3]) {
      const entry = newEntry('v', 0, 1_000, { keepStaleMs: 500, votes });
      expect(judge(entry, {}, undefined, 10)).toEqual({ use: 'fresh' });
      expect(judge(entry, { staleIfErrorMs: 1_000 }, undefined, 1_100)).toMatchObject({ use: 'stale' });
      expect(judge(entry, {}, undefined, 1_500)).toEqual({ use: 'unusable', why: 'expired' });
    }
  });
});

describe('the tip a verdict says an entry is current at', () => {
  const at10 = newEntry('v', 0, undefined, { tipHeight: 10, tipReported: true });

  it('within its bound and proven: fresh as the bound alone says, current at the tip, not counted', () => {
    const proof = proofOf(true);
    const verdict = judge(at10, { maxBlocks: 3, proof }, tipAt(12), 50);
    expect(verdict).toEqual({ use: 'fresh', currentAt: 12 });
    expect(tipOf(at10, verdict)).toBe(12);
    // The bound kept it fresh, not the proof.
    expect(proof.kept).toBe(0);
  });

  it('without a bound, a proof still says which tip the entry is current at', () => {
    const verdict = judge(at10, { proof: proofOf(true) }, tipAt(20), 50);
    expect(verdict).toEqual({ use: 'fresh', currentAt: 20 });
    expect(tipOf(at10, judge(at10, { proof: proofOf(false) }, tipAt(20), 50))).toBe(10);
  });

  it('not proven: the height it was read at, and past its bound it is stale', () => {
    const proof = proofOf(false);
    const within = judge(at10, { maxBlocks: 3, proof }, tipAt(12), 50);
    expect(within).toEqual({ use: 'fresh' });
    expect(tipOf(at10, within)).toBe(10);
    const past = judge(at10, { maxBlocks: 0, proof }, tipAt(12, { 11: 30 }), 50);
    expect(past).toMatchObject({ use: 'stale', since: 30 });
    expect(tipOf(at10, past)).toBe(10);
    expect(proof.kept).toBe(0);
  });

  it('the proof is never asked when it could say nothing', () => {
    const proof = proofOf(true);
    // At or below the height it was read at: nothing to carry it to.
    expect(judge(at10, { maxBlocks: 0, proof }, tipAt(10), 50)).toEqual({ use: 'fresh' });
    expect(judge(at10, { maxBlocks: 0, proof }, tipAt(9), 50)).toEqual({ use: 'fresh' });
    // The tip unknown: stale, proven at no tip.
    expect(judge(at10, { maxBlocks: 0, proof }, tipAt(undefined), 50).use).toBe('stale');
    // Stale by its ttl, gone, or of another chain: the tip changes nothing.
    const timed = newEntry('v', 0, 100, { tipHeight: 10, tipReported: true, keepStaleMs: 100 });
    expect(judge(timed, { maxBlocks: 0, proof }, tipAt(12), 150).use).toBe('stale');
    expect(judge(timed, { maxBlocks: 0, proof }, tipAt(12), 250).use).toBe('unusable');
    expect(judge({ ...at10, chain: 'a' }, { chain: 'b', proof }, tipAt(12), 50).use).toBe('unusable');
    // A height the reader may not believe fits no bound and is proven at nothing.
    const doubtful: TipView = { ...tipAt(12), plausible: () => false };
    expect(judge(at10, { maxBlocks: 5, proof }, doubtful, 50)).toMatchObject({ use: 'stale', since: 0 });
    expect(judge(at10, { proof }, doubtful, 50)).toEqual({ use: 'fresh' });
    // Read at an unknown height.
    expect(judge(newEntry('v', 0), { proof }, tipAt(12), 50)).toEqual({ use: 'fresh' });
    expect(proof.asked).toEqual([]);
  });

  it('a stale or unusable verdict tells the height the entry was read at; no height, no tip', () => {
    const timed = newEntry('v', 0, 100, { tipHeight: 10, keepStaleMs: 100 });
    expect(tipOf(timed, judge(timed, {}, undefined, 150))).toBe(10);
    expect(tipOf(timed, judge(timed, {}, undefined, 250))).toBe(10);
    expect(tipOf(newEntry('v', 0), judge(newEntry('v', 0), {}, undefined, 1))).toBeUndefined();
    expect(tipOf(timed, undefined)).toBe(10);
  });

  it('answers proven at one tip share one verdict (a replayed hit allocates none)', () => {
    const other = newEntry('w', 5, undefined, { tipHeight: 11, tipReported: true });
    const first = judge(at10, { maxBlocks: 0, proof: proofOf(true) }, tipAt(15), 50);
    expect(judge(other, { maxBlocks: 0, proof: proofOf(true) }, tipAt(15), 60)).toBe(first);
    expect(judge(at10, { maxBlocks: 0, proof: proofOf(true) }, tipAt(16), 60)).toEqual({
      use: 'fresh',
      currentAt: 16,
    });
  });
});

describe('needsTip', () => {
  const at10 = newEntry('v', 0, 100, { tipHeight: 10, keepStaleMs: 100 });

  it('only a block bound or a proof looks at the tip, and only for an entry still fresh by its ttl', () => {
    expect(needsTip(at10, {}, 50)).toBe(false);
    expect(needsTip(at10, { maxBlocks: 2 }, 50)).toBe(true);
    expect(needsTip(at10, { proof: proofOf(true) }, 50)).toBe(true);
    // Stale by its ttl, gone, or of another chain: judged without the tip.
    expect(needsTip(at10, { maxBlocks: 2 }, 150)).toBe(false);
    expect(needsTip(at10, { maxBlocks: 2 }, 250)).toBe(false);
    expect(needsTip({ ...at10, chain: 'a' }, { maxBlocks: 2, chain: 'b' }, 50)).toBe(false);
  });

  it('whenever it says no, the verdict without a tip is the verdict with any tip', () => {
    fc.assert(
      fc.property(
        entryArb,
        fc.option(fc.integer({ min: 0, max: 20 }), { nil: undefined }),
        fc.boolean(),
        fc.integer({ min: 0, max: 200 }),
        fc.integer({ min: 0, max: 30_000 }),
        (entry, maxBlocks, proven, height, now) => {
          const req = { maxBlocks, proof: proofOf(proven) };
          if (needsTip(entry, req, now)) return;
          expect(judge(entry, req, tipAt(height), now)).toEqual(judge(entry, req, undefined, now));
        },
      ),
      { numRuns: 1_000 },
    );
  });
});

const entryArb = fc
  .record({
    storedAt: fc.integer({ min: 0, max: 10_000 }),
    ttl: fc.option(fc.integer({ min: 1, max: 5_000 }), { nil: undefined }),
    keep: fc.integer({ min: 0, max: 5_000 }),
    tipHeight: fc.option(fc.integer({ min: 0, max: 100 }), { nil: null }),
  })
  .map(
    ({ storedAt, ttl, keep, tipHeight }): CacheEntry =>
      newEntry('v', storedAt, ttl, { keepStaleMs: keep, tipHeight }),
  );

const historyArb = fc
  .array(fc.record({ height: fc.integer({ min: 0, max: 200 }), at: fc.integer({ min: 0, max: 20_000 }) }), {
    maxLength: 10,
  })
  .map((sightings) => {
    // Heights first learned in ascending order at ascending moments, as ChainTips keeps them.
    const sorted = [...new Map(sightings.map((s) => [s.height, s.at])).entries()].sort((a, b) => a[0] - b[0]);
    let at = 0;
    return sorted.map(([height, t]) => {
      at = Math.max(at, t);
      return { height, at };
    });
  });

const viewOf = (history: { height: number; at: number }[], known: boolean, maxAgeMs: number): TipView => {
  const last = history.at(-1);
  return {
    height: known ? last?.height : undefined,
    last: last === undefined ? undefined : { height: last.height, expiredAt: last.at + maxAgeMs },
    firstLearnedAt: (h) => history.find((s) => s.height >= h)?.at,
  };
};

describe('judge properties', () => {
  const requestArb = fc.record({
    maxBlocks: fc.option(fc.integer({ min: 0, max: 20 }), { nil: undefined }),
    staleWhileRevalidateMs: fc.option(fc.integer({ min: 0, max: 5_000 }), { nil: undefined }),
    staleIfErrorMs: fc.option(fc.integer({ min: 0, max: 5_000 }), { nil: undefined }),
  });
  /** What the judge is asked: an entry, a request, the tip as a history makes it (known or not), a moment. */
  const judgedArb = fc
    .record({
      entry: entryArb,
      req: requestArb,
      history: historyArb,
      known: fc.boolean(),
      now: fc.integer({ min: 0, max: 30_000 }),
    })
    .map((c) => ({ ...c, tip: viewOf(c.history, c.known, 5_000) }));

  it('fresh never holds for an entry whose ttl or block bound is broken', () => {
    fc.assert(
      fc.property(judgedArb, ({ entry, req, tip, now }) => {
        const verdict = judge(entry, req, tip, now);
        if (verdict.use !== 'fresh') return;
        expect(entry.staleAt === null || entry.staleAt > now).toBe(true);
        if (req.maxBlocks !== undefined) {
          expect(entry.tipHeight).not.toBeNull();
          expect(tip.height).toBeDefined();
          expect(tip.height! - entry.tipHeight!).toBeLessThanOrEqual(req.maxBlocks);
        }
      }),
      { numRuns: 2_000 },
    );
  });

  it('a proof only adds: what is fresh stays fresh, and fresh by proof is current at the tip now', () => {
    fc.assert(
      fc.property(judgedArb, fc.boolean(), ({ entry, req, tip, now }, holds) => {
        const plain = judge(entry, req, tip, now);
        const proof = proofOf(holds);
        const proven = judge(entry, { ...req, proof }, tip, now);
        if (plain.use === 'fresh') expect(proven.use).toBe('fresh');
        if (!holds) expect(proven).toEqual(plain);
        if (proven.use === 'fresh' && proven.currentAt !== undefined) {
          expect(proven.currentAt).toBe(tip.height);
          expect(proven.currentAt).toBeGreaterThan(entry.tipHeight!);
        }
        // Counted only when the proof, not the bound, kept it fresh.
        expect(proof.kept).toBe(plain.use !== 'fresh' && proven.use === 'fresh' ? 1 : 0);
        if (plain.use !== 'fresh' && proven.use === 'fresh') expect(proven.currentAt).toBeDefined();
      }),
      { numRuns: 2_000 },
    );
  });

  it('stale is never servable past its window, nor before the moment it went stale', () => {
    fc.assert(
      fc.property(judgedArb, ({ entry, req, tip, now }) => {
        const verdict = judge(entry, req, tip, now);
        if (verdict.use !== 'stale') return;
        expect(verdict.since).toBeLessThanOrEqual(now);
        if (verdict.whileRevalidate)
          expect(now - verdict.since).toBeLessThanOrEqual(req.staleWhileRevalidateMs ?? -1);
        if (verdict.ifError) expect(now - verdict.since).toBeLessThanOrEqual(req.staleIfErrorMs ?? -1);
        // Never stale before its ttl ended, when the ttl is what broke.
        if (entry.staleAt !== null && entry.staleAt <= now) expect(verdict.since).toBe(entry.staleAt);
      }),
      { numRuns: 2_000 },
    );
  });

  it('with the tip unknown, the moment an entry went stale does not move with the clock', () => {
    fc.assert(
      fc.property(
        entryArb,
        historyArb,
        fc.integer({ min: 0, max: 20 }),
        fc.integer({ min: 0, max: 30_000 }),
        (entry, history, maxBlocks, now) => {
          // As the tracker reports it: the tip is unknown only once the last knowledge expired,
          // and the entry was written before now.
          const last = history.at(-1);
          fc.pre(
            entry.staleAt === null && entry.storedAt <= now && (last === undefined || last.at + 5_000 <= now),
          );
          const tip = viewOf(history, false, 5_000);
          const first = judge(entry, { maxBlocks }, tip, now);
          const later = judge(entry, { maxBlocks }, tip, now + 60_000);
          if (first.use === 'stale' && later.use === 'stale') expect(later.since).toBe(first.since);
          expect(first.use).not.toBe('fresh');
        },
      ),
      { numRuns: 1_000 },
    );
  });
});
