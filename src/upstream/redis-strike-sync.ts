/**
 * Strikes and sit-outs shared by every instance on one Redis (docs/consensus.md), as the circuit
 * breaker's state is (redis-breaker-sync.ts): a liar found out by three instances' votes sits
 * out of all of them.
 *
 * - Each strike is one member of the sorted set `{prefix}strikes:{id}`, scored by Redis's own
 *   clock (TIME: the instances' clocks never matter); members older than the window are dropped
 *   and the rest counted, all in one script. The strike that reaches the limit deletes the set,
 *   sets `{prefix}sitout:{id}` for the sit-out (PX) and announces `{instance} {id} {remainingMs}`
 *   on `{prefix}sitout`.
 * - An instance that starts or reconnects later reads the key's remaining time.
 * - Redis unreachable: the strike is counted locally (Strikes falls back).
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { AnnouncedState } from './redis-announced.js';
import type { StrikeSync } from './strikes.js';

/**
 * KEYS: strikes set, sit-out key. ARGV: limit, window ms, sit-out ms, member, channel, message
 * head. Returns the sit-out ms it started, or -1.
 */
const STRIKE_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if redis.call('PTTL', KEYS[2]) > 0 then return -1 end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
redis.call('ZADD', KEYS[1], now, ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  redis.call('DEL', KEYS[1])
  redis.call('SET', KEYS[2], '1', 'PX', ARGV[3])
  redis.call('PUBLISH', ARGV[5], ARGV[6] .. ' ' .. ARGV[3])
  return tonumber(ARGV[3])
end
return -1
`;

export interface RedisStrikeSyncOptions {
  readonly client: Redis;
  readonly keyPrefix?: string;
  readonly onError?: (err: unknown) => void;
}

export class RedisStrikeSync implements StrikeSync {
  /** The sit-outs, announced as their remaining ms and kept in `{prefix}sitout:{id}`. */
  readonly #shared: AnnouncedState<number>;

  constructor(options: RedisStrikeSyncOptions) {
    this.#shared = new AnnouncedState<number>({
      client: options.client,
      keyPrefix: options.keyPrefix,
      kind: 'sitout',
      parse: ([ms]) => (ms !== undefined && /^\d+$/.test(ms) ? Number(ms) : undefined),
      kept: (remainingMs) => remainingMs,
      onError: options.onError,
    });
  }

  get channel(): string {
    return this.#shared.channel;
  }

  bind(id: string, apply: (remainingMs: number) => void): void {
    this.#shared.bind(id, apply);
  }

  async strike(id: string, limit: number, windowMs: number, sitOutMs: number): Promise<number | undefined> {
    const { client, prefix, instance, channel } = this.#shared;
    if (client.status !== 'ready') throw new Error('redis is not connected');
    const started = await client.eval(
      STRIKE_SCRIPT,
      2,
      `${prefix}strikes:${id}`,
      this.#shared.keyOf(id),
      limit,
      windowMs,
      sitOutMs,
      `${instance}:${randomUUID()}`,
      channel,
      `${instance} ${id}`,
    );
    return typeof started === 'number' && started > 0 ? started : undefined;
  }

  async close(): Promise<void> {
    this.#shared.close();
  }
}
