/**
 * The admin API's removal and statistics walk every namespace of src/cache/keys.ts and every
 * cached route of the endpoint table, on both networks: nothing the gateway writes is left
 * behind by "remove everything", and node route answers are counted by cache class.
 */
import { describe, expect, it } from 'vitest';
import { abiKey, nodeKey, readOnlyKey, unknownAbiKey, unknownNodeKey } from '../../../src/cache/keys.js';
import { ReadThroughCache } from '../../../src/cache/read-through.js';
import { MemoryStore } from '../../../src/cache/stores/memory.js';
import { AbiRegistry } from '../../../src/service/abi-registry.js';
import { CacheAdmin } from '../../../src/service/cache-admin.js';
import type { ReadOnlyService } from '../../../src/service/read-only.js';
import type { NodeApi } from '../../../src/upstream/node-api.js';
import { MAINNET_ADDR, SAMPLE_ABI, TESTNET_ADDR } from '../../support/fixtures.js';

const noUpstream: NodeApi = { send: () => Promise.reject(new Error('no upstream call expected')) };

async function filled(): Promise<{ store: MemoryStore; admin: CacheAdmin }> {
  const store = new MemoryStore({ maxEntries: 100 });
  const cache = new ReadThroughCache(store);
  const admin = new CacheAdmin(cache, new AbiRegistry(cache, noUpstream), {} as ReadOnlyService);
  const source = nodeKey('mainnet', 'source', [MAINNET_ADDR, 'demo'], 'proof=0', undefined);
  const entries: Array<[string, string]> = [
    [readOnlyKey('mainnet', MAINNET_ADDR, 'demo', 'get-info', MAINNET_ADDR, 'ab'), '0x03'],
    [abiKey('testnet', TESTNET_ADDR, 'demo'), JSON.stringify(SAMPLE_ABI)],
    [unknownAbiKey('mainnet', MAINNET_ADDR, 'ghost'), '{"message":"not found"}'],
    [source, '[200,"application/json","{}"]'],
    [nodeKey('testnet', 'constant', [TESTNET_ADDR, 'demo', 'c'], '', undefined), '[200,"a","{}"]'],
    [nodeKey('testnet', 'data-var', [TESTNET_ADDR, 'demo', 'v'], '', undefined), '[200,"a","{}"]'],
    [nodeKey('mainnet', 'map-entry', [MAINNET_ADDR, 'demo', 'm'], '', '"0x01"'), '[200,"a","{}"]'],
    [nodeKey('mainnet', 'account', [MAINNET_ADDR], '', undefined), '[200,"a","{}"]'],
    [nodeKey('testnet', 'pox', [], '', undefined), '[200,"a","{}"]'],
    [unknownNodeKey('mainnet', `${MAINNET_ADDR}.demo`, source), '[404,"text/plain","Not found"]'],
  ];
  for (const [key, value] of entries) await store.set(key, value);
  return { store, admin };
}

describe('CacheAdmin', () => {
  it('counts node route answers per cache class, both networks, never a remembered 404', async () => {
    const { admin } = await filled();
    const stats = await admin.stats();
    expect(stats['entries']).toEqual({
      abis: 1,
      readOnlyResults: 1,
      nodeRoutes: { immutable: 2, latest: 2, account: 1, timed: 1 },
    });
  });

  it('removes every entry of every namespace, counting the answers and not the remembered 404s', async () => {
    const { store, admin } = await filled();
    expect(await admin.invalidateAll()).toBe(8);
    expect(await store.list('')).toEqual([]);
  });
});
