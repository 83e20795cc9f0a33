/**
 * Strikes shared by a fleet through a real redis-server (docs/consensus.md): two instances'
 * strikes add up to the limit, the one that did not give the last strike learns the sit-out
 * through pub/sub, and an instance started later reads the remaining sit-out from the key.
 */
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisStrikeSync } from '../../../src/upstream/redis-strike-sync.js';
import { Strikes } from '../../../src/upstream/strikes.js';
import { startRedis } from '../../support/redis-server.js';

const server = await startRedis();
const clients: Redis[] = [];
const syncs: RedisStrikeSync[] = [];
afterAll(async () => {
  for (const s of syncs) await s.close();
  for (const c of clients) c.disconnect();
  await server?.stop();
});

const SIT_OUT_MS = 60_000;
let prefixes = 0;

describe.skipIf(server === undefined)('RedisStrikeSync on a redis-server', () => {
  /** One gateway instance: its own connection, fleet sync and Strikes, watching `ids`. */
  const instance = (keyPrefix: string, ids: readonly string[]) => {
    const client = new Redis(server!.url);
    clients.push(client);
    const errors: unknown[] = [];
    const sync = new RedisStrikeSync({ client, keyPrefix, onError: (err) => errors.push(err) });
    syncs.push(sync);
    const sitOuts: [string, number][] = [];
    const syncErrors: unknown[] = [];
    const strikes = new Strikes({
      limit: 3,
      sitOutMs: SIT_OUT_MS,
      sync,
      onSitOut: (id, ms) => sitOuts.push([id, ms]),
      onSyncError: (err) => syncErrors.push(err),
    });
    for (const id of ids) strikes.watch(id);
    return { client, sync, strikes, sitOuts, errors, syncErrors };
  };

  it('adds up both instances’ strikes; the other one hears the sit-out; a later one reads it', async () => {
    const prefix = `ss${process.pid}-${++prefixes}:`;
    const raw = new Redis(server!.url);
    clients.push(raw);
    const one = instance(prefix, ['u', 'marker']);
    const two = instance(prefix, ['u', 'marker']);
    expect(one.sync.channel).toBe(`${prefix}sitout`);
    await expect
      .poll(async () => ((await raw.pubsub('NUMSUB', one.sync.channel)) as [string, number])[1])
      .toBe(2);
    await expect.poll(() => one.client.status).toBe('ready');
    await expect.poll(() => two.client.status).toBe('ready');

    // Two strikes from the first instance, one from the second: three in the fleet.
    await one.strikes.strike('u');
    await one.strikes.strike('u');
    expect(one.strikes.sittingOut('u')).toBe(false);
    expect(await raw.zcard(`${prefix}strikes:u`)).toBe(2);
    await two.strikes.strike('u');
    // The second gave the last strike: its script's answer started the sit-out there at once.
    expect(two.strikes.sittingOut('u')).toBe(true);
    expect(two.sitOuts).toEqual([['u', SIT_OUT_MS]]);
    // The set is gone, the key holds the sit-out.
    expect(await raw.exists(`${prefix}strikes:u`)).toBe(0);
    const pttl = await raw.pttl(`${prefix}sitout:u`);
    expect(pttl).toBeGreaterThan(SIT_OUT_MS - 10_000);
    expect(pttl).toBeLessThanOrEqual(SIT_OUT_MS);

    // The first learns it through pub/sub.
    await expect.poll(() => one.strikes.sittingOut('u')).toBe(true);
    expect(one.sitOuts).toEqual([['u', SIT_OUT_MS]]);
    // Neither saw another upstream sit out.
    expect(one.strikes.sittingOut('v')).toBe(false);
    expect(two.strikes.sittingOut('v')).toBe(false);

    // Malformed announcements are ignored; then a marker from "another instance", which the
    // second one's subscriber receives after its own announcement (one connection, in order).
    await raw.publish(one.sync.channel, 'someone marker abc');
    await raw.publish(one.sync.channel, 'someone marker');
    await raw.publish(one.sync.channel, 'someone marker 1000');
    await expect.poll(() => two.strikes.sittingOut('marker')).toBe(true);
    // The second did not hear its own announcement as news (it would have reported it again).
    expect(two.sitOuts).toEqual([
      ['u', SIT_OUT_MS],
      ['marker', 1_000],
    ]);

    // While the upstream sits out, a strike from elsewhere in the fleet starts nothing new.
    const three = instance(prefix, []);
    await expect.poll(() => three.client.status).toBe('ready');
    await three.strikes.strike('u');
    expect(three.strikes.sittingOut('u')).toBe(false);
    expect(await raw.exists(`${prefix}strikes:u`)).toBe(0);

    // An instance started later reads the remaining sit-out from the key.
    const later = instance(prefix, ['u', 'v']);
    await expect.poll(() => later.strikes.sittingOut('u')).toBe(true);
    expect(later.strikes.sittingOut('v')).toBe(false);
    const [id, remaining] = later.sitOuts[0]!;
    expect(id).toBe('u');
    expect(remaining).toBeGreaterThan(0);
    expect(remaining).toBeLessThanOrEqual(pttl);
    for (const i of [one, two, three, later]) {
      expect(i.errors).toEqual([]);
      expect(i.syncErrors).toEqual([]);
    }
  });

  it("strikes older than the window (by Redis's clock) no longer count", async () => {
    const prefix = `ss${process.pid}-${++prefixes}:`;
    const raw = new Redis(server!.url);
    clients.push(raw);
    const redisNow = async (): Promise<number> => {
      const [s, us] = await raw.time();
      return Number(s) * 1000 + Math.floor(Number(us) / 1000);
    };
    const one = instance(prefix, []);
    await expect.poll(() => one.client.status).toBe('ready');
    const windowMs = 2_000;
    const strike = () => one.sync.strike('w', 3, windowMs, SIT_OUT_MS);
    expect(await strike()).toBeUndefined();
    const first = await redisNow();
    // Each later strike once Redis's clock has moved (bounded polls, no fixed sleep).
    await expect.poll(redisNow).toBeGreaterThanOrEqual(first + 1_200);
    expect(await strike()).toBeUndefined();
    await expect.poll(redisNow).toBeGreaterThanOrEqual(first + windowMs + 50);
    // The first fell out of the window: two strikes, below the limit of three.
    expect(await strike()).toBeUndefined();
    expect(await raw.zcard(`${prefix}strikes:w`)).toBe(2);
    // A third within the window reaches it.
    expect(await strike()).toBe(SIT_OUT_MS);
  });

  it('a strike while Redis cannot be reached rejects, and Strikes counts it locally', async () => {
    const client = new Redis(server!.url, { lazyConnect: true });
    clients.push(client);
    const sync = new RedisStrikeSync({ client, keyPrefix: `ss${process.pid}-${++prefixes}:` });
    syncs.push(sync);
    await expect(sync.strike('u', 3, 10_000, SIT_OUT_MS)).rejects.toThrow(/not connected/);
    const syncErrors: unknown[] = [];
    const strikes = new Strikes({ limit: 2, sync, onSyncError: (err) => syncErrors.push(err) });
    await strikes.strike('u');
    await strikes.strike('u');
    expect(strikes.sittingOut('u')).toBe(true);
    expect(syncErrors).toHaveLength(2);
  });
});
