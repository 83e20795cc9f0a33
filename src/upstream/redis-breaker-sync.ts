/**
 * Circuit-breaker state shared by every instance on one Redis (CACHE_STORE=redis), so that an
 * upstream one instance found broken is skipped by all, and one probe after the cooldown
 * decides for all (src/upstream/circuit-breaker.ts).
 *
 * - Transitions are announced on the pub/sub channel `{prefix}breaker` as
 *   `{instance} {id} open {remainingMs}` or `{instance} {id} closed`, and kept in the key
 *   `{prefix}breaker:{id}` (value "open", expiring with the cooldown) for instances that start
 *   or reconnect later: they read it once their subscriber is ready.
 * - Remaining time, not a deadline, travels: the instances' clocks never matter.
 * - The probe is claimed with `SET {prefix}breaker-probe:{id} NX PX lease`: one claimant wins
 *   until the lease ends; a transition deletes the claim.
 *
 * Redis unreachable: announcements are dropped and claims decided locally (each instance may
 * then probe once), as the budget falls back to a local bucket.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { KEY_PREFIX, type Subscription, subscribe } from '../redis/connection.js';
import type { BreakerChange, BreakerSync } from './circuit-breaker.js';

export interface RedisBreakerSyncOptions {
  /** The shared command client; a duplicate of it subscribes. */
  readonly client: Redis;
  readonly keyPrefix?: string;
  readonly onError?: (err: unknown) => void;
}

export class RedisBreakerSync implements BreakerSync {
  readonly channel: string;
  readonly #client: Redis;
  readonly #sub: Subscription;
  readonly #prefix: string;
  readonly #instance = randomUUID();
  readonly #onError: (err: unknown) => void;
  readonly #targets = new Map<string, (change: BreakerChange) => void>();

  constructor(options: RedisBreakerSyncOptions) {
    this.#client = options.client;
    this.#prefix = options.keyPrefix ?? KEY_PREFIX;
    this.channel = `${this.#prefix}breaker`;
    this.#onError = options.onError ?? (() => {});
    this.#sub = subscribe(this.#client, this.channel, {
      onSubscribed: () => void this.#catchUp(),
      onError: this.#onError,
      onMessage: (message) => this.#onMessage(message),
    });
  }

  /** Where the changes announced for upstream `id` go (the upstream's CircuitBreaker.apply). */
  bind(id: string, apply: (change: BreakerChange) => void): void {
    this.#targets.set(id, apply);
    if (this.#client.status === 'ready') void this.#read(id);
  }

  announce(id: string, change: BreakerChange): void {
    if (this.#client.status !== 'ready') return;
    const key = `${this.#prefix}breaker:${id}`;
    const probe = `${this.#prefix}breaker-probe:${id}`;
    const text = change.state === 'open' ? `open ${Math.max(1, Math.round(change.remainingMs))}` : 'closed';
    const multi = this.#client.multi();
    if (change.state === 'open') multi.set(key, 'open', 'PX', Math.max(1, Math.round(change.remainingMs)));
    else multi.del(key);
    multi.del(probe);
    multi.publish(this.channel, `${this.#instance} ${id} ${text}`);
    multi.exec().catch(this.#onError);
  }

  async claimProbe(id: string, leaseMs: number): Promise<boolean> {
    if (this.#client.status !== 'ready') return true;
    const reply = await this.#client.set(
      `${this.#prefix}breaker-probe:${id}`,
      this.#instance,
      'PX',
      leaseMs,
      'NX',
    );
    return reply === 'OK';
  }

  async close(): Promise<void> {
    this.#targets.clear();
    this.#sub.close();
  }

  #onMessage(message: string): void {
    const [instance, id, state, ms] = message.split(' ');
    if (instance === this.#instance || id === undefined) return;
    const apply = this.#targets.get(id);
    if (apply === undefined) return;
    if (state === 'closed') apply({ state: 'closed' });
    else if (state === 'open' && ms !== undefined && /^\d+$/.test(ms))
      apply({ state: 'open', remainingMs: Number(ms) });
  }

  /** After (re)subscribing: circuits opened while this instance was not listening. */
  async #catchUp(): Promise<void> {
    await Promise.all([...this.#targets.keys()].map((id) => this.#read(id)));
  }

  async #read(id: string): Promise<void> {
    try {
      const remaining = await this.#client.pttl(`${this.#prefix}breaker:${id}`);
      if (remaining > 0) this.#targets.get(id)?.({ state: 'open', remainingMs: remaining });
    } catch (err) {
      this.#onError(err);
    }
  }
}
