/**
 * RedisBudget against a real redis-server: the shared token bucket keeps TokenBucket's
 * semantics (capacity, even refill, FIFO, wait-then-RATE_LIMIT_EXCEEDED) across budget
 * instances, and falls back to a local bucket while Redis is unreachable.
 */
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RedisStore } from '../../../src/cache/stores/redis.js';
import { GatewayError } from '../../../src/errors.js';
import { type BudgetMode, RedisBudget } from '../../../src/upstream/budget/redis-budget.js';
import { type RedisServer, startRedis } from '../../support/redis-server.js';

const server = await startRedis();

/** Settle a promise into a comparable record. */
async function outcome(p: Promise<void>): Promise<'granted' | GatewayError> {
  try {
    await p;
    return 'granted';
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
}

describe.skipIf(server === undefined)('RedisBudget against a real redis-server', () => {
  const connections: RedisStore[] = [];
  const budgets: RedisBudget[] = [];
  let admin: Redis;
  let n = 0;

  /** A connection as the gateway makes it (fail fast while down, reconnect quickly here). */
  const connect = async (url = server!.url): Promise<RedisStore> => {
    const conn = new RedisStore({ url, retryBaseMs: 20, retryMaxMs: 100 });
    connections.push(conn);
    await conn.connect();
    return conn;
  };

  /** `count` budgets ("instances") sharing one bucket, each on its own connection. */
  const shared = async (
    count: number,
    options: { capacity: number; perMinute: number; queueTimeoutMs: number; url?: string },
  ) => {
    const network = `net${++n}`;
    const modes: BudgetMode[] = [];
    const out: RedisBudget[] = [];
    for (let i = 0; i < count; i++) {
      const conn = await connect(options.url);
      const budget = new RedisBudget({
        client: conn.redis,
        id: network,
        capacity: options.capacity,
        refillPerMinute: options.perMinute,
        queueTimeoutMs: options.queueTimeoutMs,
        keyPrefix: 'rb:',
        onModeChange: (mode) => modes.push(mode),
      });
      budgets.push(budget);
      out.push(budget);
    }
    return { budgets: out, modes, key: `rb:budget:${network}` };
  };

  beforeAll(async () => {
    admin = new Redis(server!.url, { lazyConnect: true });
    await admin.connect();
  });

  afterEach(async () => {
    for (const b of budgets.splice(0)) b.close();
    for (const c of connections.splice(0)) await c.close();
  });

  afterAll(async () => {
    admin.disconnect();
    await server!.stop();
  });

  it('grants `capacity` tokens at once, shared by every instance, then refuses with RATE_LIMIT_EXCEEDED', async () => {
    // 6 per minute: one token every 10 s, so nothing refills during the test.
    const {
      budgets: [a, b],
    } = await shared(2, { capacity: 3, perMinute: 6, queueTimeoutMs: 0 });
    expect(await outcome(a!.take())).toBe('granted');
    expect(await outcome(b!.take())).toBe('granted');
    expect(await outcome(a!.take())).toBe('granted');
    // Each instance alone would still have tokens left; together they have spent the bucket.
    for (const budget of [a!, b!]) {
      const refused = await outcome(budget.take());
      expect(refused).toBeInstanceOf(GatewayError);
      const err = refused as GatewayError;
      expect(err.code).toBe('RATE_LIMIT_EXCEEDED');
      expect(err.status).toBe(429);
      expect(err.details).toMatchObject({ retryAfter: 10, retryable: true });
      expect(err.retryAfter).toBe(10);
    }
    expect(a!.mode).toBe('redis');
  });

  it('keeps its state in Redis: a hash without expiry, below zero while tokens are reserved', async () => {
    const { budgets: pair, key } = await shared(1, { capacity: 1, perMinute: 600, queueTimeoutMs: 1000 });
    const budget = pair[0]!;
    await budget.take();
    const reserved = budget.take(); // due in ~100 ms
    await expect.poll(async () => Number((await admin.hget(key, 't')) ?? 0)).toBeLessThan(0);
    expect(await admin.pttl(key)).toBe(-1);
    await reserved;
  });

  it('refills evenly: a caller waits for the next token instead of failing', async () => {
    const {
      budgets: [a, b],
    } = await shared(2, { capacity: 2, perMinute: 600, queueTimeoutMs: 1000 }); // a token every 100 ms
    await a!.take();
    await b!.take();
    const started = performance.now();
    await b!.take();
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThanOrEqual(80);
    expect(waited).toBeLessThan(1000);
  });

  it('serves the callers of one instance first come, first served', async () => {
    const {
      budgets: [budget],
    } = await shared(1, { capacity: 1, perMinute: 1200, queueTimeoutMs: 5000 }); // a token every 50 ms
    const order: number[] = [];
    const times: number[] = [];
    const started = performance.now();
    await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        budget!.take().then(() => {
          order.push(i);
          times.push(performance.now() - started);
        }),
      ),
    );
    expect(order).toEqual([0, 1, 2, 3, 4, 5]);
    // One at once, then one per 50 ms: the last after about 250 ms.
    expect(times[5]!).toBeGreaterThanOrEqual(230);
  });

  it('queues across instances: a reservation made first on one instance is served before a later one elsewhere', async () => {
    const {
      budgets: [a, b],
    } = await shared(2, { capacity: 1, perMinute: 600, queueTimeoutMs: 5000 });
    await a!.take();
    const order: string[] = [];
    const first = a!.take().then(() => order.push('a'));
    await expect.poll(() => a!.queued()).toBe(1);
    // a's reservation reached Redis (its script call returned) before b asks.
    await expect.poll(async () => Number((await admin.hget(`rb:budget:net${n}`, 't')) ?? 0)).toBeLessThan(0);
    const second = b!.take().then(() => order.push('b'));
    await Promise.all([first, second]);
    expect(order).toEqual(['a', 'b']);
  });

  it('refuses at once a caller whose turn would come after UPSTREAM_QUEUE_TIMEOUT_MS, without taking its place', async () => {
    const {
      budgets: [a, b],
    } = await shared(2, { capacity: 1, perMinute: 600, queueTimeoutMs: 150 }); // a token every 100 ms
    await a!.take();
    const waiting = a!.take(); // its token comes in ~100 ms: within the timeout
    const started = performance.now();
    const refused = await outcome(b!.take()); // ~200 ms away: over the timeout
    expect(performance.now() - started).toBeLessThan(100);
    expect(refused).toBeInstanceOf(GatewayError);
    expect((refused as GatewayError).code).toBe('RATE_LIMIT_EXCEEDED');
    expect((refused as GatewayError).details).toMatchObject({ retryAfter: 1, queueTimeoutMs: 150 });
    expect(await outcome(waiting)).toBe('granted');
    // The refusal reserved nothing: the next token is free again one interval later.
    expect(await outcome(b!.take())).toBe('granted');
  });

  it('close() rejects waiters and later callers', async () => {
    const {
      budgets: [budget],
    } = await shared(1, { capacity: 1, perMinute: 60, queueTimeoutMs: 5000 });
    await budget!.take();
    const waiting = budget!.take();
    await expect.poll(() => budget!.queued()).toBe(1);
    budget!.close();
    const err = (await outcome(waiting)) as GatewayError;
    expect(err.code).toBe('SERVICE_UNAVAILABLE');
    expect(err.status).toBe(503);
    expect(err.details).toMatchObject({ reason: 'closed' });
    expect(((await outcome(budget!.take())) as GatewayError).details).toMatchObject({ reason: 'closed' });
  });

  it('keeps each upstream’s budget under a key of its own', async () => {
    const conn = await connect();
    const shape = {
      client: conn.redis,
      keyPrefix: `nets${++n}:`,
      capacity: 5,
      refillPerMinute: 5,
      queueTimeoutMs: 0,
    };
    const made = {
      mainnet: new RedisBudget({ ...shape, id: 'mainnet' }),
      testnet: new RedisBudget({ ...shape, id: 'testnet' }),
    };
    budgets.push(made.mainnet, made.testnet);
    expect(made.mainnet.key).toBe(`nets${n}:budget:mainnet`);
    expect(made.testnet.key).toBe(`nets${n}:budget:testnet`);
    for (let i = 0; i < 5; i++) await made.mainnet.take();
    expect(((await outcome(made.mainnet.take())) as GatewayError).code).toBe('RATE_LIMIT_EXCEEDED');
    expect(await outcome(made.testnet.take())).toBe('granted');
  });

  describe('when Redis goes away', () => {
    let own: RedisServer;

    beforeAll(async () => {
      own = (await startRedis())!;
    });

    afterAll(async () => {
      await own.stop();
    });

    it('falls back to a local bucket (reported once), and goes back to the shared one when Redis returns', async () => {
      const {
        budgets: [budget],
        modes,
      } = await shared(1, { capacity: 2, perMinute: 6, queueTimeoutMs: 0, url: own.url });
      const conn = connections.at(-1)!;
      expect(await outcome(budget!.take())).toBe('granted'); // shared bucket: 1 left there

      const down = new Promise<void>((resolve) => conn.redis.once('close', () => resolve()));
      await own.kill();
      await down;
      // The local fallback has its own full bucket: 2 tokens, then refusals; no Redis error leaks.
      expect(await outcome(budget!.take())).toBe('granted');
      expect(await outcome(budget!.take())).toBe('granted');
      expect(((await outcome(budget!.take())) as GatewayError).code).toBe('RATE_LIMIT_EXCEEDED');
      expect(budget!.mode).toBe('local');
      expect(modes).toEqual(['local']);

      const back = new Promise<void>((resolve) => conn.redis.once('ready', () => resolve()));
      await own.restart();
      await back;
      // The restarted Redis lost the bucket (no persistence here): a full shared bucket again.
      expect(await outcome(budget!.take())).toBe('granted');
      expect(budget!.mode).toBe('redis');
      expect(modes).toEqual(['local', 'redis']);
    });

    it('serves from the local bucket when Redis was never reachable', async () => {
      const conn = new RedisStore({ url: 'redis://127.0.0.1:1', retryBaseMs: 1000, retryMaxMs: 1000 });
      connections.push(conn);
      await expect(conn.connect()).rejects.toThrow();
      const modes: BudgetMode[] = [];
      const budget = new RedisBudget({
        client: conn.redis,
        id: 'nowhere',
        capacity: 1,
        refillPerMinute: 6,
        queueTimeoutMs: 0,
        onModeChange: (mode) => modes.push(mode),
      });
      budgets.push(budget);
      expect(await outcome(budget.take())).toBe('granted');
      expect(((await outcome(budget.take())) as GatewayError).code).toBe('RATE_LIMIT_EXCEEDED');
      expect(modes).toEqual(['local']);
    });
  });
});
