/**
 * Coalescing of identical misses across instances sharing one Redis (CACHE_STORE=redis).
 *
 * Each instance already coalesces in-process (ReadThroughCache); its one local leader per
 * key then calls run():
 *
 * 1. `SET {p}lock:{key} <token> NX PX lockTtlMs`. The winner re-reads the store (another
 *    instance may have stored the value between its miss and its lock), otherwise loads and
 *    stores, publishes the outcome on `{p}coalesce` and releases the lock (only if still
 *    its own). While loading it renews the lock every lockTtlMs/3: a live holder keeps it
 *    however long the upstream takes, a dead one loses it within lockTtlMs.
 * 2. Everybody else waits for the holder's outcome: a pub/sub message (the value, or the
 *    error to share), or, polling with a bounded backoff (pollMinMs doubling to pollMaxMs),
 *    the value appearing in the store. Each poll also tries to take the lock again, so when
 *    the holder dies (its lock expires without a value) one waiter takes over and loads.
 * 3. A waiter that has waited maxWaitMs loads by itself, without the lock.
 *
 * A bust (task.fresh) coalesces too, but only with a load that began after it started: a
 * load under way when the bust arrives may return the very value the bust
 * is meant to replace. Every outcome carries the time its load began (the holder's clock:
 * keep the instances' clocks in sync, as NTP does); a bust ignores outcomes, values and
 * failures alike, of loads that began before it, and never takes a stored entry (which
 * does not say when its load began), so it loads itself once the older holder lets go of
 * the lock.
 *
 * Failures the holder published (an unknown contract, a timeout, the shared budget exhausted,
 * ...: whatever `failures.share` gives a wire form) reach every waiter, as they would
 * in-process; any other failure makes a waiter try the lock and load itself.
 *
 * Redis unreachable: run() loads at once, in-process coalescing only, and a waiter whose
 * Redis goes away mid-wait loads too. Nothing here ever fails a request because of Redis.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { KEY_PREFIX, type Subscription, subscribe } from '../redis/connection.js';
import { LuaScript } from '../redis/lua-script.js';
import type {
  CoalescedValue,
  CoalesceTask,
  CrossInstanceCoalescer,
  SharedFailure,
  SharedFailures,
} from './cross-instance-coalescer.js';
import type { CacheEntry } from './entry.js';

const RELEASE = new LuaScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`);

const RENEW = new LuaScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`);

export type CoalescerOp = 'lock' | 'publish' | 'release' | 'renew' | 'subscribe';

export interface RedisCoalescerOptions {
  /** The shared command client (RedisConnection.client); a duplicate of it subscribes. */
  readonly client: Redis;
  /** Prefix of the lock keys and of the channel. Default KEY_PREFIX. */
  readonly keyPrefix?: string;
  /** Which failures reach the waiters on other instances, and how they are raised there. */
  readonly failures: SharedFailures;
  /** Lock lifetime without renewal: how soon a dead holder is replaced. Default 3000. */
  readonly lockTtlMs?: number;
  /** Poll backoff bounds while waiting. Defaults 25 and 250. */
  readonly pollMinMs?: number;
  readonly pollMaxMs?: number;
  /** Longest wait for another instance before loading anyway. Default 30000. */
  readonly maxWaitMs?: number;
  /** Listen for outcomes on pub/sub (else poll only). Default true. */
  readonly pubsub?: boolean;
  /** This instance waits for another's load of key (once per run). */
  readonly onWait?: (key: string) => void;
  /** A Redis failure that was absorbed. */
  readonly onError?: (err: unknown, op: CoalescerOp) => void;
}

/** What a holder publishes when its load ends. */
interface Outcome {
  /** The publishing instance (an instance ignores its own outcomes). */
  i: string;
  /** The cache key. */
  k: string;
  ok: boolean;
  /** The value, when ok. */
  v?: string;
  /** Whether the holder stored it. */
  s?: boolean;
  /** When the holder's load began (epoch ms, its clock). */
  b?: number;
  /** The failure, when it is one every waiter would meet too. */
  e?: SharedFailure;
  /** The upstreams that attested the value (attested answers); absent: one upstream's word. */
  n?: number;
}

/** Outcomes for one run, buffered from the moment it starts. */
class Inbox {
  readonly #messages: Outcome[] = [];
  #wake: (() => void) | undefined;

  push(outcome: Outcome): void {
    this.#messages.push(outcome);
    this.#wake?.();
  }

  /** The next outcome, or undefined after timeoutMs. */
  next(timeoutMs: number): Promise<Outcome | undefined> {
    const buffered = this.#messages.shift();
    if (buffered !== undefined) return Promise.resolve(buffered);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#wake = undefined;
        resolve(undefined);
      }, timeoutMs);
      this.#wake = () => {
        clearTimeout(timer);
        this.#wake = undefined;
        resolve(this.#messages.shift());
      };
    });
  }
}

export class RedisCoalescer implements CrossInstanceCoalescer {
  readonly channel: string;
  readonly #client: Redis;
  readonly #failures: SharedFailures;
  readonly #prefix: string;
  readonly #lockTtlMs: number;
  readonly #pollMinMs: number;
  readonly #pollMaxMs: number;
  readonly #maxWaitMs: number;
  readonly #onWait: (key: string) => void;
  readonly #onError: (err: unknown, op: CoalescerOp) => void;
  readonly #inboxes = new Map<string, Set<Inbox>>();
  readonly #instance = randomUUID();
  readonly #sub: Subscription | undefined;
  #onSubscribed: (() => void) | undefined;
  readonly #firstSubscription: Promise<void>;
  #runs = 0;
  #closed = false;

  constructor(options: RedisCoalescerOptions) {
    this.#client = options.client;
    this.#failures = options.failures;
    this.#prefix = options.keyPrefix ?? KEY_PREFIX;
    this.channel = `${this.#prefix}coalesce`;
    this.#lockTtlMs = options.lockTtlMs ?? 3000;
    this.#pollMinMs = options.pollMinMs ?? 25;
    this.#pollMaxMs = Math.max(this.#pollMinMs, options.pollMaxMs ?? 250);
    this.#maxWaitMs = options.maxWaitMs ?? 30_000;
    this.#onWait = options.onWait ?? (() => {});
    this.#onError = options.onError ?? (() => {});
    this.#firstSubscription = new Promise((resolve) => {
      this.#onSubscribed = resolve;
    });
    if (options.pubsub !== false) {
      this.#sub = subscribe(this.#client, this.channel, {
        onSubscribed: () => {
          this.#onSubscribed?.();
        },
        onError: (err) => this.#onError(err, 'subscribe'),
        onMessage: (message) => this.#dispatch(message),
      });
    }
  }

  /** Resolves once outcomes first arrive by pub/sub (never, with pubsub: false). */
  whenSubscribed(): Promise<void> {
    return this.#firstSubscription;
  }

  async run(key: string, task: CoalesceTask): Promise<CoalescedValue> {
    if (this.#closed || this.#client.status !== 'ready') return this.#loadHere(task);
    const startedAt = Date.now();
    const deadline = startedAt + this.#maxWaitMs;
    const lockKey = `${this.#prefix}lock:${key}`;
    const token = `${this.#instance}:${++this.#runs}`;
    const inbox = this.#listen(key);
    // Strictly later: within the same millisecond "before" and "after" cannot be told apart.
    const acceptable = (outcome: Outcome): boolean =>
      !task.fresh || (outcome.b !== undefined && outcome.b > startedAt);
    try {
      let delay = this.#pollMinMs;
      let waiting = false;
      for (;;) {
        let locked: boolean;
        try {
          locked = (await this.#client.set(lockKey, token, 'PX', this.#lockTtlMs, 'NX')) === 'OK';
        } catch (err) {
          this.#onError(err, 'lock');
          return await this.#loadHere(task);
        }
        if (locked) return await this.#lead(key, lockKey, token, task);

        if (!waiting) {
          waiting = true;
          this.#onWait(key);
        }
        const entry = task.fresh ? undefined : await task.read();
        if (entry !== undefined) return fromStore(entry);
        const remaining = deadline - Date.now();
        if (remaining <= 0) return await this.#loadHere(task);
        const outcome = await inbox.next(Math.min(delay, remaining));
        delay = Math.min(delay * 2, this.#pollMaxMs);
        if (outcome !== undefined && !acceptable(outcome)) {
          // An older load ended (a bust waits for a newer one): its lock is free now.
          delay = this.#pollMinMs;
        } else if (outcome !== undefined) {
          if (outcome.ok && outcome.v !== undefined) {
            return {
              value: outcome.v,
              loadedHere: false,
              stored: outcome.s === true,
              ...(typeof outcome.n === 'number' ? { votes: outcome.n } : {}),
            };
          }
          const failure = outcome.e === undefined ? undefined : this.#failures.revive(outcome.e);
          if (failure !== undefined) throw failure;
          // A failure that was not shared: try the lock again at once.
          delay = this.#pollMinMs;
        }
        if (this.#closed || this.#client.status !== 'ready') return await this.#loadHere(task);
      }
    } finally {
      this.#unlisten(key, inbox);
    }
  }

  /** Stop listening. Idempotent; runs under way finish (loading here if they must). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#sub?.close();
  }

  async #lead(key: string, lockKey: string, token: string, task: CoalesceTask): Promise<CoalescedValue> {
    const renewEvery = Math.max(1, Math.floor(this.#lockTtlMs / 3));
    const renew = setInterval(() => {
      RENEW.run(this.#client, [lockKey], [token, this.#lockTtlMs]).catch((err: unknown) =>
        this.#onError(err, 'renew'),
      );
    }, renewEvery);
    renew.unref();
    try {
      // Stored by another instance between this one's miss and its lock? (Not for a bust.)
      const entry = task.fresh ? undefined : await task.read();
      if (entry !== undefined) return fromStore(entry);
      const began = Date.now();
      let value: string;
      try {
        value = await task.load();
      } catch (err) {
        const shared = this.#failures.share(err);
        this.#publish({
          i: this.#instance,
          k: key,
          ok: false,
          b: began,
          ...(shared === undefined ? {} : { e: shared }),
        });
        throw err;
      }
      const votes = task.votes;
      this.#publish({
        i: this.#instance,
        k: key,
        ok: true,
        v: value,
        s: task.stores,
        b: began,
        ...(votes === undefined ? {} : { n: votes }),
      });
      return { value, loadedHere: true, stored: task.stores };
    } finally {
      clearInterval(renew);
      // After the publish on the same connection, so a waiter that finds the lock gone has
      // had its message sent already.
      if (this.#client.status === 'ready') {
        RELEASE.run(this.#client, [lockKey], [token]).catch((err: unknown) => this.#onError(err, 'release'));
      }
    }
  }

  async #loadHere(task: CoalesceTask): Promise<CoalescedValue> {
    const value = await task.load();
    return { value, loadedHere: true, stored: task.stores };
  }

  #publish(outcome: Outcome): void {
    if (this.#client.status !== 'ready') return;
    this.#client
      .publish(this.channel, JSON.stringify(outcome))
      .catch((err: unknown) => this.#onError(err, 'publish'));
  }

  #listen(key: string): Inbox {
    const inbox = new Inbox();
    let set = this.#inboxes.get(key);
    if (set === undefined) {
      set = new Set();
      this.#inboxes.set(key, set);
    }
    set.add(inbox);
    return inbox;
  }

  #unlisten(key: string, inbox: Inbox): void {
    const set = this.#inboxes.get(key);
    if (set === undefined) return;
    set.delete(inbox);
    if (set.size === 0) this.#inboxes.delete(key);
  }

  #dispatch(message: string): void {
    let outcome: Outcome;
    try {
      outcome = JSON.parse(message) as Outcome;
    } catch {
      return;
    }
    if (outcome === null || typeof outcome !== 'object' || typeof outcome.k !== 'string') return;
    if (outcome.i === this.#instance) return;
    const set = this.#inboxes.get(outcome.k);
    if (set === undefined) return;
    for (const inbox of set) inbox.push(outcome);
  }
}

/** Another instance's value as the shared store holds it. */
function fromStore(entry: CacheEntry): CoalescedValue {
  return {
    value: entry.value,
    loadedHere: false,
    stored: true,
    ...(entry.votes === undefined ? {} : { votes: entry.votes }),
  };
}
