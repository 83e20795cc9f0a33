/**
 * A state per upstream shared by every instance on one Redis, the way the circuit breaker's and
 * the consensus sit-outs are (redis-breaker-sync.ts, redis-strike-sync.ts): changes are
 * announced on a pub/sub channel as `{instance} {id} {text…}` (an instance ignores its own), and
 * a state that lasts is kept in the key `{prefix}{kind}:{id}` with a PTTL, which an instance that
 * starts, binds an upstream or reconnects later reads (its remaining time, never a deadline:
 * the instances' clocks never matter).
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { KEY_PREFIX, type Subscription, subscribe } from '../redis/connection.js';

export interface AnnouncedOptions<T> {
  readonly client: Redis;
  readonly keyPrefix?: string | undefined;
  /** The channel's and the keys' name after the prefix: `breaker`, `sitout`. */
  readonly kind: string;
  /** The state an announcement's words after the id tell, or undefined when they tell none. */
  readonly parse: (words: readonly string[]) => T | undefined;
  /** The state a key kept for `remainingMs` more tells. */
  readonly kept: (remainingMs: number) => T;
  readonly onError?: ((err: unknown) => void) | undefined;
}

export class AnnouncedState<T> {
  readonly channel: string;
  /** This instance's name in announcements. */
  readonly instance = randomUUID();
  readonly client: Redis;
  readonly prefix: string;
  readonly onError: (err: unknown) => void;
  readonly #options: AnnouncedOptions<T>;
  readonly #sub: Subscription;
  readonly #targets = new Map<string, (state: T) => void>();

  constructor(options: AnnouncedOptions<T>) {
    this.#options = options;
    this.client = options.client;
    this.prefix = options.keyPrefix ?? KEY_PREFIX;
    this.channel = `${this.prefix}${options.kind}`;
    this.onError = options.onError ?? (() => {});
    this.#sub = subscribe(this.client, this.channel, {
      // After (re)subscribing: states decided while this instance was not listening.
      onSubscribed: () => void Promise.all([...this.#targets.keys()].map((id) => this.#read(id))),
      onError: this.onError,
      onMessage: (message) => this.#onMessage(message),
    });
  }

  /** The key a lasting state of upstream `id` is kept in. */
  keyOf(id: string): string {
    return `${this.channel}:${id}`;
  }

  /** What an announcement of `id` says: this instance's name, the id, then `text`. */
  message(id: string, text: string): string {
    return `${this.instance} ${id} ${text}`;
  }

  /** Where the states announced or kept for upstream `id` go. */
  bind(id: string, apply: (state: T) => void): void {
    this.#targets.set(id, apply);
    if (this.client.status === 'ready') void this.#read(id);
  }

  close(): void {
    this.#targets.clear();
    this.#sub.close();
  }

  #onMessage(message: string): void {
    const [instance, id, ...words] = message.split(' ');
    if (instance === this.instance || id === undefined) return;
    const apply = this.#targets.get(id);
    if (apply === undefined) return;
    const state = this.#options.parse(words);
    if (state !== undefined) apply(state);
  }

  async #read(id: string): Promise<void> {
    try {
      const remaining = await this.client.pttl(this.keyOf(id));
      if (remaining > 0) this.#targets.get(id)?.(this.#options.kept(remaining));
    } catch (err) {
      this.onError(err);
    }
  }
}
