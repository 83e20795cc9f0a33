/**
 * Shared persistent store (CACHE_STORE=redis) on ioredis.
 *
 * Layout, under keyPrefix (default "cc:"):
 *   {p}k:{key}         string: JSON {v: value, s: storedAt, e: expiresAt|null}, with a
 *                      Redis PX expiry when the entry has a ttl
 *   {p}idx:{ns}        sorted set of the keys of namespace ns (the key up to and including
 *                      its first ':', '' for keys without one), scored by expiresAt (+inf
 *                      for never), so list() needs neither KEYS nor SCAN and skips expired
 *                      keys by score
 *   {p}namespaces      set of the namespaces in use (only read when listing a prefix that
 *                      has no ':')
 *
 * Index members whose entry has expired are trimmed on every write to that namespace and
 * on every list; members whose key is gone for another reason (eviction, a DEL from
 * outside) are dropped when list() notices. Run Redis with a no-eviction or volatile-*
 * policy: an evicted index loses the listing of its namespace.
 *
 * Resilience: commands fail fast while disconnected (no offline queue), in-flight commands
 * are retried a bounded number of times and time out, and the client reconnects forever
 * with capped exponential backoff. `onStatus` reports ready/down transitions.
 */
import { Redis } from 'ioredis';
import { type CacheStore, expiryFor, isLive, type StoredEntry } from '../store.js';

export type RedisStatus = 'ready' | 'down';

export interface RedisStoreOptions {
  /** redis:// or rediss:// URL. */
  readonly url: string;
  /** Prefix of every key this store writes. Default "cc:". */
  readonly keyPrefix?: string;
  /** Clock in epoch ms; injectable so tests can advance time without sleeping. */
  readonly now?: () => number;
  /** Connection transitions: 'ready' once usable, 'down' once lost (or first failed). */
  readonly onStatus?: (status: RedisStatus, err?: unknown) => void;
  /** Retries of a command caught by a dropped connection. Default 1. */
  readonly maxRetriesPerRequest?: number;
  /** A command without a reply in this time fails. Default 2000. */
  readonly commandTimeoutMs?: number;
  /** Default 5000. */
  readonly connectTimeoutMs?: number;
  /** Reconnect backoff: base * 2^(attempt-1), capped. Defaults 100 and 5000. */
  readonly retryBaseMs?: number;
  readonly retryMaxMs?: number;
}

interface Encoded {
  v: string;
  s: number;
  e: number | null;
}

/** The namespace a key is indexed under: up to and including the first ':', else ''. */
export function namespaceOf(key: string): string {
  const colon = key.indexOf(':');
  return colon < 0 ? '' : key.slice(0, colon + 1);
}

function decode(raw: string, key: string): StoredEntry {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new Error(`redis entry for "${key}" is not valid JSON`);
  }
  const e = parsed as Partial<Encoded> | null;
  if (
    e === null ||
    typeof e !== 'object' ||
    typeof e.v !== 'string' ||
    typeof e.s !== 'number' ||
    !(e.e === null || typeof e.e === 'number')
  ) {
    throw new Error(`redis entry for "${key}" has an unexpected shape`);
  }
  return { value: e.v, storedAt: e.s, expiresAt: e.e };
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
  readonly #client: Redis;
  readonly #now: () => number;
  readonly #onStatus: (status: RedisStatus, err?: unknown) => void;
  #state: RedisStatus | 'unknown' = 'unknown';
  #lastError: unknown;
  #closed = false;

  constructor(options: RedisStoreOptions) {
    this.keyPrefix = options.keyPrefix ?? 'cc:';
    this.#now = options.now ?? Date.now;
    this.#onStatus = options.onStatus ?? (() => {});
    const base = options.retryBaseMs ?? 100;
    const cap = options.retryMaxMs ?? 5000;
    this.#client = new Redis(options.url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: options.maxRetriesPerRequest ?? 1,
      commandTimeout: options.commandTimeoutMs ?? 2000,
      connectTimeout: options.connectTimeoutMs ?? 5000,
      keepAlive: 10_000,
      // Never give up: a Redis outage degrades the gateway to its hot tier until it is back.
      retryStrategy: (times) => (this.#closed ? null : Math.min(base * 2 ** Math.min(times - 1, 30), cap)),
    });
    this.#client.on('ready', () => this.#transition('ready'));
    this.#client.on('close', () => this.#transition('down'));
    // Without a listener ioredis prints every reconnect failure; keep the cause for 'down'.
    this.#client.on('error', (err: unknown) => {
      this.#lastError = err;
    });
  }

  /** The ioredis client, for other Redis-backed parts (budget, coalescing). */
  get redis(): Redis {
    return this.#client;
  }

  isReady(): boolean {
    return !this.#closed && this.#client.status === 'ready';
  }

  /**
   * Resolve once connected; reject with the cause when this attempt fails (the client
   * keeps reconnecting in the background regardless).
   */
  async connect(): Promise<void> {
    if (this.#closed) throw new Error('redis store is closed');
    const client = this.#client;
    if (client.status === 'ready') return;
    if (client.status === 'wait') {
      try {
        await client.connect();
        return;
      } catch (err) {
        throw this.#lastError ?? err;
      }
    }
    await new Promise<void>((resolve, reject) => {
      const onReady = (): void => {
        client.off('close', onClose);
        resolve();
      };
      const onClose = (): void => {
        client.off('ready', onReady);
        reject(this.#lastError ?? new Error('redis connection closed'));
      };
      client.once('ready', onReady);
      client.once('close', onClose);
    });
  }

  async get(key: string): Promise<StoredEntry | undefined> {
    const raw = await this.#client.get(this.#dataKey(key));
    if (raw === null) return undefined;
    const entry = decode(raw, key);
    return isLive(entry, this.#now()) ? entry : undefined;
  }

  async set(key: string, value: string, ttlMs?: number): Promise<void> {
    const now = this.#now();
    const expiresAt = expiryFor(ttlMs, now);
    const encoded: Encoded = { v: value, s: now, e: expiresAt };
    const json = JSON.stringify(encoded);
    const ns = namespaceOf(key);
    const index = this.#indexKey(ns);
    const tx = this.#client.multi();
    if (expiresAt === null || ttlMs === undefined) tx.set(this.#dataKey(key), json);
    else tx.set(this.#dataKey(key), json, 'PX', Math.max(1, Math.ceil(ttlMs)));
    tx.zadd(index, expiresAt === null ? '+inf' : String(expiresAt), key);
    tx.zremrangebyscore(index, '-inf', String(now));
    tx.sadd(this.#namespacesKey(), ns);
    replies(await tx.exec());
  }

  async delete(key: string): Promise<boolean> {
    const [removed] = replies(
      await this.#client
        .multi()
        .del(this.#dataKey(key))
        .zrem(this.#indexKey(namespaceOf(key)), key)
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
      read.zremrangebyscore(this.#indexKey(ns), '-inf', String(now));
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
      else gone.zrem(this.#indexKey(namespaceOf(key)), key);
    });
    if (gone.length > 0) replies(await gone.exec());
    return live;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const client = this.#client;
    if (client.status === 'ready') {
      try {
        await client.quit();
      } catch {
        // Closing anyway.
      }
    }
    // disconnect() also cancels a pending reconnect. Only a live socket has an 'end' to wait
    // for (a client between reconnect attempts never emits one), and even that wait is bounded.
    const live = client.status === 'connecting' || client.status === 'connect' || client.status === 'ready';
    if (!live) {
      client.disconnect();
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    const ended = new Promise<void>((resolve) => {
      client.once('end', () => resolve());
      timer = setTimeout(resolve, 1_000);
      timer.unref();
    });
    client.disconnect();
    await ended;
    clearTimeout(timer);
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

  #transition(next: RedisStatus): void {
    if (this.#closed || this.#state === next) return;
    this.#state = next;
    if (next === 'ready') this.#lastError = undefined;
    this.#onStatus(next, next === 'down' ? this.#lastError : undefined);
  }
}
