/**
 * Cache key layout, the one home of every key prefix (KEY_NAMESPACES): whatever lists,
 * counts, removes or labels entries by namespace (the admin API, the metrics) asks here.
 * Keys are prefix-ordered so that one contract, or one function of a contract, can be listed
 * or invalidated by prefix:
 *
 *   abi:{network}:{address}.{contract}
 *   ro:{network}:{address}.{contract}:{function}:{sender}:{sha256 of the arguments}
 *   ro:{network}:{address}.{contract}:{function}:{sender}:{sha256 of the arguments}@{tip}
 *
 * The second form is a read pinned to a block (its index block hash, 64 lowercase hex): it
 * extends the latest-state key, so every prefix that lists or invalidates a function's
 * entries covers its pinned reads too.
 *   abi404:{network}:{address}.{contract}    an unknown contract, for CACHE_NEGATIVE_TTL_S
 *
 *   node:{network}:{route}:{path parameters, /-joined}?{query}#{sha256 of the body}
 *                                            a node route's answer (src/upstream/endpoints.ts)
 *   node404:{network}:{address}.{contract}:{the node: key after its network}
 *                                            the node's 404 for it (unknown contract, variable,
 *                                            map), for CACHE_NEGATIVE_TTL_S; a deploy of the
 *                                            contract removes them all by prefix
 *
 * The unknown-contract namespace is its own (not under abi:), so that listing or counting
 * the cached ABIs never meets one.
 */
import { hash } from 'node:crypto';
import type { Network } from '../network.js';

export const ABI_PREFIX = 'abi:';
export const READ_ONLY_PREFIX = 'ro:';
const UNKNOWN_ABI_PREFIX = 'abi404:';
const NODE_ROUTE_PREFIX = 'node:';
const UNKNOWN_NODE_PREFIX = 'node404:';

/** What a namespace's entries are the cache of: read-only results, ABIs, node route answers. */
export type KeySpace = 'read-only' | 'abi' | 'node';

export interface KeyNamespace {
  readonly prefix: string;
  readonly space: KeySpace;
  /**
   * A remembered 404 (CACHE_NEGATIVE_TTL_S), not an answer: it belongs to the same space (its
   * lookups are that cache's), but is never counted as a cached entry.
   */
  readonly unknown: boolean;
}

/**
 * Every namespace the gateway writes. None is a prefix of another ('abi404:' does not start
 * with 'abi:'), so a key belongs to exactly one.
 */
export const KEY_NAMESPACES: readonly KeyNamespace[] = [
  { prefix: READ_ONLY_PREFIX, space: 'read-only', unknown: false },
  { prefix: ABI_PREFIX, space: 'abi', unknown: false },
  { prefix: UNKNOWN_ABI_PREFIX, space: 'abi', unknown: true },
  { prefix: NODE_ROUTE_PREFIX, space: 'node', unknown: false },
  { prefix: UNKNOWN_NODE_PREFIX, space: 'node', unknown: true },
];

/** The namespace of a key; undefined for a key the gateway does not write as an entry. */
export function namespaceOfKey(key: string): KeyNamespace | undefined {
  for (const ns of KEY_NAMESPACES) if (key.startsWith(ns.prefix)) return ns;
  return undefined;
}

/** Every answer of one node route on one network (the route's name from the endpoint table). */
export function nodeRoutePrefix(network: Network, route: string): string {
  return `${NODE_ROUTE_PREFIX}${network}:${route}:`;
}

/** Where a node route's 404 for a contract's answer is remembered (see the layout above). */
export function unknownNodeKey(network: Network, contractId: string, key: string): string {
  return `${unknownNodePrefix(network, contractId)}${key.slice(NODE_ROUTE_PREFIX.length + network.length + 1)}`;
}

/** Every remembered node-route 404 of one contract. */
export function unknownNodePrefix(network: Network, contractId: string): string {
  return `${UNKNOWN_NODE_PREFIX}${network}:${contractId}:`;
}

/**
 * The key of a node route's answer: everything that can change it (network, route, path
 * parameters, the query parameters the node takes, the body), and nothing else.
 */
export function nodeKey(
  network: Network,
  route: string,
  params: readonly string[],
  query: string,
  body: string | Uint8Array | undefined,
): string {
  const base = `${nodeRoutePrefix(network, route)}${params.join('/')}`;
  const withQuery = query === '' ? base : `${base}?${query}`;
  return body === undefined || body.length === 0 ? withQuery : `${withQuery}#${hash('sha256', body, 'hex')}`;
}

/** The network a key belongs to (every namespace puts it right after its prefix). */
export function networkOfKey(key: string): Network | undefined {
  const start = key.indexOf(':') + 1;
  if (key.startsWith('mainnet:', start)) return 'mainnet';
  if (key.startsWith('testnet:', start)) return 'testnet';
  return undefined;
}

export function abiKey(network: Network, address: string, contractName: string): string {
  return `${ABI_PREFIX}${network}:${address}.${contractName}`;
}

/** Where the upstream's "no such contract" for an ABI is remembered for a while. */
export function unknownAbiKey(network: Network, address: string, contractName: string): string {
  return `${UNKNOWN_ABI_PREFIX}${network}:${address}.${contractName}`;
}

/** What follows ABI_PREFIX in an ABI's key: `{network}:{address}.{contract}`. */
const ABI_REST = /^(mainnet|testnet):([^.:]+)\.([^.:]+)$/;

/** Inverse of abiKey, for the known-contracts listing; undefined for a foreign key. */
export function parseAbiKey(
  key: string,
): { network: Network; contractAddress: string; contractName: string } | undefined {
  if (!key.startsWith(ABI_PREFIX)) return undefined;
  const m = ABI_REST.exec(key.slice(ABI_PREFIX.length));
  if (m === null) return undefined;
  return { network: m[1] as Network, contractAddress: m[2]!, contractName: m[3]! };
}

/**
 * The full SHA-256 of the arguments' canonical serialization. Each argument is the
 * consensus hex of one Clarity value, so simplified, native and hex forms of the same
 * value hash alike; the separator cannot occur inside hex.
 */
export function hashArguments(argsHex: readonly string[]): string {
  // crypto.hash: the one-shot form, several times cheaper than createHash for short inputs.
  return hash('sha256', argsHex.join(','), 'hex');
}

export function readOnlyPrefix(
  network: Network,
  address: string,
  contractName: string,
  functionName?: string,
): string {
  const base = `${READ_ONLY_PREFIX}${network}:${address}.${contractName}:`;
  return functionName === undefined ? base : `${base}${functionName}:`;
}

export function readOnlyKey(
  network: Network,
  address: string,
  contractName: string,
  functionName: string,
  sender: string,
  argsHash: string,
): string {
  return `${readOnlyPrefix(network, address, contractName, functionName)}${sender}:${argsHash}`;
}

/** The key of a read pinned to block `tip` (64 lowercase hex digits). */
export function pinnedKey(latestKey: string, tip: string): string {
  return `${latestKey}@${tip}`;
}
