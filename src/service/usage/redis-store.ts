/**
 * Usage rows in Redis (CACHE_STORE=redis), shared by the fleet: every instance adds its
 * figures to the same rows with HINCRBY, so a row is the sum over all instances. Keys under
 * keyPrefix (default "cc:"), none with an expiry (retention deletes them, see prune):
 *
 *   {p}usage:{day}            hash, one per UTC day: a field per figure of a row,
 *                             `<figure>\0<JSON [key, route, function, outcome]>` (figure one of
 *                             requests, units, upstreamRequests, bytesSent; key null when
 *                             anonymous) -> the integer sum. A figure still 0 may be absent
 *   {p}usage-days             set of the days that have a hash (query and prune read it, never
 *                             KEYS or SCAN)
 *   {p}usage-month:{YYYY-MM}  hash: JSON key (`null` or `"name"`) -> units of that month, for
 *                             quotas (one HMGET, not a month of rows)
 *   {p}usage-months           set of the months that have one
 *
 *   {p}usage-batch:{id}       a flush applied, kept a day (BATCH_TTL_S): its repeat is skipped
 *
 * One flush is one Lua script (ADD): atomic, one command however many rows (a MULTI
 * of thousands of HINCRBY costs the client a command and a reply each). A flush whose call
 * fails with the connection (a timeout) may have been applied nonetheless; the recorder sends
 * the same batch again under the same id, and the script applies an id once, so such an
 * outage counts nothing twice.
 *
 * Give it a command connection (the cache store's client, see RedisStore.redis); it never
 * closes it.
 */
import type { Redis } from 'ioredis';
import { KEY_PREFIX } from '../../redis/connection.js';
import { LuaScript } from '../../redis/lua-script.js';
import {
  checkQuery,
  matches,
  USAGE_FIGURES,
  USAGE_OUTCOMES,
  type UsageFigure,
  type UsageOutcome,
  type UsageQuery,
  type UsageResult,
  type UsageRow,
  type UsageStore,
  UsageTally,
  utcMonth,
  zeroFigures,
} from './usage.js';

/** How long an applied batch id is remembered: far longer than any retry of it. */
const BATCH_TTL_S = 86_400;

/**
 * One flush, atomically. KEYS[1] the days set, KEYS[2] the months set, KEYS[3] the batch's
 * marker, then the hashes. ARGV: '1' when the batch has an id (then its marker's TTL, seconds;
 * else '0' and an empty slot), the number of days, the days; the number of months, the months;
 * then triples (index in KEYS of a hash, field, increment). Returns 0 when the batch was
 * applied before (nothing is added again), else 1.
 */
const ADD = new LuaScript(`
if ARGV[1] == '1' and not redis.call('SET', KEYS[3], '1', 'NX', 'EX', ARGV[2]) then
  return 0
end
local i = 3
local n = tonumber(ARGV[i])
i = i + 1
for _ = 1, n do
  redis.call('SADD', KEYS[1], ARGV[i])
  i = i + 1
end
n = tonumber(ARGV[i])
i = i + 1
for _ = 1, n do
  redis.call('SADD', KEYS[2], ARGV[i])
  i = i + 1
end
while i <= #ARGV do
  redis.call('HINCRBY', KEYS[tonumber(ARGV[i])], ARGV[i + 1], ARGV[i + 2])
  i = i + 3
end
return 1
`);

/** Throw the first error of a MULTI/pipeline result; return the replies. */
function replies(result: [Error | null, unknown][] | null): unknown[] {
  if (result === null) throw new Error('redis transaction aborted');
  return result.map(([err, reply]) => {
    if (err) throw err;
    return reply;
  });
}

type Identity = [key: string | null, route: string, fn: string, outcome: UsageOutcome];

function parseIdentity(json: string): Identity | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed) || parsed.length !== 4) return undefined;
  const [key, route, fn, outcome] = parsed as unknown[];
  if (!(key === null || typeof key === 'string') || typeof route !== 'string' || typeof fn !== 'string')
    return undefined;
  if (!(USAGE_OUTCOMES as readonly unknown[]).includes(outcome)) return undefined;
  return [key, route, fn, outcome as UsageOutcome];
}

export class RedisUsageStore implements UsageStore {
  readonly kind = 'redis';
  readonly #client: Redis;
  readonly #prefix: string;

  constructor(client: Redis, keyPrefix = KEY_PREFIX) {
    this.#client = client;
    this.#prefix = keyPrefix;
  }

  async add(rows: readonly UsageRow[], batchId?: string): Promise<void> {
    if (rows.length === 0) return;
    const keys = [this.#daysKey(), this.#monthsKey(), `${this.#prefix}usage-batch:${batchId ?? ''}`];
    const slots = new Map<string, number>();
    /** The KEYS index (1-based, as Lua counts) of a hash, added on first use. */
    const slot = (hash: string): number => {
      let at = slots.get(hash);
      if (at === undefined) {
        keys.push(hash);
        at = keys.length;
        slots.set(hash, at);
      }
      return at;
    };
    const days = new Set<string>();
    const months = new Map<string, Map<string, number>>();
    const increments: (string | number)[] = [];
    for (const r of rows) {
      const hash = slot(this.#dayKey(r.day));
      const identity = JSON.stringify([r.key, r.route, r.function, r.outcome]);
      for (const figure of USAGE_FIGURES) {
        // requests always: a row recorded with nothing else still exists, as in the other stores.
        if (r[figure] !== 0 || figure === 'requests')
          increments.push(hash, `${figure}\u0000${identity}`, r[figure]);
      }
      days.add(r.day);
      const month = utcMonth(r.day);
      let units = months.get(month);
      if (units === undefined) {
        units = new Map();
        months.set(month, units);
      }
      const field = JSON.stringify(r.key);
      units.set(field, (units.get(field) ?? 0) + r.units);
    }
    for (const [month, units] of months) {
      const hash = slot(this.#monthKey(month));
      for (const [field, n] of units) if (n !== 0) increments.push(hash, field, n);
    }
    const batch = batchId === undefined ? ['0', ''] : ['1', BATCH_TTL_S];
    await ADD.run(this.#client, keys, [
      ...batch,
      days.size,
      ...days,
      months.size,
      ...months.keys(),
      ...increments,
    ]);
  }

  async query(query: UsageQuery): Promise<UsageResult> {
    checkQuery(query);
    const range: UsageQuery = { from: query.from, to: query.to, groupBy: [] };
    const days = (await this.#client.smembers(this.#daysKey())).filter((d) => matches(range, null, d));
    const tally = new UsageTally(query.groupBy);
    if (days.length === 0) return tally.result();
    const read = this.#client.pipeline();
    for (const day of days) read.hgetall(this.#dayKey(day));
    const hashes = replies(await read.exec()) as Record<string, string>[];
    days.forEach((day, i) => {
      const rows = new Map<string, { identity: Identity } & Record<UsageFigure, number>>();
      for (const [field, value] of Object.entries(hashes[i]!)) {
        const at = field.indexOf('\u0000');
        const figure = field.slice(0, at) as UsageFigure;
        if (at < 0 || !USAGE_FIGURES.includes(figure)) continue;
        const json = field.slice(at + 1);
        let row = rows.get(json);
        if (row === undefined) {
          const identity = parseIdentity(json);
          // Not ours (a field written by hand): skipped rather than failing every query.
          if (identity === undefined) continue;
          row = { identity, ...zeroFigures() };
          rows.set(json, row);
        }
        row[figure] += Number(value);
      }
      for (const { identity, ...figures } of rows.values()) {
        const [key, route, fn, outcome] = identity;
        if (matches(query, key, day)) tally.add({ key, day, route, function: fn, outcome, ...figures });
      }
    });
    return tally.result();
  }

  async prune(oldestKeptDay: string): Promise<void> {
    const oldestMonth = utcMonth(oldestKeptDay);
    const [days, months] = replies(
      await this.#client.pipeline().smembers(this.#daysKey()).smembers(this.#monthsKey()).exec(),
    ) as [string[], string[]];
    const oldDays = days.filter((d) => d < oldestKeptDay);
    const oldMonths = months.filter((m) => m < oldestMonth);
    if (oldDays.length === 0 && oldMonths.length === 0) return;
    const tx = this.#client.multi();
    for (const day of oldDays) tx.del(this.#dayKey(day));
    if (oldDays.length > 0) tx.srem(this.#daysKey(), ...oldDays);
    for (const month of oldMonths) tx.del(this.#monthKey(month));
    if (oldMonths.length > 0) tx.srem(this.#monthsKey(), ...oldMonths);
    replies(await tx.exec());
  }

  async monthUnits(keys: readonly (string | null)[], month: string): Promise<number[]> {
    if (keys.length === 0) return [];
    const values = await this.#client.hmget(this.#monthKey(month), ...keys.map((k) => JSON.stringify(k)));
    return values.map((v) => (v === null ? 0 : Number(v)));
  }

  /** The client is the caller's: nothing to release. */
  async close(): Promise<void> {}

  #dayKey(day: string): string {
    return `${this.#prefix}usage:${day}`;
  }

  #daysKey(): string {
    return `${this.#prefix}usage-days`;
  }

  #monthKey(month: string): string {
    return `${this.#prefix}usage-month:${month}`;
  }

  #monthsKey(): string {
    return `${this.#prefix}usage-months`;
  }
}
