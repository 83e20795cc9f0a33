/**
 * Subscriptions in Redis (docs/watch.md), for a fleet: a stream reconnects to any instance,
 * a deletion on one ends the streams on all (a message on `{prefix}watch:deleted`), and the
 * stream limits are counted once for the fleet.
 *
 * - `{prefix}watch:sub:{id}`: the subscription's JSON, with an expiry: WATCH_IDLE_TTL_S after
 *   its creation or its last stream's close; while a stream is open, a longer one renewed by
 *   its instance, so that an instance that dies with streams open lets it expire all the same.
 * - `{prefix}watch:streams:{owner}`: a sorted set of the owner's open streams scored by the end
 *   of their lease (Redis's own clock, so instances' clocks never matter); a crashed
 *   instance's streams stop counting when their leases run out.
 */
import type { Redis } from 'ioredis';
import { KEY_PREFIX, type Subscription, subscribe } from '../../redis/connection.js';
import { LuaScript } from '../../redis/lua-script.js';
import type { SubscriptionRegistry } from './registry.js';
import type { StoredSubscription } from './types.js';

/** KEYS[1] the owner's streams. ARGV: stream id, max, lease ms. Returns 1 (counted) or 0 (at the limit). */
const OPEN_STREAM = new LuaScript(`
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]))
return 1
`);

/** KEYS: owners' stream sets; ARGV: lease ms, then one stream id per key. */
const RENEW_STREAMS = new LuaScript(`
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local lease = tonumber(ARGV[1])
for i, key in ipairs(KEYS) do
  redis.call('ZADD', key, 'XX', now + lease, ARGV[i + 1])
  redis.call('PEXPIRE', key, lease)
end
return 1
`);

export class RedisRegistry implements SubscriptionRegistry {
  readonly #client: Redis;
  readonly #prefix: string;
  readonly #channel: string;
  readonly #handlers: ((id: string) => void)[] = [];
  readonly #sub: Subscription;

  constructor(client: Redis, keyPrefix = KEY_PREFIX, onError: (err: unknown) => void = () => {}) {
    this.#client = client;
    this.#prefix = `${keyPrefix}watch:`;
    this.#channel = `${keyPrefix}watch:deleted`;
    this.#sub = subscribe(client, this.#channel, {
      onError,
      onMessage: (id) => {
        for (const handler of this.#handlers) handler(id);
      },
    });
  }

  async create(sub: StoredSubscription, ttlS: number): Promise<void> {
    await this.#client.set(this.#subKey(sub.id), JSON.stringify(sub), 'EX', ttlS);
  }

  async get(id: string): Promise<StoredSubscription | undefined> {
    const text = await this.#client.get(this.#subKey(id));
    if (text === null) return undefined;
    try {
      const sub = JSON.parse(text) as StoredSubscription;
      return sub.id === id && Array.isArray(sub.reads) ? sub : undefined;
    } catch {
      return undefined;
    }
  }

  async delete(id: string): Promise<boolean> {
    const removed = await this.#client.del(this.#subKey(id));
    if (removed === 0) return false;
    await this.#client.publish(this.#channel, id);
    return true;
  }

  async hold(id: string, holdS: number): Promise<void> {
    await this.#client.expire(this.#subKey(id), holdS);
  }

  async release(id: string, ttlS: number): Promise<void> {
    await this.#client.expire(this.#subKey(id), ttlS);
  }

  async openStream(owner: string, streamId: string, max: number, leaseMs: number): Promise<boolean> {
    const counted = await OPEN_STREAM.run(this.#client, [this.#streamsKey(owner)], [streamId, max, leaseMs]);
    return Number(counted) === 1;
  }

  async renewStreams(
    streams: readonly { owner: string; streamId: string }[],
    leaseMs: number,
  ): Promise<void> {
    if (streams.length === 0) return;
    await RENEW_STREAMS.run(
      this.#client,
      streams.map((s) => this.#streamsKey(s.owner)),
      [leaseMs, ...streams.map((s) => s.streamId)],
    );
  }

  async closeStream(owner: string, streamId: string): Promise<void> {
    await this.#client.zrem(this.#streamsKey(owner), streamId);
  }

  onDeleted(handler: (id: string) => void): void {
    this.#handlers.push(handler);
  }

  async close(): Promise<void> {
    this.#sub.close();
  }

  #subKey(id: string): string {
    return `${this.#prefix}sub:${id}`;
  }

  #streamsKey(owner: string): string {
    return `${this.#prefix}streams:${owner}`;
  }
}
