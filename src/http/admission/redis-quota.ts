/**
 * Quotas shared by every instance on one Redis (docs/access-control.md): the token buckets of
 * src/http/admission/quota-store.ts kept in Redis and spent by one atomic Lua script, so that a fleet
 * behind a load balancer counts one quota per key and per client address, whichever instance
 * a request reaches. The script reads Redis's own clock (TIME), so instances' clocks never
 * matter; a bucket expires once it would be full again, so idle addresses cost nothing.
 *
 * Redis unreachable: the request is counted by this instance's memory buckets instead (a
 * quota that cannot be checked must neither refuse everybody nor let anybody through
 * unlimited); each instance then allows the full quota on its own until Redis is back.
 */
import type { Redis } from 'ioredis';
import { KEY_PREFIX } from '../../redis/connection.js';
import { LuaScript } from '../../redis/lua-script.js';
import {
  type Balance,
  type BucketSpend,
  type Judgement,
  MemoryQuota,
  type QuotaStore,
} from './quota-store.js';

/**
 * KEYS the buckets of one request. ARGV: spend ('1' or '0'), then capacity, cost and minimum
 * of each. Returns {first short bucket (0-based) or -1, ms until every short one holds its
 * minimum, then each bucket's tokens as text} (see QuotaStore.judge): all of a key's quotas in
 * one round trip, decided atomically. A single spend is a judgement of one bucket.
 */
const JUDGE = new LuaScript(`
local spend = ARGV[1] == '1'
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local tokens = {}
local short = -1
local wait = 0
for i = 1, #KEYS do
  local capacity = tonumber(ARGV[3 * i - 1])
  local minimum = tonumber(ARGV[3 * i + 1])
  local state = redis.call('HMGET', KEYS[i], 't', 'ts')
  local t = tonumber(state[1])
  local ts = tonumber(state[2])
  if t == nil or ts == nil then
    t = capacity
  elseif now > ts then
    t = math.min(capacity, t + (now - ts) * capacity / 60000)
  end
  tokens[i] = t
  if t < minimum then
    if short < 0 then short = i - 1 end
    wait = math.max(wait, math.ceil((minimum - t) * 60000 / capacity))
  end
end
if short < 0 and spend then
  for i = 1, #KEYS do
    local capacity = tonumber(ARGV[3 * i - 1])
    local cost = tonumber(ARGV[3 * i])
    if cost ~= 0 then
      local t = tokens[i] - cost
      tokens[i] = t
      redis.call('HSET', KEYS[i], 't', string.format('%.17g', t), 'ts', now)
      redis.call('PEXPIRE', KEYS[i], math.ceil((capacity - t) * 60000 / capacity) + 1000)
    end
  end
end
local out = {short, wait}
for i = 1, #KEYS do out[i + 2] = string.format('%.17g', tokens[i]) end
return out
`);

export class RedisQuota implements QuotaStore {
  readonly #client: Redis;
  readonly #prefix: string;
  readonly #fallback = new MemoryQuota();

  constructor(client: Redis, keyPrefix = KEY_PREFIX) {
    this.#client = client;
    this.#prefix = `${keyPrefix}quota:`;
  }

  /** One request's token: a spend of 1 while one is left (the same script as every quota). */
  async take(id: string, capacity: number): Promise<number> {
    const b = await this.spend(id, capacity, 1, 1);
    return b.ok ? 0 : b.waitMs;
  }

  async judge(buckets: readonly BucketSpend[], spend: boolean): Promise<Judgement> {
    const keys = buckets.map((b) => this.#prefix + b.id);
    const args: (string | number)[] = [spend ? '1' : '0'];
    for (const b of buckets) args.push(b.capacity, b.cost, b.minimum ?? 1);
    try {
      const reply = (await JUDGE.run(this.#client, keys, args)) as (number | string)[];
      const tokens: number[] = new Array(buckets.length);
      for (let i = 0; i < buckets.length; i++) tokens[i] = Number(reply[i + 2]);
      return { short: Number(reply[0]), waitMs: Number(reply[1]), tokens };
    } catch {
      return this.#fallback.judge(buckets, spend);
    }
  }

  async spend(id: string, capacity: number, cost: number, minimum: number): Promise<Balance> {
    const j = await this.judge([{ id, capacity, cost, minimum }], true);
    return { ok: j.short < 0, tokens: j.tokens[0]!, waitMs: j.waitMs };
  }
}
