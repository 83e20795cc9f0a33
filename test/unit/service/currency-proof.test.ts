import { describe, expect, it } from 'vitest';
import type { CacheEntry } from '../../../src/cache/entry.js';
import type { EntryDependencies, EntryRead } from '../../../src/chain/block-ledger.js';
import { CurrencyProof } from '../../../src/service/currency-proof.js';

const C = 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM.c';

/** A port whose analysis answers are set by the test, one call at a time. */
function port() {
  const state = {
    learned: [] as string[],
    generation: 0,
    answer: new Set([C]) as EntryDependencies,
    asked: 0,
    current: (_read: EntryRead, _tip: number) => true,
  };
  const proof = new CurrencyProof({
    network: 'testnet',
    dependsOn: async () => {
      state.asked++;
      return state.answer;
    },
    current: (read, tip) => state.current(read, tip),
    generation: () => state.generation,
    analysisVersion: () => state.learned.length,
    learnedSince: (version) => state.learned.slice(version),
  });
  return { state, proof };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));
const entry = (over: Partial<CacheEntry> = {}): CacheEntry => ({
  value: 'v',
  storedAt: 1,
  staleAt: null,
  expiresAt: null,
  tipHeight: 10,
  tipReported: true,
  ...over,
});

describe('CurrencyProof', () => {
  it('asks the analysis once, and again only after a deploy that may change the answer', async () => {
    const { state, proof } = port();
    expect(proof.dependencies(C, 'f')).toBeUndefined();
    await settle();
    expect(proof.dependencies(C, 'f')).toEqual(new Set([C]));
    expect(state.asked).toBe(1);
    // Another contract deployed: what f reaches is unchanged, still proven.
    state.learned.push(`${C}-other`);
    expect(proof.dependencies(C, 'f')).toEqual(new Set([C]));
    expect(state.asked).toBe(1);
    // A contract f reaches deployed (again, as a reorg may): asked again, nothing proven meanwhile.
    state.learned.push(C);
    state.answer = 'volatile';
    expect(proof.dependencies(C, 'f')).toBeUndefined();
    await settle();
    expect(proof.dependencies(C, 'f')).toBe('volatile');
    expect(state.asked).toBe(2);
    // A volatile answer (its source maybe missing then) is asked again after any deploy.
    state.learned.push(`${C}-third`);
    state.answer = new Set([C]);
    expect(proof.dependencies(C, 'f')).toBeUndefined();
    await settle();
    expect(proof.dependencies(C, 'f')).toEqual(new Set([C]));
    expect(state.asked).toBe(3);
  });

  it('boot contracts are volatile and data vars depend on their own contract, with no analysis', () => {
    const { state, proof } = port();
    expect(proof.dependencies('SP000000000000000000002Q6VF78.pox-4', 'get-pox-info')).toBe('volatile');
    expect(proof.dependencies('ST000000000000000000002AMW42H.signers')).toBe('volatile');
    expect(proof.dependencies(C)).toEqual(new Set([C]));
    expect(state.asked).toBe(0);
  });

  it('applies to latest-state reads of its own network only, and starts the analysis at once', async () => {
    const { state, proof } = port();
    expect(proof.forRead('mainnet', false, C, 'f')).toBeUndefined();
    expect(proof.forRead('testnet', true, C, 'f')).toBeUndefined();
    expect(state.asked).toBe(0);
    expect(proof.forRead('testnet', false, C, 'f')).toBeDefined();
    expect(state.asked).toBe(1);
    await settle();
    expect(proof.dependencies(C, 'f')).toEqual(new Set([C]));
  });

  it('proves only entries whose height their node reported, once what they depend on is known', async () => {
    const { proof } = port();
    const read = proof.forRead('testnet', false, C, 'f')!;
    // The analysis is under way: nothing is proven yet.
    expect(read.holds(entry(), 12)).toBe(false);
    await settle();
    const fresh = proof.forRead('testnet', false, C, 'f')!;
    expect(fresh.holds(entry(), 12)).toBe(true);
    expect(fresh.holds(entry({ tipReported: undefined }), 12)).toBe(false);
    expect(fresh.holds(entry({ tipHeight: null }), 12)).toBe(false);
    // A data var, map entry or constant depends on its contract alone: no analysis needed.
    expect(proof.forRead('testnet', false, C)!.holds(entry(), 12)).toBe(true);
  });

  it('asks the ledger again only when the entry, the tip or the ledger moved', async () => {
    const { state, proof } = port();
    let asked = 0;
    let current = true;
    state.current = () => {
      asked++;
      return current;
    };
    const read = proof.forRead('testnet', false, C)!;
    const e = entry();
    expect(read.holds(e, 12)).toBe(true);
    expect(read.holds(e, 12)).toBe(true);
    expect(asked).toBe(1);
    // Same tip, same ledger: the answer holds.
    current = false;
    expect(read.holds(e, 12)).toBe(true);
    state.generation++;
    expect(read.holds(e, 12)).toBe(false);
    expect(read.holds(e, 13)).toBe(false);
    expect(read.holds(entry(), 13)).toBe(false);
    expect(asked).toBe(4);
  });

  it('counts each entry the proof kept fresh past its bound (told by the judge)', () => {
    let kept = 0;
    const proof = new CurrencyProof({
      network: 'testnet',
      dependsOn: async () => new Set([C]),
      current: () => true,
      generation: () => 0,
      analysisVersion: () => 0,
      learnedSince: () => [],
      onKeptCurrent: () => kept++,
    });
    const read = proof.forRead('testnet', false, C)!;
    read.holds(entry(), 12);
    expect(kept).toBe(0);
    read.keptFresh?.();
    read.keptFresh?.();
    expect(kept).toBe(2);
  });
});
