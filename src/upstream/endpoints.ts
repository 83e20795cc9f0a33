/**
 * The node routes the gateway serves, one descriptor each (docs/node-routes.md): how the
 * request is recognised and checked, how it is cached, and where it goes. Everything else
 * follows from the table: the HTTP routes and their schemas (src/http/routes/node-routes.ts),
 * the cache keys (src/cache/keys.ts), the cache policy (src/service/node-route-service.ts), what the
 * admin API removes and counts (src/service/cache-admin.ts) and every upstream request
 * (StacksNodeClient.send). The gateway's own reads of a node go through the same descriptors:
 * the read-only call path, the ABI fetch, the tip's /v2/info and the event observer's
 * contract sources. Adding a cacheable node route is one entry here.
 *
 * Two routes keep services of their own behind the same descriptor: call-read answers from the
 * read-only service (ABI checks, argument canonicalisation, the shared entry with
 * /contract-calls/read-only) and the contract interface from the ABI registry (the entry
 * /contract-calls/abi reads). Every other descriptor is served by one generic cached read.
 */

/**
 * How long an answer may be served (docs/node-routes.md, "Caching classes"):
 * - immutable: until removed (a contract's source, ABI and constants never change);
 * - latest: the current state, block-bounded by NODE_MAX_BLOCKS (indefinitely with ?tip=);
 * - account: the current state at the current tip whatever NODE_MAX_BLOCKS says (nonces);
 * - timed: for CHAIN_TIP_MAX_AGE_MS (the node's own view of the chain);
 * - never: asked every time (fees, transaction lookups), coalesced while in flight;
 * - broadcast: asked once of one upstream, never coalesced nor resent (only an upstream that
 *   refused the connection, which was sent nothing, passes it on to the next).
 */
export type CacheClass = 'immutable' | 'latest' | 'account' | 'timed' | 'never' | 'broadcast';

/** How a path parameter is checked before anything is asked upstream. */
export type ParamKind = 'address' | 'contract' | 'name' | 'principal' | 'txid';

/** Which network a request goes to when no /mainnet or /testnet prefix fixes it. */
export type NetworkSource = 'address' | 'principal' | 'transaction' | 'default';

/**
 * How the body is taken: none, JSON forwarded as received, a read-only call's
 * `{sender, arguments}` (checked against its schema, then sent in the node's form), or a
 * transaction (bytes or JSON).
 */
export type BodyKind = 'none' | 'json' | 'call' | 'transaction';

/**
 * What the gateway takes out of a route's 2xx when it asks for itself rather than for a client
 * (StacksNodeClient.send with `read`): the checks the answer must pass before it is used or
 * kept. 'result': {okay:true,result:"0x…"} (okay:false is the node's refusal); 'abi': a
 * contract interface of the right shape; 'info': a /v2/info with a numeric stacks_tip_height.
 */
export type Reading = 'result' | 'abi' | 'info';

export interface NodeEndpoint {
  /** Short name: metrics label, key namespace part, OpenAPI operation. */
  readonly name: string;
  readonly method: 'GET' | 'POST';
  /** Fastify path pattern, as the node writes the route. */
  readonly path: string;
  /** Each path parameter, in path order, and how it is checked. */
  readonly params: Readonly<Record<string, ParamKind>>;
  /** Query parameters the node accepts: forwarded and part of the cache key. */
  readonly query: readonly ('tip' | 'proof')[];
  readonly body: BodyKind;
  readonly cache: CacheClass;
  readonly network: NetworkSource;
  /**
   * How a latest-state answer stays current across blocks that did not touch it (the event
   * observer's proof, docs/events.md): 'contract', a data var or a map entry, changes only
   * when the contract of the path runs; 'function', a read-only call, depends on what the
   * function of the path reaches (as call-read does).
   */
  readonly provenBy?: 'contract' | 'function';
  /** Served by a service of its own (see the module comment) instead of the generic read. */
  readonly service?: 'read-only' | 'abi';
  /** How the gateway reads the answer for itself, when it does (see Reading). */
  readonly reads?: Reading;
  readonly summary: string;
  /** The OpenAPI description, when the route says more than where it is forwarded. */
  readonly description?: string;
  /**
   * What the OpenAPI document prefills ("Try it out"), written for the demo's local chain: a
   * value for every path parameter, and the body.
   */
  readonly example: { readonly params?: Readonly<Record<string, string>>; readonly body?: unknown };
}

/** The local chain's deployer and its contracts, which the examples name. */
const DEMO = 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM';
const DEMO_HOLDER = 'ST1SJ3DTE5DN7X54YDH5D64R3BCB6A2AG2ZQ8YPD5';
const DEMO_HOLDER_HEX = '0x051a7321b74e2b6a7e949e6c4ad313035b1665095017';
const DEMO_TX = `0x${'0'.repeat(64)}`;

const CONTRACT = { address: 'address', contract: 'contract' } as const;

export const NODE_ENDPOINTS: readonly NodeEndpoint[] = [
  {
    name: 'source',
    method: 'GET',
    path: '/v2/contracts/source/:address/:contract',
    params: CONTRACT,
    query: ['tip', 'proof'],
    body: 'none',
    cache: 'immutable',
    network: 'address',
    summary: "A contract's Clarity source (the node's JSON, cached indefinitely)",
    example: { params: { address: DEMO, contract: 'demo-dao' } },
  },
  {
    name: 'interface',
    method: 'GET',
    path: '/v2/contracts/interface/:address/:contract',
    params: CONTRACT,
    query: [],
    body: 'none',
    cache: 'immutable',
    network: 'address',
    service: 'abi',
    reads: 'abi',
    summary: "A contract's ABI (the node's JSON, cached indefinitely)",
    description:
      "The Stacks node's own interface endpoint, answered from the gateway's ABI cache (the entry GET /contract-calls/abi reads), checked before it is kept; a contract the node does not know is the node's own 404 (text/plain), remembered for CACHE_NEGATIVE_TTL_S. The network follows the address.",
    example: { params: { address: DEMO, contract: 'demo-dao' } },
  },
  {
    name: 'constant',
    method: 'GET',
    path: '/v2/constant_val/:address/:contract/:name',
    params: { ...CONTRACT, name: 'name' },
    query: ['tip'],
    body: 'none',
    cache: 'immutable',
    network: 'address',
    summary: "A contract constant's value (cached indefinitely)",
    example: { params: { address: DEMO, contract: 'demo-dao', name: 'created-at' } },
  },
  {
    name: 'trait',
    method: 'GET',
    path: '/v2/traits/:address/:contract/:traitAddress/:traitContract/:trait',
    params: { ...CONTRACT, traitAddress: 'address', traitContract: 'contract', trait: 'name' },
    query: ['tip'],
    body: 'none',
    cache: 'immutable',
    network: 'address',
    summary: 'Whether a contract implements a trait (cached indefinitely)',
    example: {
      params: {
        address: DEMO,
        contract: 'demo-token',
        traitAddress: DEMO,
        traitContract: 'sip-010-trait-ft-standard',
        trait: 'sip-010-trait',
      },
    },
  },
  {
    name: 'data-var',
    method: 'GET',
    path: '/v2/data_var/:address/:contract/:name',
    params: { ...CONTRACT, name: 'name' },
    query: ['tip', 'proof'],
    body: 'none',
    cache: 'latest',
    network: 'address',
    provenBy: 'contract',
    summary: "A data variable's current value (cached per block)",
    example: { params: { address: DEMO, contract: 'demo-dao', name: 'proposal-count' } },
  },
  {
    name: 'map-entry',
    method: 'POST',
    path: '/v2/map_entry/:address/:contract/:name',
    params: { ...CONTRACT, name: 'name' },
    query: ['tip', 'proof'],
    body: 'json',
    cache: 'latest',
    network: 'address',
    provenBy: 'contract',
    summary:
      "A map entry's current value; the body is the key, serialized hex in a JSON string (cached per block)",
    example: {
      params: { address: DEMO, contract: 'demo-dao', name: 'members' },
      // the key: the deployer, a serialized principal
      body: '0x051a6d78de7b0625dfbfc16c3a8a5735f6dc3dc3f2ce',
    },
  },
  {
    name: 'call-read',
    method: 'POST',
    path: '/v2/contracts/call-read/:address/:contract/:function',
    params: { ...CONTRACT, function: 'name' },
    query: ['tip'],
    body: 'call',
    cache: 'latest',
    network: 'address',
    service: 'read-only',
    reads: 'result',
    summary: 'A read-only call in the node shape (the cache of /contract-calls/read-only)',
    description:
      "The Stacks node's own call-read endpoint, answered from the gateway's cache with the same coalescing, budget and headers (Cache-Status, Age, X-Canonical-Stacks-Tip-Height) as POST /contract-calls/read-only; its block bound is NODE_MAX_BLOCKS. Answers in the node's shape: {okay:true,result} (an (err …) result included) or the node's {okay:false,cause}. The network follows the address.",
    example: {
      params: { address: DEMO, contract: 'demo-token', function: 'get-balance' },
      // wallet_1 of the local chain, which holds demo tokens, and its serialized principal
      body: { sender: DEMO_HOLDER, arguments: [DEMO_HOLDER_HEX] },
    },
  },
  {
    name: 'fast-call-read',
    method: 'POST',
    path: '/v3/contracts/fast-call-read/:address/:contract/:function',
    params: { ...CONTRACT, function: 'name' },
    query: ['tip'],
    body: 'json',
    cache: 'latest',
    network: 'address',
    provenBy: 'function',
    summary: "The node's fast read-only call (cached per block)",
    example: {
      params: { address: DEMO, contract: 'demo-token', function: 'get-name' },
      body: { sender: DEMO, arguments: [] },
    },
  },
  {
    name: 'account',
    method: 'GET',
    path: '/v2/accounts/:principal',
    params: { principal: 'principal' },
    query: ['tip', 'proof'],
    body: 'none',
    cache: 'account',
    network: 'principal',
    summary: "An account's balance and nonce, always at the current tip",
    example: { params: { principal: DEMO } },
  },
  {
    name: 'info',
    method: 'GET',
    path: '/v2/info',
    params: {},
    query: [],
    body: 'none',
    cache: 'timed',
    network: 'default',
    reads: 'info',
    summary: "The node's view of the chain (cached for CHAIN_TIP_MAX_AGE_MS)",
    example: {},
  },
  {
    name: 'pox',
    method: 'GET',
    path: '/v2/pox',
    params: {},
    query: [],
    body: 'none',
    cache: 'timed',
    network: 'default',
    summary: 'Proof-of-transfer state (cached for CHAIN_TIP_MAX_AGE_MS)',
    example: {},
  },
  {
    name: 'tenure-info',
    method: 'GET',
    path: '/v3/tenures/info',
    params: {},
    query: [],
    body: 'none',
    cache: 'timed',
    network: 'default',
    summary: 'The current tenure (cached for CHAIN_TIP_MAX_AGE_MS)',
    example: {},
  },
  {
    name: 'fee-transfer',
    method: 'GET',
    path: '/v2/fees/transfer',
    params: {},
    query: [],
    body: 'none',
    cache: 'never',
    network: 'default',
    summary: 'The fee rate of an STX transfer (never cached)',
    example: {},
  },
  {
    name: 'fee-transaction',
    method: 'POST',
    path: '/v2/fees/transaction',
    params: {},
    query: [],
    body: 'json',
    cache: 'never',
    network: 'default',
    summary: "A transaction's fee estimate (never cached)",
    example: {
      body: {
        transaction_payload:
          '0x021a6d78de7b0625dfbfc16c3a8a5735f6dc3dc3f2ce0a64656d6f2d746f6b656e086765742d6e616d6500000000',
        estimated_len: 180,
      },
    },
  },
  {
    name: 'transaction',
    method: 'GET',
    path: '/v3/transaction/:txid',
    params: { txid: 'txid' },
    query: [],
    body: 'none',
    cache: 'never',
    network: 'default',
    summary: 'A confirmed transaction (never cached)',
    example: { params: { txid: DEMO_TX } },
  },
  {
    name: 'unconfirmed',
    method: 'GET',
    path: '/v2/transactions/unconfirmed/:txid',
    params: { txid: 'txid' },
    query: [],
    body: 'none',
    cache: 'never',
    network: 'default',
    summary: 'A mempool transaction (never cached)',
    example: { params: { txid: DEMO_TX } },
  },
  {
    name: 'broadcast',
    method: 'POST',
    path: '/v2/transactions',
    params: {},
    query: [],
    body: 'transaction',
    cache: 'broadcast',
    network: 'transaction',
    summary: 'Broadcast a transaction: sent once to one upstream, never cached',
    example: { body: { tx: '80800000000400' } },
  },
];

/** The path prefixes that fix the network of every node route under them. */
export const NETWORK_PREFIXES = ['/mainnet', '/testnet'] as const;

/** The descriptor of a route by its name; a name not in the table is a programming error. */
function endpointNamed(name: string): NodeEndpoint {
  const found = NODE_ENDPOINTS.find((e) => e.name === name);
  if (found === undefined) throw new TypeError(`no node route is named ${name}`);
  return found;
}

/** The routes the gateway also reads for itself (the read-only call, ABIs, the tip, sources). */
export const CALL_READ = endpointNamed('call-read');
export const INTERFACE = endpointNamed('interface');
export const INFO = endpointNamed('info');
export const SOURCE = endpointNamed('source');

/** The descriptor's path with its parameters filled in (each URL-encoded). */
export function pathOf(endpoint: NodeEndpoint, params: Readonly<Record<string, string>>): string {
  return endpoint.path.replace(/:([A-Za-z]+)/g, (_, name: string) => encodeURIComponent(params[name] ?? ''));
}

/**
 * The query of a request as the node takes it: the descriptor's parameters that have a value,
 * in the descriptor's order (`tip=…&proof=…`), without the '?'. The same text is forwarded and
 * is part of the cache key, so that one request is one entry however its query was written.
 */
export function queryOf(
  endpoint: NodeEndpoint,
  values: Readonly<Record<string, string | undefined>> | undefined,
): string {
  if (values === undefined) return '';
  const parts: string[] = [];
  for (const name of endpoint.query) {
    const value = values[name];
    if (value !== undefined) parts.push(`${name}=${encodeURIComponent(value)}`);
  }
  return parts.join('&');
}
