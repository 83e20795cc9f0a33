import { describe, expect, it } from 'vitest';
import { abiKey } from '../../../src/cache/keys.js';
import { ReadThroughCache } from '../../../src/cache/read-through.js';
import type { CacheStore } from '../../../src/cache/store.js';
import { MemoryStore } from '../../../src/cache/stores/memory.js';
import { TieredStore } from '../../../src/cache/stores/tiered.js';
import { isGatewayError } from '../../../src/errors.js';
import { AbiRegistry } from '../../../src/service/abi-registry.js';
import type { NodeApi } from '../../../src/upstream/node-api.js';
import { MAINNET_ADDR, SAMPLE_ABI, TESTNET_ADDR } from '../../support/fixtures.js';

/** known() is local data only: any upstream call is a failure of the test. */
const noUpstream: NodeApi = {
  send: () => Promise.reject(new Error('no upstream call expected')),
};

const down = (): Promise<never> => Promise.reject(new Error('redis is down'));
const downStore: CacheStore = {
  kind: 'down',
  get: down,
  set: down,
  delete: down,
  list: down,
  close: async () => {},
};

describe('AbiRegistry.known', () => {
  it('lists each cached contract once, both networks, sorted, ignoring foreign keys', async () => {
    const store = new MemoryStore({ maxEntries: 100 });
    const json = JSON.stringify(SAMPLE_ABI);
    await store.set(abiKey('testnet', TESTNET_ADDR, 'b'), json);
    await store.set(abiKey('mainnet', MAINNET_ADDR, 'a'), json);
    await store.set('abi:bogus', json);
    await store.set('ro:mainnet:x', '0x03');
    const registry = new AbiRegistry(new ReadThroughCache(store), noUpstream);
    expect((await registry.known()).contracts).toEqual([
      { network: 'mainnet', contractAddress: MAINNET_ADDR, contractName: 'a' },
      { network: 'testnet', contractAddress: TESTNET_ADDR, contractName: 'b' },
    ]);
  });

  it('answers from the hot tier while the persistent store is down', async () => {
    const store = new TieredStore({ maxEntries: 100 }, downStore);
    // The cold write fails (reported to the caller by rejecting); the hot tier keeps the copy.
    await expect(
      store.set(abiKey('mainnet', MAINNET_ADDR, 'hot'), JSON.stringify(SAMPLE_ABI)),
    ).rejects.toThrow();
    const registry = new AbiRegistry(new ReadThroughCache(store), noUpstream);
    expect((await registry.known()).contracts).toEqual([
      { network: 'mainnet', contractAddress: MAINNET_ADDR, contractName: 'hot' },
    ]);
  });

  it('is SERVICE_UNAVAILABLE when a store without a hot tier cannot list', async () => {
    const registry = new AbiRegistry(new ReadThroughCache(downStore), noUpstream);
    const err = await registry.known().catch((e: unknown) => e);
    expect(isGatewayError(err) && err.code).toBe('SERVICE_UNAVAILABLE');
    expect(isGatewayError(err) && err.status).toBe(503);
  });
});
