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
 * The channel, the kept key and the catch-up are AnnouncedState's (redis-announced.ts).
 *
 * Redis unreachable: announcements are dropped and claims decided locally (each instance may
 * then probe once), as the budget falls back to a local bucket.
 */
import type { Redis } from 'ioredis';
import type { BreakerChange, BreakerSync } from './circuit-breaker.js';
import { AnnouncedState } from './redis-announced.js';

export interface RedisBreakerSyncOptions {
  /** The shared command client; a duplicate of it subscribes. */
  readonly client: Redis;
  readonly keyPrefix?: string;
  readonly onError?: (err: unknown) => void;
}

export class RedisBreakerSync implements BreakerSync {
  readonly #shared: AnnouncedState<BreakerChange>;

  constructor(options: RedisBreakerSyncOptions) {
    this.#shared = new AnnouncedState<BreakerChange>({
      client: options.client,
      keyPrefix: options.keyPrefix,
      kind: 'breaker',
      parse: ([state, ms]) =>
        state === 'closed'
          ? { state: 'closed' }
          : state === 'open' && ms !== undefined && /^\d+$/.test(ms)
            ? { state: 'open', remainingMs: Number(ms) }
            : undefined,
      kept: (remainingMs) => ({ state: 'open', remainingMs }),
      onError: options.onError,
    });
  }

  get channel(): string {
    return this.#shared.channel;
  }

  /** Where the changes announced for upstream `id` go (the upstream's CircuitBreaker.apply). */
  bind(id: string, apply: (change: BreakerChange) => void): void {
    this.#shared.bind(id, apply);
  }

  announce(id: string, change: BreakerChange): void {
    const { client, prefix } = this.#shared;
    if (client.status !== 'ready') return;
    const key = this.#shared.keyOf(id);
    const probe = `${prefix}breaker-probe:${id}`;
    const text = change.state === 'open' ? `open ${Math.max(1, Math.round(change.remainingMs))}` : 'closed';
    const multi = client.multi();
    if (change.state === 'open') multi.set(key, 'open', 'PX', Math.max(1, Math.round(change.remainingMs)));
    else multi.del(key);
    multi.del(probe);
    multi.publish(this.#shared.channel, this.#shared.message(id, text));
    multi.exec().catch(this.#shared.onError);
  }

  async claimProbe(id: string, leaseMs: number): Promise<boolean> {
    const { client, prefix, instance } = this.#shared;
    if (client.status !== 'ready') return true;
    const reply = await client.set(`${prefix}breaker-probe:${id}`, instance, 'PX', leaseMs, 'NX');
    return reply === 'OK';
  }

  async close(): Promise<void> {
    this.#shared.close();
  }
}
