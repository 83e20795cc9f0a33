/**
 * The parsed-ABI memo never pairs an old parse with a new document: whenever the ABI the cache
 * answers is another text than the one parsed (the judge refused the stored entry and a new
 * one was fetched, another instance wrote one), the answer is the new document's parse.
 */
import { describe, expect, it } from 'vitest';
import { abiKey } from '../../../src/cache/keys.js';
import { ReadThroughCache } from '../../../src/cache/read-through.js';
import { MemoryStore } from '../../../src/cache/stores/memory.js';
import { AbiRegistry } from '../../../src/service/abi-registry.js';
import { parseContractRef } from '../../../src/service/contract-ref.js';
import type { NodeApi } from '../../../src/upstream/node-api.js';
import { MAINNET_ADDR, SAMPLE_ABI } from '../../support/fixtures.js';

const ref = parseContractRef(MAINNET_ADDR, 'evolving');
const key = abiKey('mainnet', MAINNET_ADDR, 'evolving');

/** The same contract name with other code: what a node of another chain (or after a reset) has. */
const OTHER_ABI = {
  ...SAMPLE_ABI,
  functions: [{ name: 'only-here', access: 'read_only', args: [], outputs: { type: 'bool' } }],
};

/** A node whose interface answer the test sets; every request it answers is counted. */
function setup() {
  const state = { abi: SAMPLE_ABI as object, asked: 0, chain: 'chain-a' };
  const answer = async () => {
    state.asked++;
    return { abi: state.abi, upstream: 'node', tipHeight: undefined };
  };
  // The node is asked for the interface through whichever method the client offers.
  const node = { send: answer, getContractInterface: answer } as unknown as NodeApi;
  const store = new MemoryStore({ maxEntries: 100 });
  // Entries record the chain they were read from: one of another chain is refused by the judge.
  const cache = new ReadThroughCache(store, { chain: { current: () => state.chain } });
  return { state, store, registry: new AbiRegistry(cache, node) };
}

const names = (abi: { functions: readonly { name: string }[] }) => abi.functions.map((f) => f.name);

describe('the parsed-ABI memo', () => {
  it('after the judge refuses the stored ABI, the answer is the parse of the one fetched anew', async () => {
    const { state, registry } = setup();
    const first = await registry.get(ref);
    expect(names(first.abi)).toContain('get-info');
    // Memoized: a hit parses nothing again.
    expect((await registry.get(ref)).abi).toBe(first.abi);

    // The chain changed: the stored ABI is of another chain, refused, and fetched again.
    state.chain = 'chain-b';
    state.abi = OTHER_ABI;
    const second = await registry.get(ref);
    expect(state.asked).toBe(2);
    expect(second.outcome).toBe('miss');
    expect(JSON.parse(second.json)).toEqual(OTHER_ABI);
    expect(names(second.abi)).toEqual(['only-here']);
    expect(second.abi).toEqual(JSON.parse(second.json));
    // And the new parse is what is memoized from now on.
    const third = await registry.get(ref);
    expect(third.outcome).toBe('hit');
    expect(third.abi).toBe(second.abi);
  });

  it('an ABI another writer stored (another instance sharing the store) is parsed, not the memo', async () => {
    const { store, registry } = setup();
    expect(names((await registry.get(ref)).abi)).toContain('get-info');
    await store.set(key, JSON.stringify(OTHER_ABI), undefined, { chain: 'chain-a' });
    const found = await registry.get(ref);
    expect(found.outcome).toBe('hit');
    expect(names(found.abi)).toEqual(['only-here']);
  });

  it('the ABI for an error message is only what the judge still serves, parsed from that text', async () => {
    const { state, store, registry } = setup();
    await registry.get(ref);
    expect(names((await registry.cached(ref))!)).toContain('get-info');
    // Refused by the judge: no ABI at all, however recently it was parsed.
    state.chain = 'chain-b';
    expect(await registry.cached(ref)).toBeUndefined();
    await store.set(key, JSON.stringify(OTHER_ABI), undefined, { chain: 'chain-b' });
    expect(names((await registry.cached(ref))!)).toEqual(['only-here']);
    expect(state.asked).toBe(1);
  });
});
