/**
 * Which cache a key's lookups count under (clarity_cache_cache_requests_total, _stale_total,
 * _background_refreshes_total): decided by the key's namespace in src/cache/keys.ts, so a
 * remembered 404 counts with the cache it stands in for, never as a read-only call.
 */
import { describe, expect, it } from 'vitest';
import {
  abiKey,
  KEY_NAMESPACES,
  namespaceOfKey,
  nodeKey,
  readOnlyKey,
  unknownAbiKey,
  unknownNodeKey,
} from '../../../src/cache/keys.js';
import { cacheEndpointOf } from '../../../src/observability/metrics.js';

const ADDR = 'SP3K8BC0PPEVCV7NZ6QSRWPQ2JE9E5B6N3PA0KBR9';
const node = nodeKey('mainnet', 'data-var', [ADDR, 'demo', 'counter'], '', undefined);

describe('cacheEndpointOf', () => {
  it('labels every key the gateway writes by the cache it belongs to', () => {
    expect(cacheEndpointOf(readOnlyKey('mainnet', ADDR, 'demo', 'get-info', ADDR, 'ab'))).toBe('read-only');
    expect(cacheEndpointOf(abiKey('testnet', ADDR, 'demo'))).toBe('abi');
    expect(cacheEndpointOf(node)).toBe('node');
  });

  it('counts an unknown contract’s remembered ABI 404 with the ABIs, not as a read-only call', () => {
    expect(cacheEndpointOf(unknownAbiKey('mainnet', ADDR, 'ghost'))).toBe('abi');
  });

  it('counts a node route’s remembered 404 with the node routes', () => {
    expect(cacheEndpointOf(unknownNodeKey('mainnet', `${ADDR}.demo`, node))).toBe('node');
  });

  it('labels a foreign key as none of the three caches', () => {
    expect(cacheEndpointOf('chain:id:mainnet')).toBe('other');
  });
});

describe('KEY_NAMESPACES', () => {
  it('puts each key in exactly one namespace', () => {
    const keys = [
      readOnlyKey('mainnet', ADDR, 'demo', 'f', ADDR, 'ab'),
      abiKey('mainnet', ADDR, 'demo'),
      unknownAbiKey('mainnet', ADDR, 'demo'),
      node,
      unknownNodeKey('mainnet', `${ADDR}.demo`, node),
    ];
    for (const key of keys) {
      expect(
        KEY_NAMESPACES.filter((ns) => key.startsWith(ns.prefix)),
        key,
      ).toHaveLength(1);
    }
    expect(keys.map((key) => namespaceOfKey(key)?.unknown)).toEqual([false, false, true, false, true]);
  });
});
