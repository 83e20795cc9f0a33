/**
 * Strikes and sitting out (docs/consensus.md), on an injected clock: the limit within the
 * window makes an upstream sit out for exactly the sit-out time, after which its count starts
 * from zero; strikes spread over more than the window never add up; a fleet's count (StrikeSync)
 * is used when given, and its failure falls back to counting here.
 */
import { describe, expect, it } from 'vitest';
import { SIT_OUT_MS, STRIKE_WINDOW_MS, type StrikeSync, Strikes } from '../../src/upstream/strikes.js';

const clock = (start = 1_000) => {
  let t = start;
  return {
    now: () => t,
    advance(ms: number) {
      t += ms;
    },
  };
};

/** A fleet stand-in: records every call, answers what the test says. */
const fakeSync = (answer: (call: number) => Promise<number | undefined>) => {
  const sync = {
    strikes: [] as [string, number, number, number][],
    bound: new Map<string, (remainingMs: number) => void>(),
    async strike(id: string, limit: number, windowMs: number, sitOutMs: number) {
      sync.strikes.push([id, limit, windowMs, sitOutMs]);
      return answer(sync.strikes.length);
    },
    bind(id: string, apply: (remainingMs: number) => void) {
      sync.bound.set(id, apply);
    },
  };
  return sync satisfies StrikeSync;
};

describe('Strikes, counted here', () => {
  it('strikes below the limit do not make an upstream sit out', async () => {
    const c = clock();
    const sitOuts: [string, number][] = [];
    const strikes = new Strikes({ limit: 3, now: c.now, onSitOut: (id, ms) => sitOuts.push([id, ms]) });
    await strikes.strike('a');
    c.advance(1_000);
    await strikes.strike('a');
    // Another upstream's strikes are its own.
    await strikes.strike('b');
    expect(strikes.sittingOut('a')).toBe(false);
    expect(strikes.sittingOut('b')).toBe(false);
    expect(sitOuts).toEqual([]);
  });

  it('the limit within the window: sits out for exactly the sit-out time, then counts from zero', async () => {
    const c = clock();
    const sitOuts: [string, number][] = [];
    const strikes = new Strikes({
      limit: 3,
      // Longer than the whole test: strikes before the sit-out would still count if kept.
      windowMs: 60_000,
      sitOutMs: 5_000,
      now: c.now,
      onSitOut: (id, ms) => sitOuts.push([id, ms]),
    });
    await strikes.strike('a');
    c.advance(4_000);
    await strikes.strike('a');
    c.advance(5_999);
    await strikes.strike('a');
    expect(strikes.sittingOut('a')).toBe(true);
    expect(strikes.sittingOut('b')).toBe(false);
    expect(sitOuts).toEqual([['a', 5_000]]);
    // Strikes while sitting out are not counted.
    await strikes.strike('a');
    await strikes.strike('a');
    c.advance(4_999);
    expect(strikes.sittingOut('a')).toBe(true);
    c.advance(1);
    expect(strikes.sittingOut('a')).toBe(false);
    // Counting starts from zero: two more strikes are below the limit again.
    await strikes.strike('a');
    await strikes.strike('a');
    expect(strikes.sittingOut('a')).toBe(false);
    await strikes.strike('a');
    expect(strikes.sittingOut('a')).toBe(true);
    expect(sitOuts).toEqual([
      ['a', 5_000],
      ['a', 5_000],
    ]);
  });

  it('strikes spread over more than the window never add up', async () => {
    const c = clock();
    const strikes = new Strikes({ limit: 2, windowMs: 10_000, sitOutMs: 5_000, now: c.now });
    for (let i = 0; i < 20; i++) {
      await strikes.strike('a');
      expect(strikes.sittingOut('a')).toBe(false);
      // Exactly the window later, the last strike no longer counts.
      c.advance(10_000);
    }
    // Within the window they do.
    await strikes.strike('a');
    c.advance(9_999);
    await strikes.strike('a');
    expect(strikes.sittingOut('a')).toBe(true);
  });

  it('defaults to the documented window (10 minutes) and sit-out (5 minutes)', async () => {
    expect(STRIKE_WINDOW_MS).toBe(600_000);
    expect(SIT_OUT_MS).toBe(300_000);
    const c = clock();
    const strikes = new Strikes({ limit: 2, now: c.now });
    await strikes.strike('a');
    c.advance(STRIKE_WINDOW_MS - 1);
    await strikes.strike('a');
    c.advance(SIT_OUT_MS - 1);
    expect(strikes.sittingOut('a')).toBe(true);
    c.advance(1);
    expect(strikes.sittingOut('a')).toBe(false);
  });

  it('watch without a fleet binds nothing and changes nothing', async () => {
    const strikes = new Strikes({ limit: 1, now: clock().now });
    strikes.watch('a');
    expect(strikes.sittingOut('a')).toBe(false);
    await strikes.strike('a');
    expect(strikes.sittingOut('a')).toBe(true);
  });
});

describe('Strikes with a fleet (StrikeSync)', () => {
  it('asks the fleet with the limit, window and sit-out, and counts nothing here', async () => {
    const c = clock();
    const sync = fakeSync(async () => undefined);
    const strikes = new Strikes({ limit: 2, windowMs: 10_000, sitOutMs: 5_000, sync, now: c.now });
    for (let i = 0; i < 5; i++) await strikes.strike('a');
    expect(sync.strikes).toEqual(Array.from({ length: 5 }, () => ['a', 2, 10_000, 5_000]));
    // The fleet said no sit-out started: five strikes over the limit 2 were not counted locally.
    expect(strikes.sittingOut('a')).toBe(false);
  });

  it("the fleet's returned remaining time starts the sit-out", async () => {
    const c = clock();
    const sitOuts: [string, number][] = [];
    const sync = fakeSync(async (call) => (call === 2 ? 1_234 : undefined));
    const strikes = new Strikes({
      limit: 3,
      sitOutMs: 5_000,
      sync,
      now: c.now,
      onSitOut: (id, ms) => sitOuts.push([id, ms]),
    });
    await strikes.strike('a');
    expect(strikes.sittingOut('a')).toBe(false);
    // Below the local limit, yet the fleet's count reached it: the fleet's remaining time counts.
    await strikes.strike('a');
    expect(sitOuts).toEqual([['a', 1_234]]);
    c.advance(1_233);
    expect(strikes.sittingOut('a')).toBe(true);
    // Sitting out: the fleet is not asked.
    await strikes.strike('a');
    expect(sync.strikes).toHaveLength(2);
    c.advance(1);
    expect(strikes.sittingOut('a')).toBe(false);
  });

  it('a fleet that rejects: the strike is counted here, and the error reported', async () => {
    const c = clock();
    const errors: unknown[] = [];
    const down = new Error('redis is not connected');
    const sync = fakeSync(async () => {
      throw down;
    });
    const strikes = new Strikes({
      limit: 2,
      windowMs: 10_000,
      sitOutMs: 5_000,
      sync,
      now: c.now,
      onSyncError: (err) => errors.push(err),
    });
    await strikes.strike('a');
    expect(strikes.sittingOut('a')).toBe(false);
    c.advance(9_999);
    await strikes.strike('a');
    expect(strikes.sittingOut('a')).toBe(true);
    expect(errors).toEqual([down, down]);
    expect(sync.strikes).toHaveLength(2);
    c.advance(5_000);
    expect(strikes.sittingOut('a')).toBe(false);
  });

  it('watch(id) binds the upstream, and a sit-out applied through the callback is seen', async () => {
    const c = clock();
    const sitOuts: [string, number][] = [];
    const sync = fakeSync(async () => undefined);
    const strikes = new Strikes({ limit: 3, sync, now: c.now, onSitOut: (id, ms) => sitOuts.push([id, ms]) });
    strikes.watch('a');
    strikes.watch('b');
    expect([...sync.bound.keys()]).toEqual(['a', 'b']);
    sync.bound.get('a')!(2_000);
    expect(strikes.sittingOut('a')).toBe(true);
    expect(strikes.sittingOut('b')).toBe(false);
    expect(sitOuts).toEqual([['a', 2_000]]);
    // A shorter word from the fleet does not cut the sit-out short, nor is it reported again.
    sync.bound.get('a')!(500);
    c.advance(1_999);
    expect(strikes.sittingOut('a')).toBe(true);
    expect(sitOuts).toEqual([['a', 2_000]]);
    c.advance(1);
    expect(strikes.sittingOut('a')).toBe(false);
  });
});
