/**
 * Observed blocks announced through a real redis-server (docs/watch.md): an applied block's
 * touched contracts, parent and deploys reach the other instances as sent, and a message that
 * is not one (malformed fields, another instance's own) is ignored.
 */
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { type AppliedAnnouncement, RedisTipChannel } from '../../../src/chain/tip-channel.js';
import { startRedis } from '../../support/redis-server.js';

const server = await startRedis();
const clients: Redis[] = [];
afterAll(async () => {
  for (const c of clients) c.disconnect();
  await server?.stop();
});

const H = (n: number) => n.toString(16).padStart(64, '0');
const A = 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM';

describe.skipIf(server === undefined)('the observed-tips channel on Redis', () => {
  it('carries applied blocks to the other instances, and nothing malformed', async () => {
    const [c1, c2, raw] = [new Redis(server!.url), new Redis(server!.url), new Redis(server!.url)];
    clients.push(c1, c2, raw);
    const one = new RedisTipChannel({ client: c1, keyPrefix: 'tc:' });
    const two = new RedisTipChannel({ client: c2, keyPrefix: 'tc:' });
    await vi.waitFor(async () => {
      const [, n] = (await raw.pubsub('NUMSUB', 'tc:observer:tip')) as [string, number];
      expect(n).toBe(2);
    });
    const got: AppliedAnnouncement[] = [];
    const mine: AppliedAnnouncement[] = [];
    two.onApplied((b) => got.push(b));
    one.onApplied((b) => mine.push(b));
    const tips: unknown[] = [];
    two.onTip((t) => tips.push(t));

    // Malformed ones first: each is dropped.
    for (const bad of [
      { k: 'a', n: 'testnet', h: 5, b: H(5), p: 'zz', t: [], d: [] },
      { k: 'a', n: 'testnet', h: 5, b: H(5), p: H(4), t: ['not a contract'], d: [] },
      { k: 'a', n: 'testnet', h: 5, b: H(5), p: H(4), t: '*', d: 'x' },
    ])
      await raw.publish('tc:observer:tip', JSON.stringify({ i: 'someone', ...bad }));

    one.publishApplied({
      network: 'testnet',
      height: 6,
      indexBlockHash: H(6),
      parentIndexBlockHash: H(5),
      touched: { all: false, contracts: new Set([`${A}.demo-token`]) },
      deployed: [`${A}.new-one`],
    });
    one.publishApplied({
      network: 'testnet',
      height: 7,
      indexBlockHash: H(7),
      parentIndexBlockHash: H(6),
      touched: { all: true },
      deployed: [],
    });
    await vi.waitFor(() => expect(got).toHaveLength(2));
    expect(got[0]).toEqual({
      network: 'testnet',
      height: 6,
      indexBlockHash: H(6),
      parentIndexBlockHash: H(5),
      touched: { all: false, contracts: new Set([`${A}.demo-token`]) },
      deployed: [`${A}.new-one`],
    });
    expect(got[1]!.touched).toEqual({ all: true });
    // An applied block is not a tip announcement, and an instance does not hear itself.
    expect(tips).toEqual([]);
    expect(mine).toEqual([]);
    one.close();
    two.close();
  });
});
