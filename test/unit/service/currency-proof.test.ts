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

  it('proves only entries whose height their node reported', () => {
    const { proof } = port();
    const deps = new Set([C]);
    expect(proof.current(entry(), deps, 12)).toBe(true);
    expect(proof.current(entry({ tipReported: undefined }), deps, 12)).toBe(false);
    expect(proof.current(entry({ tipHeight: null }), deps, 12)).toBe(false);
    expect(proof.current(entry(), undefined, 12)).toBe(false);
  });

  it('tells the present tip while proven, the entry height otherwise, asking again when the ledger moves', () => {
    const { state, proof } = port();
    let deps: EntryDependencies | undefined = new Set([C]);
    let asked = 0;
    state.current = () => {
      asked++;
      return deps !== 'volatile';
    };
    const tell = proof.teller(entry(), () => deps);
    expect(tell(12)).toBe(12);
    expect(tell(12)).toBe(12);
    expect(asked).toBe(1);
    expect(tell(undefined)).toBe(10);
    expect(tell(9)).toBe(10);
    deps = 'volatile';
    // Same tip, same ledger: the answer holds.
    expect(tell(12)).toBe(12);
    state.generation++;
    expect(tell(12)).toBe(10);
    expect(asked).toBe(2);
  });
});
