/**
 * Keeps the in-memory hot tiers of several instances coherent over one shared Redis: every
 * write or removal of a shared entry is announced on a pub/sub channel, and every other
 * instance drops its hot copy, so its next read comes from Redis. Without it, a bustCache or
 * an admin invalidation on one instance would leave the old value in the others' hot tiers.
 *
 * Delivery is best effort (pub/sub). While Redis is down nobody can change the shared entries
 * (a failed cold write announces nothing), so the hot copies an instance keeps through an outage
 * stay right, and keep answering. Only a partition that cuts one instance's subscriber off while
 * others still write can leave a stale hot copy, until it is evicted or expires.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { KEY_PREFIX, type Subscription, subscribe } from '../redis/connection.js';

export interface HotTierSyncOptions {
  /** The shared command client; a duplicate of it subscribes. */
  readonly client: Redis;
  /** Prefix of the channel, as the store's keys. Default KEY_PREFIX. */
  readonly keyPrefix?: string;
  readonly onError?: (err: unknown) => void;
}

export interface HotTier {
  evictHot(key: string): void;
}

export class HotTierSync {
  readonly channel: string;
  readonly #client: Redis;
  readonly #sub: Subscription;
  readonly #instance = randomUUID();
  readonly #onError: (err: unknown) => void;
  #tier: HotTier | undefined;
  #subscribed: Promise<void>;
  #markSubscribed: () => void = () => {};

  constructor(options: HotTierSyncOptions) {
    this.#client = options.client;
    this.channel = `${options.keyPrefix ?? KEY_PREFIX}evict`;
    this.#onError = options.onError ?? (() => {});
    this.#subscribed = new Promise((resolve) => {
      this.#markSubscribed = resolve;
    });
    this.#sub = subscribe(this.#client, this.channel, {
      onSubscribed: () => this.#markSubscribed(),
      onError: this.#onError,
      onMessage: (message) => {
        const space = message.indexOf(' ');
        if (space < 0 || message.slice(0, space) === this.#instance) return;
        this.#tier?.evictHot(message.slice(space + 1));
      },
    });
  }

  /** The hot tier to evict from when another instance announces a change. */
  bind(tier: HotTier): void {
    this.#tier = tier;
  }

  /** Resolves once subscribed for the first time (tests, readiness). */
  whenSubscribed(): Promise<void> {
    return this.#subscribed;
  }

  /** Tell the other instances that key changed in the shared store. Fire and forget. */
  announce(key: string): void {
    if (this.#client.status !== 'ready') return;
    this.#client.publish(this.channel, `${this.#instance} ${key}`).catch(this.#onError);
  }

  async close(): Promise<void> {
    this.#tier = undefined;
    this.#sub.close();
  }
}
