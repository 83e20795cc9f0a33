/**
 * The behaviour every CacheStore shares, run against each implementation. Time is an
 * injected clock: expiry is tested by advancing it, never by sleeping.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ReadThroughCache } from '../../../src/cache/read-through.js';
import type { CacheStore } from '../../../src/cache/store.js';

export interface TestClock {
  now: () => number;
  advance(ms: number): void;
}

export function testClock(start = Date.now()): TestClock {
  let t = Math.floor(start);
  return {
    now: () => t,
    advance(ms: number) {
      t += ms;
    },
  };
}

export interface StoreFixture {
  store: CacheStore;
  cleanup: () => Promise<void>;
}

export type StoreFactory = (ctx: { now: () => number }) => Promise<StoreFixture>;

const sorted = (keys: string[]): string[] => [...keys].sort();

/** Every character class that has bitten a cache: JSON escapes, NUL, CR/LF, RTL, astral. */
const ODD = 'quote " backslash \\ slash / nul \u0000 crlf \r\n tab \t % _ * ? [x] {}ü€😀\u202E\u{10FFFF} end';

export function runStoreContract(name: string, factory: StoreFactory): void {
  describe(`CacheStore contract: ${name}`, () => {
    let clock: TestClock;
    let store: CacheStore;
    let cleanup: () => Promise<void>;

    beforeEach(async () => {
      clock = testClock();
      ({ store, cleanup } = await factory({ now: clock.now }));
    });

    afterEach(async () => {
      await cleanup();
    });

    it('returns undefined for an absent key', async () => {
      expect(await store.get('abi:mainnet:nothing')).toBeUndefined();
    });

    it('stores a value with its write time and no expiry by default', async () => {
      const t = clock.now();
      await store.set('abi:mainnet:SP1.a', '{"x":1}');
      expect(await store.get('abi:mainnet:SP1.a')).toEqual({
        value: '{"x":1}',
        storedAt: t,
        staleAt: null,
        expiresAt: null,
        tipHeight: null,
      });
    });

    it('treats a ttl of 0 as no expiry', async () => {
      await store.set('k:zero', 'v', 0);
      clock.advance(365 * 24 * 3600 * 1000);
      expect((await store.get('k:zero'))?.expiresAt).toBeNull();
    });

    it('overwrites value, write time and expiry', async () => {
      await store.set('ro:k', 'first', 5_000);
      clock.advance(10);
      await store.set('ro:k', 'second');
      expect(await store.get('ro:k')).toEqual({
        value: 'second',
        storedAt: clock.now(),
        staleAt: null,
        expiresAt: null,
        tipHeight: null,
      });
      clock.advance(10);
      await store.set('ro:k', 'third', 1_000);
      expect(await store.get('ro:k')).toEqual({
        value: 'third',
        storedAt: clock.now(),
        staleAt: clock.now() + 1_000,
        expiresAt: clock.now() + 1_000,
        tipHeight: null,
      });
      expect(await store.list('ro:')).toEqual(['ro:k']);
    });

    it('keeps an entry until its ttl has passed, and not a millisecond longer', async () => {
      const t = clock.now();
      await store.set('ro:ttl', 'v', 1_000);
      expect((await store.get('ro:ttl'))?.expiresAt).toBe(t + 1_000);
      clock.advance(999);
      expect((await store.get('ro:ttl'))?.value).toBe('v');
      expect(await store.list('ro:')).toEqual(['ro:ttl']);
      clock.advance(1);
      expect(await store.get('ro:ttl')).toBeUndefined();
      expect(await store.list('ro:')).toEqual([]);
      // A key that expired can be written again.
      await store.set('ro:ttl', 'again', 1_000);
      expect((await store.get('ro:ttl'))?.value).toBe('again');
    });

    it('keeps the tip height an entry was read at, and overwrites it', async () => {
      await store.set('ro:tip', 'v', undefined, { tipHeight: 170_123 });
      expect(await store.get('ro:tip')).toMatchObject({ value: 'v', staleAt: null, tipHeight: 170_123 });
      await store.set('ro:tip', 'w', 1_000, { tipHeight: 0 });
      expect((await store.get('ro:tip'))?.tipHeight).toBe(0);
      await store.set('ro:tip', 'x');
      expect((await store.get('ro:tip'))?.tipHeight).toBeNull();
    });

    it("keeps whether the tip height is the answering node's own, and overwrites it", async () => {
      await store.set('ro:own', 'v', undefined, { tipHeight: 12, tipReported: true });
      expect(await store.get('ro:own')).toMatchObject({ tipHeight: 12, tipReported: true });
      // The gateway's own tip knowledge: no proof may start from it.
      await store.set('ro:own', 'w', undefined, { tipHeight: 13 });
      const plain = await store.get('ro:own');
      expect(plain?.tipHeight).toBe(13);
      expect(plain?.tipReported).toBeUndefined();
      // No height at all: nothing to report.
      await store.set('ro:own', 'x', undefined, { tipReported: true });
      expect((await store.get('ro:own'))?.tipReported).toBeUndefined();
    });

    it('keeps the votes of an attested answer, and none for an entry written without', async () => {
      await store.set('ro:voted', 'v', 1_000, { votes: 3, tipHeight: 9 });
      expect(await store.get('ro:voted')).toMatchObject({ value: 'v', votes: 3, tipHeight: 9 });
      await store.set('ro:plain', 'w', 1_000, { tipHeight: 9 });
      const plain = await store.get('ro:plain');
      expect(plain?.value).toBe('w');
      expect(plain).not.toHaveProperty('votes');
      // Overwritten without votes: one upstream's word again.
      await store.set('ro:voted', 'x');
      const rewritten = await store.get('ro:voted');
      expect(rewritten?.value).toBe('x');
      expect(rewritten).not.toHaveProperty('votes');
    });

    it('holds a stale entry past its ttl for keepStaleMs, then drops it', async () => {
      const t = clock.now();
      await store.set('ro:stale', 'v', 1_000, { keepStaleMs: 500, tipHeight: 7 });
      expect(await store.get('ro:stale')).toEqual({
        value: 'v',
        storedAt: t,
        staleAt: t + 1_000,
        expiresAt: t + 1_500,
        tipHeight: 7,
      });
      clock.advance(1_200);
      // Stale, not expired: still there, still listed, with its times unchanged.
      expect((await store.get('ro:stale'))?.staleAt).toBe(t + 1_000);
      expect(await store.list('ro:')).toEqual(['ro:stale']);
      clock.advance(300);
      expect(await store.get('ro:stale')).toBeUndefined();
      expect(await store.list('ro:')).toEqual([]);
    });

    it('deletes, reporting whether something was removed', async () => {
      await store.set('abi:testnet:ST1.x', 'v');
      expect(await store.delete('abi:testnet:ST1.x')).toBe(true);
      expect(await store.get('abi:testnet:ST1.x')).toBeUndefined();
      expect(await store.list('abi:')).toEqual([]);
      expect(await store.delete('abi:testnet:ST1.x')).toBe(false);
      expect(await store.delete('never:written')).toBe(false);
    });

    it('lists exactly the live keys that start with a prefix', async () => {
      const keys = [
        'abi:mainnet:SP1.a',
        'abi:mainnet:SP2.b',
        'abi:testnet:ST1.c',
        'ro:mainnet:SP1.a:f:s:00',
        'abx:mainnet:SP1.a',
        'ab',
        'ABI:mainnet:SP9.upper',
      ];
      for (const k of keys) await store.set(k, 'v');
      expect(sorted(await store.list('abi:'))).toEqual([
        'abi:mainnet:SP1.a',
        'abi:mainnet:SP2.b',
        'abi:testnet:ST1.c',
      ]);
      expect(sorted(await store.list('abi:mainnet:'))).toEqual(['abi:mainnet:SP1.a', 'abi:mainnet:SP2.b']);
      expect(sorted(await store.list('abi:mainnet:SP1.a'))).toEqual(['abi:mainnet:SP1.a']);
      expect(sorted(await store.list('ab'))).toEqual(sorted(keys.filter((k) => k.startsWith('ab'))));
      expect(sorted(await store.list(''))).toEqual(sorted(keys));
      expect(await store.list('abi:mainnet:SP3')).toEqual([]);
      expect(await store.list('zzz')).toEqual([]);
    });

    it('treats _ and % in a prefix literally (no wildcard)', async () => {
      for (const k of [
        'a_b:1',
        'axb:1',
        'a%c:1',
        'abc:1',
        'ns:a_b',
        'ns:axb',
        'ns:a%',
        'ns:aZZ',
        'n%:1',
        'nx:1',
      ]) {
        await store.set(k, 'v');
      }
      expect(await store.list('a_')).toEqual(['a_b:1']);
      expect(await store.list('a%')).toEqual(['a%c:1']);
      expect(await store.list('ns:a_')).toEqual(['ns:a_b']);
      expect(await store.list('ns:a%')).toEqual(['ns:a%']);
      expect(await store.list('n%')).toEqual(['n%:1']);
      expect(await store.list('n%:')).toEqual(['n%:1']);
    });

    it('lists by prefixes with several colons, glob characters and spaces', async () => {
      for (const k of ['x:y:z:1', 'x:y:z2', 'x:y:', 'x:yz', 'g:*', 'g:[a]', 'g:?', 'g:a', 's: a b', 's:ab']) {
        await store.set(k, 'v');
      }
      expect(sorted(await store.list('x:y:'))).toEqual(['x:y:', 'x:y:z2', 'x:y:z:1']);
      expect(sorted(await store.list('x:y:z'))).toEqual(['x:y:z2', 'x:y:z:1']);
      expect(await store.list('g:*')).toEqual(['g:*']);
      expect(await store.list('g:[')).toEqual(['g:[a]']);
      expect(await store.list('g:?')).toEqual(['g:?']);
      expect(await store.list('s: ')).toEqual(['s: a b']);
    });

    it('lists by unicode prefixes in code point order, astral characters included', async () => {
      const keys = [
        'ü:1',
        'ü:2',
        'u:1',
        'üb',
        'v:1',
        '😀:a',
        '😀b',
        '😁:c',
        '\uFFFF:a',
        '\u{10000}:b',
        'z\u{10FFFF}:a',
        'zz',
      ];
      for (const k of keys) await store.set(k, 'v');
      expect(sorted(await store.list('ü'))).toEqual(['ü:1', 'ü:2', 'üb']);
      expect(sorted(await store.list('ü:'))).toEqual(['ü:1', 'ü:2']);
      expect(sorted(await store.list('😀'))).toEqual(['😀:a', '😀b']);
      expect(await store.list('\uFFFF')).toEqual(['\uFFFF:a']);
      expect(await store.list('\u{10000}')).toEqual(['\u{10000}:b']);
      expect(await store.list('z\u{10FFFF}')).toEqual(['z\u{10FFFF}:a']);
      expect(await store.list('z')).toHaveLength(2);
    });

    it('keeps keys and values with odd characters intact', async () => {
      const key = `odd:${ODD}`;
      await store.set(key, ODD);
      expect((await store.get(key))?.value).toBe(ODD);
      expect(await store.list('odd:')).toEqual([key]);
      await store.set('empty:', '');
      expect((await store.get('empty:'))?.value).toBe('');
      const longKey = `long:${'k'.repeat(2_000)}`;
      await store.set(longKey, 'v');
      expect((await store.get(longKey))?.value).toBe('v');
    });

    it('round-trips a 200 KB value', async () => {
      const unit = `{"name":"fn-${ODD}","args":[1,2,3]},`;
      const big = unit.repeat(Math.ceil(200_000 / unit.length));
      expect(big.length).toBeGreaterThanOrEqual(200_000);
      await store.set('abi:mainnet:SP1.big', big, 60_000);
      const entry = await store.get('abi:mainnet:SP1.big');
      expect(entry?.value.length).toBe(big.length);
      expect(entry?.value === big).toBe(true);
    });

    it('handles concurrent writes to distinct keys', async () => {
      const keys = Array.from({ length: 50 }, (_, i) => `c:${i}`);
      await Promise.all(keys.map((k, i) => store.set(k, String(i))));
      expect(sorted(await store.list('c:'))).toEqual(sorted(keys));
      const values = await Promise.all(keys.map((k) => store.get(k)));
      expect(values.map((e) => e?.value)).toEqual(keys.map((_, i) => String(i)));
    });

    describe('chain-aware freshness through the read-through cache', () => {
      const transient = () => true;

      it('records the tip height a load reports and keeps a ttl entry stale for keepStaleMs', async () => {
        const cache = new ReadThroughCache(store, { now: clock.now });
        const t = clock.now();
        const first = await cache.get('ro:f', async () => ({ value: 'v1', meta: { tipHeight: 42 } }), {
          ttlMs: 1_000,
          keepStaleMs: 5_000,
        });
        expect(first).toMatchObject({ value: 'v1', outcome: 'miss', stored: true, meta: { tipHeight: 42 } });
        expect(await store.get('ro:f')).toEqual({
          value: 'v1',
          storedAt: t,
          staleAt: t + 1_000,
          expiresAt: t + 6_000,
          tipHeight: 42,
        });
      });

      it('answers stale-while-revalidate from the ttl end for the window, then refetches', async () => {
        const cache = new ReadThroughCache(store, { now: clock.now });
        const policy = { ttlMs: 1_000, keepStaleMs: 60_000, staleWhileRevalidateMs: 2_000 };
        await cache.get('ro:swr', async () => 'v1', policy);
        clock.advance(1_500);
        let loads = 0;
        const refresh = async () => {
          loads++;
          return `v${loads + 1}`;
        };
        const stale = await cache.get('ro:swr', refresh, policy);
        expect(stale).toMatchObject({ value: 'v1', outcome: 'hit', stale: 'while-revalidate' });
        expect(stale.staleSince).toBe(clock.now() - 500);
        // The refresh runs in the background and replaces the entry.
        await expect.poll(() => cache.inflight).toBe(0);
        expect((await store.get('ro:swr'))?.value).toBe('v2');
        expect(loads).toBe(1);
        // Past the window (counted from the ttl's end), a stale entry is refetched.
        clock.advance(1_000 + 2_001);
        const refetched = await cache.get('ro:swr', refresh, policy);
        expect(refetched).toMatchObject({ value: 'v3', outcome: 'miss', stale: 'refetch' });
      });

      it('dates a broken block bound from when the breaking tip was learned', async () => {
        const cache = new ReadThroughCache(store, { now: clock.now });
        await store.set('ro:blk', 'at10', undefined, { tipHeight: 10 });
        const learnedAt = clock.now();
        clock.advance(3_000);
        const policy = (windowMs: number) => ({
          freshness: { maxBlocks: 2 },
          tipView: () => ({
            height: 13,
            firstLearnedAt: (height: number) => (height === 13 ? learnedAt : undefined),
          }),
          staleIfErrorMs: windowMs,
          isTransient: transient,
        });
        const failing = async () => {
          throw new Error('upstream down');
        };
        const inside = await cache.get('ro:blk', failing, policy(3_000));
        expect(inside).toMatchObject({ value: 'at10', stale: 'if-error', staleSince: learnedAt });
        await expect(cache.get('ro:blk', failing, policy(2_999))).rejects.toThrow('upstream down');
        // Within the bound it is simply fresh.
        expect(
          await cache.get('ro:blk', failing, {
            freshness: { maxBlocks: 3 },
            tipView: () => ({ height: 13, firstLearnedAt: () => undefined }),
          }),
        ).toMatchObject({
          value: 'at10',
          outcome: 'hit',
        });
      });

      it('tells the load a stale answer is at hand, and never answers stale for a definite failure', async () => {
        const cache = new ReadThroughCache(store, { now: clock.now });
        await store.set('ro:sie', 'old', 1_000, { keepStaleMs: 10_000 });
        clock.advance(1_001);
        const seen: boolean[] = [];
        const definite = Object.assign(new Error('okay:false'), { definite: true });
        const policy = {
          keepStaleMs: 10_000,
          staleIfErrorMs: 5_000,
          isTransient: (err: unknown) => !(err as { definite?: boolean }).definite,
        };
        await expect(
          cache.get(
            'ro:sie',
            async (ctx) => {
              seen.push(ctx.staleAtHand);
              throw definite;
            },
            policy,
          ),
        ).rejects.toBe(definite);
        expect(seen).toEqual([true]);
      });
    });

    it('pages keys under a prefix in key order from a cursor, skipping expired and removed ones, and counts them', async () => {
      if (store.listPage === undefined || store.count === undefined) return;
      const keys = Array.from({ length: 25 }, (_, i) => `abi:mainnet:SP${String(i).padStart(3, '0')}.c`);
      for (const k of [...keys].reverse()) await store.set(k, '{}');
      await store.set('abi:mainnet:SP999.short', '{}', 1000);
      await store.set('abz:other', '{}');
      await store.set('ro:mainnet:x', '0x03');
      await store.delete(keys[3]!);
      clock.advance(1001);
      const live = keys.filter((_, i) => i !== 3);
      const pages: string[][] = [];
      let after: string | undefined;
      for (;;) {
        const page = await store.listPage('abi:', after, 10);
        if (page.length === 0) break;
        pages.push(page);
        after = page[page.length - 1];
      }
      expect(pages.map((p) => p.length)).toEqual([10, 10, 4]);
      expect(pages.flat()).toEqual(live);
      expect(await store.listPage('abi:', live[live.length - 1], 10)).toEqual([]);
      // A cursor that is not a key (removed since) still pages from where it would be.
      expect(await store.listPage('abi:', keys[3], 2)).toEqual([keys[4], keys[5]]);
      expect(await store.count('abi:')).toBe(live.length);
    });

    it('closes idempotently', async () => {
      await store.set('k:1', 'v');
      await store.close();
      await expect(store.close()).resolves.toBeUndefined();
    });
  });
}
