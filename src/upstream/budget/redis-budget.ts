/**
 * One upstream's budget shared by every instance on the same Redis (CACHE_STORE=redis): the
 * token bucket of src/upstream/budget/local.ts, kept in Redis and updated by one atomic Lua script, with
 * the same semantics as the local TokenBucket:
 *
 * - capacity UPSTREAM_RATE_LIMIT_PER_MINUTE, refilled evenly (one token every 60000/rate ms);
 * - callers are served first come, first served: a caller that cannot have a token now
 *   reserves the next free one (the bucket's level goes below zero, each reservation one
 *   token further in the future), so nobody arriving later, on any instance, overtakes it;
 * - a caller whose reserved token would come later than UPSTREAM_QUEUE_TIMEOUT_MS reserves
 *   nothing and is refused at once with RATE_LIMIT_EXCEEDED (429, details.retryAfter,
 *   Retry-After), exactly like TokenBucket.
 *
 * The script reads the clock with Redis TIME, so the instances' clocks never matter. It
 * answers "granted now", "granted in N ms" (the caller waits N ms locally; the token is
 * already its own) or "refused: N ms away". In this process the grants are handed out in
 * the order take() was called (a local queue in front of the script: a caller is resolved
 * only after every earlier caller was), and the script calls themselves go out in that order
 * on one connection, so Redis serves them in that order too.
 *
 * Redis unreachable (not connected, or the script call fails): the caller is served by a
 * local TokenBucket with the same settings instead, and the switch is reported once per
 * transition (`onModeChange`), in both directions. While Redis is down each instance
 * therefore has its own full budget: N instances may spend up to N times the budget until it
 * is back. Nothing is retried against Redis for a caller already handed to the fallback.
 *
 * The bucket's key is `{prefix}budget:{upstream id}`. A network's default upstream has the
 * network's name as its id, so a single-upstream deployment keeps the keys it always had
 * (`cc:budget:mainnet`, `cc:budget:testnet`) and instances of older and newer versions share
 * one bucket during a rolling upgrade. The key has no expiry, so a volatile-* eviction policy
 * never evicts it; it is one small hash per upstream.
 */
import type { Redis } from 'ioredis';
import type { GatewayError } from '../../errors.js';
import { KEY_PREFIX } from '../../redis/connection.js';
import { LuaScript } from '../../redis/lua-script.js';
import { TokenBucket } from './local.js';
import {
  type Budget,
  type BudgetSettings,
  budgetClosedError,
  budgetExhaustedError,
  checkBudgetSettings,
} from './upstream-budget.js';

/**
 * KEYS[1] the bucket: a hash {t: tokens (below zero when future tokens are reserved),
 * ts: Redis time in ms of the last update}. ARGV: capacity, ms per token, longest wait (ms).
 * Returns {1 granted | 0 refused, wait ms, tokens left}.
 */
const TAKE = new LuaScript(`
local capacity = tonumber(ARGV[1])
local interval = tonumber(ARGV[2])
local max_wait = tonumber(ARGV[3])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + tonumber(time[2]) / 1000
local state = redis.call('HMGET', KEYS[1], 't', 'ts')
local tokens = tonumber(state[1])
local ts = tonumber(state[2])
if tokens == nil or ts == nil then
  tokens = capacity
  ts = now
elseif now > ts then
  tokens = tokens + (now - ts) / interval
  ts = now
end
if tokens > capacity then tokens = capacity end
local after = tokens - 1
local wait = 0
if after < -1e-9 then wait = math.ceil(-after * interval - 1e-9) end
if wait > max_wait then
  return {0, wait, string.format('%.6f', tokens)}
end
redis.call('HSET', KEYS[1], 't', string.format('%.17g', after), 'ts', string.format('%.17g', ts))
return {1, wait, string.format('%.6f', after)}
`);

export type BudgetMode = 'redis' | 'local';

export interface RedisBudgetOptions extends BudgetSettings {
  /** The shared client (RedisStore.redis); commands must fail fast while disconnected. */
  readonly client: Redis;
  /** The upstream's id (credential-free): part of the key, and shown in error messages. */
  readonly id: string;
  /** Prefix of the bucket's key. Default "cc:". */
  readonly keyPrefix?: string;
  /** Serves callers while Redis is unreachable. Default: a TokenBucket with the same settings. */
  readonly fallback?: Budget;
  /** Called once per switch between the shared bucket and the local fallback. */
  readonly onModeChange?: (mode: BudgetMode, err?: unknown) => void;
}

interface Waiter {
  resolve: () => void;
  reject: (err: Error) => void;
  /** The token is this caller's and its time has come; it waits only for earlier callers. */
  ready: boolean;
  settled: boolean;
  /** The longest this caller accepts to wait (a fallback take gets the same bound). */
  maxWaitMs: number;
  timer: NodeJS.Timeout | undefined;
}

export class RedisBudget implements Budget {
  readonly key: string;
  readonly #client: Redis;
  readonly #label: string;
  readonly #capacity: number;
  readonly #intervalMs: number;
  readonly #queueTimeoutMs: number;
  readonly #fallback: Budget;
  readonly #onModeChange: (mode: BudgetMode, err?: unknown) => void;
  #queue: Waiter[] = [];
  #mode: BudgetMode = 'redis';
  #lastTokens: number;
  /** When #lastTokens was learned (performance.now()). */
  #lastAt = performance.now();
  #closed = false;

  constructor(options: RedisBudgetOptions) {
    checkBudgetSettings('RedisBudget', options);
    this.#client = options.client;
    this.#label = options.id;
    this.key = `${options.keyPrefix ?? KEY_PREFIX}budget:${options.id}`;
    this.#capacity = options.capacity;
    this.#intervalMs = 60_000 / options.refillPerMinute;
    this.#queueTimeoutMs = options.queueTimeoutMs;
    this.#lastTokens = options.capacity;
    this.#fallback =
      options.fallback ??
      new TokenBucket({
        capacity: options.capacity,
        refillPerMinute: options.refillPerMinute,
        queueTimeoutMs: options.queueTimeoutMs,
        label: options.id,
      });
    this.#onModeChange = options.onModeChange ?? (() => {});
  }

  /** Where tokens currently come from: the shared bucket, or the local fallback. */
  get mode(): BudgetMode {
    return this.#mode;
  }

  take(maxWaitMs: number = this.#queueTimeoutMs): Promise<void> {
    if (this.#closed) return Promise.reject(this.#closedError());
    if (this.#client.status !== 'ready') {
      this.#switch('local', new Error(`redis is not connected (${this.#client.status})`));
      return this.#fallback.take(maxWaitMs);
    }
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        reject,
        ready: false,
        settled: false,
        timer: undefined,
        maxWaitMs,
      };
      this.#queue.push(waiter);
      TAKE.run(this.#client, [this.key], [this.#capacity, this.#intervalMs, maxWaitMs]).then(
        (reply) => this.#onReply(waiter, reply),
        (err: unknown) => this.#onFailure(waiter, err),
      );
    });
  }

  available(): number {
    if (this.#closed) return 0;
    if (this.#mode === 'local') return this.#fallback.available();
    if (this.#queue.length > 0) return 0;
    return Math.max(0, Math.floor(this.#lastTokens + 1e-9));
  }

  queued(): number {
    return this.#queue.length + this.#fallback.queued();
  }

  waitEstimateMs(tokens: number): number {
    if (this.#closed) return Number.POSITIVE_INFINITY;
    if (this.#mode === 'local') return this.#fallback.waitEstimateMs?.(tokens) ?? 0;
    // The level after the last script call, refilled since then at the known rate; other
    // instances may have taken some meanwhile, so this is a guess the script corrects.
    const level = Math.min(
      this.#capacity,
      this.#lastTokens + (performance.now() - this.#lastAt) / this.#intervalMs,
    );
    const deficit = this.#queue.length + tokens - level;
    return Math.max(0, Math.ceil(deficit * this.#intervalMs - 1e-9));
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    const queue = this.#queue;
    this.#queue = [];
    for (const w of queue) {
      if (w.timer !== undefined) clearTimeout(w.timer);
      this.#settle(w, this.#closedError());
    }
    this.#fallback.close();
  }

  #onReply(waiter: Waiter, reply: unknown): void {
    if (waiter.settled) return;
    const parsed = parseReply(reply);
    if (parsed === undefined) {
      this.#onFailure(waiter, new Error(`unexpected reply from the budget script: ${JSON.stringify(reply)}`));
      return;
    }
    this.#switch('redis');
    this.#lastTokens = parsed.tokens;
    this.#lastAt = performance.now();
    if (!parsed.granted) {
      this.#remove(waiter);
      this.#settle(waiter, this.#rateLimited(parsed.waitMs));
      this.#drain();
      return;
    }
    if (parsed.waitMs <= 0) {
      waiter.ready = true;
      this.#drain();
      return;
    }
    waiter.timer = setTimeout(() => {
      waiter.timer = undefined;
      waiter.ready = true;
      this.#drain();
    }, parsed.waitMs);
    waiter.timer.unref();
  }

  /** Redis failed this caller: hand it to the local bucket, keeping its place for nobody. */
  #onFailure(waiter: Waiter, err: unknown): void {
    if (waiter.settled) return;
    this.#remove(waiter);
    waiter.settled = true;
    if (this.#closed) {
      waiter.reject(this.#closedError());
      return;
    }
    this.#switch('local', err);
    this.#fallback.take(waiter.maxWaitMs).then(waiter.resolve, waiter.reject);
    this.#drain();
  }

  /** Resolve the head of the queue while its token is due. */
  #drain(): void {
    while (this.#queue.length > 0 && this.#queue[0]!.ready) this.#settle(this.#queue.shift()!);
  }

  #remove(waiter: Waiter): void {
    const i = this.#queue.indexOf(waiter);
    if (i >= 0) this.#queue.splice(i, 1);
  }

  #settle(waiter: Waiter, err?: Error): void {
    if (waiter.settled) return;
    waiter.settled = true;
    if (err === undefined) waiter.resolve();
    else waiter.reject(err);
  }

  #switch(mode: BudgetMode, err?: unknown): void {
    if (this.#mode === mode || this.#closed) return;
    this.#mode = mode;
    this.#onModeChange(mode, err);
  }

  #rateLimited(waitMs: number): GatewayError {
    return budgetExhaustedError(this.#label, this.#queueTimeoutMs, waitMs);
  }

  #closedError(): GatewayError {
    return budgetClosedError(this.#label);
  }
}

function parseReply(reply: unknown): { granted: boolean; waitMs: number; tokens: number } | undefined {
  if (!Array.isArray(reply) || reply.length !== 3) return undefined;
  const [granted, waitMs, tokens] = reply as unknown[];
  if (typeof granted !== 'number' || typeof waitMs !== 'number') return undefined;
  const t = Number(tokens);
  if (!Number.isFinite(t)) return undefined;
  return { granted: granted === 1, waitMs, tokens: t };
}
