/**
 * Shared persistent store (CACHE_STORE=redis) on ioredis.
 *
 * Layout, under keyPrefix (default "cc:"):
 *   {p}k:{key}         string: JSON {v: value, s: storedAt, t: staleAt|null, e: expiresAt|null,
 *                      h: tipHeight|null}, with a Redis PX expiry when the entry expires.
 *                      Values written before t and h existed read as t = e, h = null.
 *   {p}idx:{ns}        sorted set of the keys of namespace ns (the key up to and including
 *                      its first ':', '' for keys without one), scored by expiresAt (+inf
 *                      for never), so list() needs neither KEYS nor SCAN and skips expired
 *                      keys by score
 *   {p}lex:{ns}        the same keys, all scored 0, so that they are ordered by key: one
 *                      page of a listing (listPage) is a ZRANGEBYLEX from a cursor, never a
 *                      read of the whole namespace (known contracts)
 *   {p}namespaces      set of the namespaces in use (only read when listing a prefix that
 *                      has no ':')
 *
 * Index members whose entry has expired are trimmed from both sets (TRIM, a script: the
 * lex set cannot be trimmed by score) on every write to that namespace and on every list;
 * members whose key is gone for another reason (eviction, a DEL from
 * outside) are dropped when list() notices. Run Redis with a no-eviction or volatile-*
 * policy: an evicted index loses the listing of its namespace.
 *
 * Resilience (fail fast while down, bounded retries, reconnect forever) is the connection's:
 * see src/redis/connection.ts.
 */
import type { Redis } from 'ioredis';
import { KEY_PREFIX, RedisConnection, type RedisConnectionOptions } from '../../redis/connection.js';
import { type CacheEntry, CorruptEntryError, isLive, newEntry } from '../entry.js';
import type { CacheStore, EntryMeta } from '../store.js';
import { prefixSuccessor } from './key-range.js';

export type { RedisStatus } from '../../redis/connection.js';

export interface RedisStoreOptions extends RedisConnectionOptions {
  /** Prefix of every key this store writes. Default KEY_PREFIX ("cc:"). */
  readonly keyPrefix?: string;
  /** Clock in epoch ms; injectable so tests can advance time without sleeping. */
  readonly now?: () => number;
}

interface Encoded {
  v: string;
  s: number;
  /** staleAt; absent in values written by an older version. */
  t?: number | null;
  e: number | null;
  /** tipHeight; absent in values written by an older version. */
  h?: number | null;
  /** chain identity; absent when unknown. */
  c?: string;
  /** 1 when h is the answering node's own height (CacheEntry.tipReported); absent otherwise. */
  r?: 1;
  /** votes (CacheEntry.votes), under attested answers; absent otherwise. */
  n?: number;
}

/**
 * Remove up to ARGV[2] members whose expiry (their score in KEYS[1], the expiry index) is
 * at or before ARGV[1] from both index sets (KEYS[2]: the lex set). Bounded per call so a
 * write never does unbounded work; every write trims, so the sets keep up with expiries.
 */
const TRIM = `
local dead = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
if #dead > 0 then
  redis.call('ZREM', KEYS[1], unpack(dead))
  redis.call('ZREM', KEYS[2], unpack(dead))
end
return #dead
`;
const TRIM_BATCH = 1000;

const isTime = (x: unknown): x is number | null => x === null || typeof x === 'number';

/** The namespace a key is indexed under: up to and including the first ':', else ''. */
export function namespaceOf(key: string): string {
  const colon = key.indexOf(':');
  return colon < 0 ? '' : key.slice(0, colon + 1);
}

function decode(raw: string, key: string): CacheEntry {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new CorruptEntryError(key, 'the redis value is not JSON');
  }
  const e = parsed as Partial<Encoded> | null;
  if (
    e === null ||
    typeof e !== 'object' ||
    typeof e.v !== 'string' ||
    typeof e.s !== 'number' ||
    !isTime(e.e) ||
    !(e.t === undefined || isTime(e.t)) ||
    !(e.h === undefined || isTime(e.h)) ||
    !(e.c === undefined || typeof e.c === 'string') ||
    !(e.r === undefined || e.r === 1) ||
    !(e.n === undefined || (Number.isSafeInteger(e.n) && e.n > 0))
  ) {
    throw new CorruptEntryError(key, 'the redis value has an unexpected shape');
  }
  return {
    value: e.v,
    storedAt: e.s,
    staleAt: e.t === undefined ? e.e : e.t,
    expiresAt: e.e,
    tipHeight: e.h ?? null,
    ...(e.c === undefined ? {} : { chain: e.c }),
    ...(e.r === 1 ? { tipReported: true } : {}),
    ...(e.n === undefined ? {} : { votes: e.n }),
  };
}

/** The exclusive ZRANGEBYLEX upper bound of the keys under prefix ('+': none). */
function prefixUpper(prefix: string): string {
  const upper = prefixSuccessor(prefix);
  return upper === undefined ? '+' : `(${upper}`;
}

/** Throw the first error of a MULTI/pipeline result; return the replies. */
function replies(result: [Error | null, unknown][] | null): unknown[] {
  if (result === null) throw new Error('redis transaction aborted');
  return result.map(([err, reply]) => {
    if (err) throw err;
    return reply;
  });
}

export class RedisStore implements CacheStore {
  readonly kind = 'redis';
  readonly keyPrefix: string;
  readonly #connection: RedisConnection;
  readonly #client: Redis;
  readonly #now: () => number;
  /** Namespaces whose lex set is known to hold every indexed key (see #backfillLex). */
  readonly #lexChecked = new Set<string>();

  constructor(options: RedisStoreOptions) {
    this.keyPrefix = options.keyPrefix ?? KEY_PREFIX;
    this.#now = options.now ?? Date.now;
    this.#connection = new RedisConnection(options);
    this.#client = this.#connection.client;
  }

  /** The ioredis client (tests, diagnostics). */
  get redis(): Redis {
    return this.#client;
  }

  isReady(): boolean {
    return this.#connection.isReady();
  }

  /**
   * Resolve once connected; reject with the cause when this attempt fails (the client
   * keeps reconnecting in the background regardless).
   */
  connect(): Promise<void> {
    return this.#connection.connect();
  }

  async get(key: string): Promise<CacheEntry | undefined> {
    const raw = await this.#client.get(this.#dataKey(key));
    if (raw === null) return undefined;
    const entry = decode(raw, key);
    return isLive(entry, this.#now()) ? entry : undefined;
  }

  async set(key: string, value: string, ttlMs?: number, meta?: EntryMeta): Promise<void> {
    const now = this.#now();
    const entry = newEntry(value, now, ttlMs, meta);
    const { expiresAt } = entry;
    const encoded: Encoded = { v: value, s: now, t: entry.staleAt, e: expiresAt, h: entry.tipHeight };
    if (typeof entry.chain === 'string') encoded.c = entry.chain;
    if (entry.tipReported === true) encoded.r = 1;
    if (entry.votes !== undefined) encoded.n = entry.votes;
    const json = JSON.stringify(encoded);
    const ns = namespaceOf(key);
    const index = this.#indexKey(ns);
    const tx = this.#client.multi();
    if (expiresAt === null) tx.set(this.#dataKey(key), json);
    else tx.set(this.#dataKey(key), json, 'PX', Math.max(1, Math.ceil(expiresAt - now)));
    tx.zadd(index, expiresAt === null ? '+inf' : String(expiresAt), key);
    tx.zadd(this.#lexKey(ns), 0, key);
    tx.eval(TRIM, 2, index, this.#lexKey(ns), String(now), TRIM_BATCH);
    tx.sadd(this.#namespacesKey(), ns);
    replies(await tx.exec());
  }

  async delete(key: string): Promise<boolean> {
    const [removed] = replies(
      await this.#client
        .multi()
        .del(this.#dataKey(key))
        .zrem(this.#indexKey(namespaceOf(key)), key)
        .zrem(this.#lexKey(namespaceOf(key)), key)
        .exec(),
    );
    return removed === 1;
  }

  async list(prefix: string): Promise<string[]> {
    const now = this.#now();
    const namespaces = await this.#namespacesFor(prefix);
    const read = this.#client.pipeline();
    for (const ns of namespaces) {
      read.zrangebyscore(this.#indexKey(ns), `(${now}`, '+inf');
      read.eval(TRIM, 2, this.#indexKey(ns), this.#lexKey(ns), String(now), TRIM_BATCH);
    }
    const results = replies(await read.exec());
    const candidates: string[] = [];
    for (let i = 0; i < namespaces.length; i++) {
      for (const key of results[i * 2] as string[]) if (key.startsWith(prefix)) candidates.push(key);
    }
    if (candidates.length === 0) return [];
    // The index can outlive its keys (eviction, DEL from outside): keep only existing ones.
    const check = this.#client.pipeline();
    for (const key of candidates) check.exists(this.#dataKey(key));
    const exists = replies(await check.exec());
    const live: string[] = [];
    const gone = this.#client.pipeline();
    candidates.forEach((key, i) => {
      if (exists[i] === 1) live.push(key);
      else gone.zrem(this.#indexKey(namespaceOf(key)), key).zrem(this.#lexKey(namespaceOf(key)), key);
    });
    if (gone.length > 0) replies(await gone.exec());
    return live;
  }

  /**
   * A page of the live keys under prefix, in key order, from the lex set of prefix's
   * namespace: ZRANGEBYLEX from the cursor, then one pipeline checking each candidate's
   * expiry (its score in the expiry index) and existence. Dead members are dropped from both
   * sets and the page is topped up, so a page costs about `limit` members however large the
   * namespace.
   */
  async listPage(prefix: string, after: string | undefined, limit: number): Promise<string[]> {
    const ns = namespaceOf(prefix);
    if (ns === '' && !prefix.includes(':')) {
      // No namespace to page within: the whole listing, sorted (only for such odd prefixes).
      const all = (await this.list(prefix)).sort();
      return all.filter((k) => after === undefined || k > after).slice(0, limit);
    }
    await this.#backfillLex(ns);
    const lex = this.#lexKey(ns);
    const index = this.#indexKey(ns);
    const upper = prefixUpper(prefix);
    const out: string[] = [];
    let from = after !== undefined && after >= prefix ? `(${after}` : `[${prefix}`;
    while (out.length < limit) {
      const want = limit - out.length;
      const members = await this.#client.zrangebylex(lex, from, upper, 'LIMIT', 0, want);
      if (members.length === 0) break;
      const now = this.#now();
      const check = this.#client.pipeline();
      for (const key of members) check.zscore(index, key).exists(this.#dataKey(key));
      const answers = replies(await check.exec());
      const gone = this.#client.pipeline();
      members.forEach((key, i) => {
        const score = answers[i * 2] as string | null;
        const exists = answers[i * 2 + 1] === 1;
        const live = score !== null && (score === 'inf' || Number(score) > now);
        if (live && exists) out.push(key);
        else gone.zrem(index, key).zrem(lex, key);
      });
      if (gone.length > 0) replies(await gone.exec());
      if (members.length < want) break;
      from = `(${members[members.length - 1]!}`;
    }
    return out;
  }

  /** Live keys under prefix: exact for a whole namespace (by expiry score), else from the lex set. */
  async count(prefix: string): Promise<number> {
    const ns = namespaceOf(prefix);
    if (ns !== '' && prefix === ns) return this.#client.zcount(this.#indexKey(ns), `(${this.#now()}`, '+inf');
    if (ns === '' && !prefix.includes(':')) return (await this.list(prefix)).length;
    await this.#backfillLex(ns);
    return this.#client.zlexcount(this.#lexKey(ns), `[${prefix}`, prefixUpper(prefix));
  }

  close(): Promise<void> {
    return this.#connection.close();
  }

  /**
   * Keys written by a version without the lex sets are in the expiry index only: copy them
   * over, once per namespace and process, in batches (upgrades keep the cache listed).
   */
  async #backfillLex(ns: string): Promise<void> {
    if (this.#lexChecked.has(ns)) return;
    const index = this.#indexKey(ns);
    const lex = this.#lexKey(ns);
    const [indexed, ordered] = await Promise.all([this.#client.zcard(index), this.#client.zcard(lex)]);
    if (ordered < indexed) {
      const batch = 1000;
      for (let start = 0; start < indexed; start += batch) {
        const keys = await this.#client.zrange(index, start, start + batch - 1);
        if (keys.length === 0) break;
        await this.#client.zadd(lex, ...keys.flatMap((k) => [0, k]));
      }
    }
    this.#lexChecked.add(ns);
  }

  #lexKey(ns: string): string {
    return `${this.keyPrefix}lex:${ns}`;
  }

  #dataKey(key: string): string {
    return `${this.keyPrefix}k:${key}`;
  }

  #indexKey(ns: string): string {
    return `${this.keyPrefix}idx:${ns}`;
  }

  #namespacesKey(): string {
    return `${this.keyPrefix}namespaces`;
  }

  /** Index sets that can hold keys starting with prefix. */
  async #namespacesFor(prefix: string): Promise<string[]> {
    if (prefix.includes(':')) return [namespaceOf(prefix)];
    // No ':' in the prefix: keys without a namespace, and every namespace the prefix begins.
    const all = await this.#client.smembers(this.#namespacesKey());
    return [...new Set(['', ...all.filter((ns) => ns.startsWith(prefix))])];
  }
}
