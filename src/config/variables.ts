/**
 * Every variable of the gateway process, declared once (docs/configuration.md): its name, the
 * values it takes, its default and one line of doc, and whether it is a secret. Parsing and
 * validation (src/config/index.ts reads defaults and bounds from here), `clarity-cache serve
 * --help` and the README's configuration table all come from this table; a test fails when the
 * README's table differs from it.
 */

/** How a variable's text is read. Bounds are inclusive. */
export type VariableKind =
  | { readonly type: 'int'; readonly min: number; readonly max?: number; readonly optional?: boolean }
  | { readonly type: 'bool' }
  | { readonly type: 'string' }
  | { readonly type: 'oneOf'; readonly values: readonly string[] }
  /** Parsed by a function of its own in src/config/index.ts (lists, URLs, files). */
  | { readonly type: 'custom'; readonly accepts: string };

export interface Variable {
  readonly name: string;
  readonly kind: VariableKind;
  /** The default as the parser uses it (text, as if set); undefined = unset by default. */
  readonly default: string | undefined;
  /** The default as people read it, when the text alone would not say it (e.g. "32 MiB"). */
  readonly shownDefault?: string;
  readonly doc: string;
  /** Never printed (messages, logs, help show its name only). */
  readonly secret?: boolean;
}

const int = (min: number, max?: number, optional?: boolean): VariableKind =>
  max === undefined
    ? { type: 'int', min, ...(optional ? { optional } : {}) }
    : { type: 'int', min, max, ...(optional ? { optional } : {}) };
const MAX_WINDOW_S = 315_360_000;

export const VARIABLES: readonly Variable[] = [
  { name: 'PORT', kind: int(0, 65535), default: '3000', doc: 'port the gateway listens on' },
  { name: 'HOST', kind: { type: 'string' }, default: '0.0.0.0', doc: 'address the gateway listens on' },
  {
    name: 'STACKS_API_URL_MAINNET',
    kind: { type: 'custom', accepts: 'an http(s) URL or a comma-separated list of them' },
    default: 'https://api.hiro.so',
    doc: 'mainnet upstream base URL, or a comma-separated list in order of preference (http allowed, for local nodes); a query (a provider key) is sent with every request and never printed',
  },
  {
    name: 'STACKS_API_URL_TESTNET',
    kind: { type: 'custom', accepts: 'an http(s) URL or a comma-separated list of them' },
    default: 'https://api.testnet.hiro.so',
    doc: 'testnet upstream base URL or list',
  },
  {
    name: 'STACKS_API_KEY',
    kind: { type: 'string' },
    default: undefined,
    doc: 'sent as `x-api-key` to every upstream of these two lists',
    secret: true,
  },
  {
    name: 'UPSTREAMS_FILE',
    kind: { type: 'custom', accepts: 'a path to a JSON array of upstreams' },
    default: undefined,
    doc: 'JSON file of upstreams with their own key, rate and priority (replaces the list of each network it names)',
  },
  { name: 'UPSTREAM_TIMEOUT_MS', kind: int(1), default: '5000', doc: 'per upstream attempt' },
  { name: 'UPSTREAM_RETRIES', kind: int(0, 10), default: '3', doc: 'retries after the first attempt' },
  {
    name: 'UPSTREAM_RETRY_BASE_MS',
    kind: int(0),
    default: '500',
    doc: 'exponential backoff base (with jitter)',
  },
  {
    name: 'UPSTREAM_RETRY_AFTER_CAP_MS',
    kind: int(0),
    default: '10000',
    doc: 'longest upstream `Retry-After` honoured before a retry',
  },
  {
    name: 'UPSTREAM_RATE_LIMIT_PER_MINUTE',
    kind: int(1),
    default: '20',
    doc: 'budget of each upstream (token bucket capacity and refill)',
  },
  {
    name: 'UPSTREAM_QUEUE_TIMEOUT_MS',
    kind: int(0),
    default: '10000',
    doc: 'longest wait for a budget token before `RATE_LIMIT_EXCEEDED`',
  },
  {
    name: 'UPSTREAM_BREAKER_FAILURES',
    kind: int(1),
    default: '5',
    doc: "consecutive transient failures that open an upstream's circuit",
  },
  {
    name: 'UPSTREAM_BREAKER_COOLDOWN_MS',
    kind: int(1),
    default: '30000',
    doc: 'how long an open circuit skips its upstream before one probe',
  },
  {
    name: 'UPSTREAM_HEDGE_MS',
    kind: int(0),
    default: '0',
    shownDefault: 'unset (off)',
    doc: 'after this long without an answer, a second attempt goes to another upstream that has a token (0 = off)',
  },
  {
    name: 'UPSTREAM_MAX_LAG_BLOCKS',
    kind: int(0),
    default: '2',
    doc: "blocks behind the network's highest seen tip before an upstream is skipped for latest-state reads",
  },
  {
    name: 'UPSTREAM_CONSENSUS_MAINNET',
    kind: { type: 'custom', accepts: 'k/n with 1 <= k <= n <= the mainnet upstreams and k > n/2' },
    default: '1/1',
    shownDefault: '1/1 (off)',
    doc: 'attested answers: a mainnet cache fill is kept only when k of up to n upstreams, asked at one pinned block, return the same bytes (see [Several upstreams](#several-upstreams))',
  },
  {
    name: 'UPSTREAM_CONSENSUS_TESTNET',
    kind: { type: 'custom', accepts: 'k/n with 1 <= k <= n <= the testnet upstreams and k > n/2' },
    default: '1/1',
    shownDefault: '1/1 (off)',
    doc: 'the same for testnet',
  },
  {
    name: 'UPSTREAM_CONSENSUS_LOW',
    kind: { type: 'oneOf', values: ['error', 'accept'] },
    default: 'error',
    doc: 'fewer than k votes possible: `error` (502 `UPSTREAM_DISPUTE`, reason `low participation`) or `accept` (the unique most-voted answer, cached with its count)',
  },
  {
    name: 'UPSTREAM_CONSENSUS_STRIKES',
    kind: int(1),
    default: '3',
    doc: 'lost votes within 10 minutes that make an upstream sit out of every selection of its network for 5 minutes',
  },
  {
    name: 'UPSTREAM_CONSENSUS_LOG',
    kind: { type: 'string' },
    default: undefined,
    doc: 'file that gets one JSON line per vote that was disputed, low, or decided against a dissenter',
  },
  {
    name: 'UPSTREAM_MAX_WAITING_PER_CLIENT',
    kind: int(0),
    default: '16',
    doc: 'requests one client may have waiting for a budget token (0: none may wait)',
  },
  {
    name: 'TRUST_PROXY',
    kind: { type: 'custom', accepts: 'true, false or a number of proxies from 0 to 32' },
    default: 'false',
    doc: "proxies in front of the gateway: `false`, `true` (one) or a number; the client is the `X-Forwarded-For` entry that many hops from the right, else the socket's address",
  },
  {
    name: 'API_KEYS_FILE',
    kind: { type: 'custom', accepts: 'a path to a JSON array of API keys' },
    default: undefined,
    doc: 'JSON file of API keys (see [Access control](#access-control)); when set, a key not in it is refused',
  },
  {
    name: 'API_KEYS_REQUIRED',
    kind: { type: 'bool' },
    default: 'false',
    doc: '`true`: API routes refuse requests without a key (needs `API_KEYS_FILE`)',
  },
  {
    name: 'ANONYMOUS_REQUESTS_PER_MINUTE',
    kind: int(1, 1_000_000, true),
    default: undefined,
    doc: 'quota of each keyless client address on the API routes (unset: none)',
  },
  {
    name: 'CACHE_STORE',
    kind: { type: 'oneOf', values: ['sqlite', 'memory', 'redis'] },
    default: 'sqlite',
    doc: '`sqlite` (embedded, persistent), `memory`, `redis`',
  },
  { name: 'DATA_DIR', kind: { type: 'string' }, default: './data', doc: 'where the SQLite file lives' },
  {
    name: 'REDIS_URL',
    kind: { type: 'custom', accepts: 'a redis:// or rediss:// URL' },
    default: undefined,
    doc: 'for `CACHE_STORE=redis`',
    secret: true,
  },
  {
    name: 'HOT_CACHE_MAX_ENTRIES',
    kind: int(1),
    default: undefined,
    doc: 'an optional count bound of the in-memory hot tier in front of the persistent store; unset, the tier is bounded by `HOT_CACHE_MAX_BYTES` alone',
  },
  {
    name: 'HOT_CACHE_MAX_BYTES',
    kind: int(1024 * 1024),
    default: String(32 * 1024 * 1024),
    shownDefault: '`33554432` (32 MiB)',
    doc: 'byte budget of the hot tier (at least 1 MiB): 32 MiB holds about 27,000 typical read-only results (a 200-byte tuple, its key and bookkeeping come to ~1.2 KB); with `HOT_CACHE_MAX_ENTRIES` set too, whichever bound is reached first evicts',
  },
  {
    name: 'ABI_MEMO_MAX_BYTES',
    kind: int(1024 * 1024),
    default: String(16 * 1024 * 1024),
    shownDefault: '`16777216` (16 MiB)',
    doc: 'byte budget of the parsed-ABI memo (at least 1 MiB); an ABI larger than it is parsed on each use',
  },
  {
    name: 'CACHE_NEGATIVE_TTL_S',
    kind: int(0, 86_400),
    default: '30',
    doc: "how long an unknown contract (the upstream's ABI 404) is remembered (`0` = not remembered)",
  },
  { name: 'BODY_LIMIT_BYTES', kind: int(1024), default: '1048576', doc: 'request body limit (1 MiB)' },
  {
    name: 'LOG_LEVEL',
    kind: { type: 'oneOf', values: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] },
    default: 'info',
    doc: 'pino level',
  },
  {
    name: 'SHUTDOWN_GRACE_MS',
    kind: int(0),
    default: '10000',
    doc: 'longest wait for in-flight requests on SIGTERM/SIGINT',
  },
  {
    name: 'BATCH_MAX_CALLS',
    kind: int(1, 10_000),
    default: '100',
    doc: 'most calls in one `POST /contract-calls/batch`',
  },
  {
    name: 'WATCH_MAX_READS',
    kind: int(1, 10_000),
    default: '100',
    doc: 'most reads one `POST /subscriptions` may watch',
  },
  {
    name: 'WATCH_MAX_STREAMS_PER_KEY',
    kind: int(0),
    default: '10',
    doc: 'open event streams per API key, fleet-wide',
  },
  {
    name: 'WATCH_MAX_STREAMS_ANONYMOUS',
    kind: int(0),
    default: '2',
    doc: 'open event streams per client address for subscriptions made without a key, fleet-wide',
  },
  {
    name: 'WATCH_IDLE_TTL_S',
    kind: int(1),
    default: '600',
    doc: 'a subscription with no stream connected is forgotten this long after its creation or its last stream closed',
  },
  {
    name: 'WATCH_MAX_UNSENT_BYTES',
    kind: int(1024),
    default: '1048576',
    shownDefault: '1 MiB',
    doc: 'a stream whose client leaves more than this unsent gets a last `SLOW_CONSUMER` event and is closed',
  },
  {
    name: 'COST_HIT',
    kind: int(0),
    default: '1',
    doc: 'units an answer from the cache costs (a stale one included); see [Usage and costs](#usage-and-costs)',
  },
  {
    name: 'COST_MISS',
    kind: int(0),
    default: '10',
    doc: 'units an answer that needed the upstream costs (coalesced and bypassing ones included; once per answer, never per upstream request)',
  },
  {
    name: 'COST_DECODE',
    kind: int(0),
    default: '1',
    doc: 'units a decode answer costs',
  },
  {
    name: 'USAGE_RETENTION_DAYS',
    kind: int(1, 36500),
    default: '90',
    doc: 'UTC days of usage rows kept (today included); older days are deleted',
  },
  {
    name: 'ADMIN_TOKEN',
    kind: { type: 'string' },
    default: undefined,
    doc: 'enables the admin API; clients send `Authorization: Bearer <token>`',
    secret: true,
  },
  {
    name: 'CORS_ORIGINS',
    kind: {
      type: 'custom',
      accepts: '*, none or a comma-separated list of origins like https://app.example.com',
    },
    default: '*',
    doc: 'origins allowed by CORS on the public routes: `*`, a comma-separated list, or `none` (no CORS headers)',
  },
  {
    name: 'HTTP_HEADERS_TIMEOUT_MS',
    kind: int(1),
    default: '10000',
    doc: "longest wait for a request's complete header section (at most `HTTP_REQUEST_TIMEOUT_MS`)",
  },
  {
    name: 'HTTP_REQUEST_TIMEOUT_MS',
    kind: int(1),
    default: '30000',
    doc: 'longest wait for a whole request, body included',
  },
  {
    name: 'HTTP_MAX_CONNECTIONS',
    kind: int(1),
    default: '10000',
    doc: 'most client connections open at once; further ones are closed at once',
  },
  {
    name: 'CHAIN_TIP_MAX_AGE_MS',
    kind: int(0),
    default: '5000',
    doc: 'oldest tip knowledge a block-bounded answer may use; older knowledge is refreshed with one shared `GET /v2/info`',
  },
  {
    name: 'CHAIN_TIP_MAX_ADVANCE',
    kind: int(0, 1_000_000),
    default: '30',
    doc: 'most blocks (plus one per second elapsed) a reported tip height may be above the tip believed so far; a higher report is not believed and its answer is discarded',
  },
  {
    name: 'CACHE_MAX_BLOCKS',
    kind: int(0, undefined, true),
    default: undefined,
    doc: 'block bound of requests that send no `cacheControl.maxBlocks`; unset = none (latest-state entries are kept indefinitely, and start-up says so)',
  },
  {
    name: 'NODE_MAX_BLOCKS',
    kind: int(0),
    default: '0',
    doc: 'block bound of the latest-state node routes (`/v2/data_var`, `/v2/map_entry`, call-read, ...): 0 = an answer serves only while the tip it was read at is the tip',
  },
  {
    name: 'NODE_DEFAULT_NETWORK',
    kind: { type: 'oneOf', values: ['mainnet', 'testnet'] },
    default: 'mainnet',
    doc: 'network of the node routes that name no address (`/v2/info`, `/v2/pox`, fees, transaction lookups) outside the `/mainnet` and `/testnet` prefixes',
  },
  {
    name: 'CACHE_STALE_WHILE_REVALIDATE_S',
    kind: int(0, MAX_WINDOW_S),
    default: '0',
    doc: 'default `cacheControl.staleWhileRevalidate` (0 = off)',
  },
  {
    name: 'CACHE_STALE_IF_ERROR_S',
    kind: int(0, MAX_WINDOW_S),
    default: '0',
    doc: 'default `cacheControl.staleIfError` (0 = off)',
  },
  {
    name: 'CACHE_STALE_MAX_S',
    kind: int(0, MAX_WINDOW_S),
    default: '86400',
    doc: 'how long an entry is kept past its freshness for stale answers; caps both windows',
  },
  {
    name: 'EVENT_OBSERVER_PORT',
    kind: int(0, 65535, true),
    default: undefined,
    shownDefault: 'unset (off)',
    doc: 'port of the event observer listener a Stacks node posts its blocks to (see [Follow the chain](#follow-the-chain-as-it-happens-event-observer))',
  },
  {
    name: 'EVENT_OBSERVER_HOST',
    kind: { type: 'string' },
    default: '127.0.0.1',
    doc: 'address of that listener',
  },
  {
    name: 'EVENT_OBSERVER_NETWORK',
    kind: { type: 'oneOf', values: ['mainnet', 'testnet'] },
    default: undefined,
    doc: "`mainnet` or `testnet`: the observed node's network (required with the port)",
  },
  {
    name: 'EVENT_OBSERVER_BODY_LIMIT_MB',
    kind: int(1, 4096),
    default: '500',
    doc: 'largest event payload read',
  },
];

/**
 * Variables with our prefixes that belong to other programs of this repository, documented
 * beside the table: the local chain's and the command line's. Known, so never warned about.
 */
export const OTHER_PROGRAMS_VARIABLES: readonly { readonly name: string; readonly doc: string }[] = [
  { name: 'DEVNET_PORT', doc: 'the local chain (`npm run demo`, `src/devnet`): its port (default 20443)' },
  { name: 'DEVNET_HOST', doc: 'the local chain: its address (default 127.0.0.1)' },
  {
    name: 'EVENT_OBSERVER_URLS',
    doc: 'the local chain: comma-separated observer URLs it posts every block to as `/new_block`',
  },
  {
    name: 'CLARITY_CACHE_URL',
    doc: 'the command line: the gateway it talks to (default http://localhost:3000)',
  },
  {
    name: 'CLARITY_CACHE_API_KEY',
    doc: 'the command line: the API key `clarity-cache usage` reads its own usage with (without `ADMIN_TOKEN`)',
  },
];

/** The prefixes that mark a variable as the gateway's. */
export const OUR_PREFIXES = [
  'CACHE_',
  'UPSTREAM_',
  'STACKS_',
  'CHAIN_',
  'HTTP_',
  'BATCH_',
  'NODE_',
  'EVENT_',
  'API_KEYS_',
  'ADMIN_',
  'REDIS_',
  'CORS_',
] as const;

const BY_NAME = new Map(VARIABLES.map((v) => [v.name, v]));

export function declared(name: string): Variable {
  const v = BY_NAME.get(name);
  if (v === undefined) throw new Error(`configuration variable ${name} is not declared`);
  return v;
}
