/**
 * a bustCache that arrives while an older load of the same key is in
 * flight starts a new load instead of joining the older one, and the older value is never
 * what stays cached: on one instance, and across two instances sharing one Redis.
 *
 * The fake node holds the first call-read at its gate; its answer is the balance as it was
 * when that request arrived (the node's state at the time of the older load).
 */
import { Cl } from '@stacks/transactions';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { hex, MAINNET_ADDR, SAMPLE_ABI } from '../../support/fixtures.js';
import { type RunningGateway, request, startGateway, testEnv } from '../../support/gateway.js';
import { startRedis } from '../../support/redis-server.js';

const redis = await startRedis();

let node: FakeNode;
let balance = 1n;
/** The balance each call-read saw when it arrived, by its sequence number. */
const seenAtArrival = new Map<number, bigint>();
let principals = 0;

beforeAll(async () => {
  node = await startFakeNode();
  node.setAbi(MAINNET_ADDR, 'demo', SAMPLE_ABI);
  node.setReadOnly(MAINNET_ADDR, 'demo', 'get-balance', (call) => ({
    okay: true,
    result: hex(Cl.ok(Cl.uint(seenAtArrival.get(call.request.seq) ?? balance))),
  }));
});

afterAll(async () => {
  await node?.close();
  await redis?.stop();
});

beforeEach(() => {
  node.clearFaults();
  node.release();
  balance = 1n;
});

const call = (gw: RunningGateway, who: string, cacheControl?: Record<string, unknown>) =>
  request(`${gw.url}/contract-calls/read-only/${MAINNET_ADDR}/demo/get-balance`, {
    body: { functionArgs: [{ type: 'principal', value: who }], ...(cacheControl ? { cacheControl } : {}) },
  });

/**
 * Fire a plain request on `older` and hold its upstream call at the node (balance 1), change
 * the balance to 2, then fire a bust on `buster`. Returns both answers' promises.
 */
async function raceBustAgainstHeldLoad(older: RunningGateway, buster: RunningGateway, who: string) {
  const before = node.count('call-read');
  node.gate({ kind: 'call-read', times: 1 });
  const first = call(older, who);
  await node.waitForRequests(before + 1, { kind: 'call-read' });
  seenAtArrival.set(node.lastRequest('call-read')!.seq, balance);
  balance = 2n;
  const bust = call(buster, who, { bustCache: true });
  return { first, bust, before };
}

describe('a bust racing an older load of the same key', () => {
  it('on one instance: starts its own upstream call, answers the new value, and the new value stays', async () => {
    const gw = await startGateway(testEnv(node.url, { UPSTREAM_TIMEOUT_MS: '30000' }));
    try {
      const who = `${MAINNET_ADDR}.p${++principals}`;
      const { first, bust, before } = await raceBustAgainstHeldLoad(gw, gw, who);
      // The bust reaches the node while the older call is still held there.
      await node.waitForRequests(before + 2, { kind: 'call-read', timeoutMs: 5_000 });
      const busted = await bust;
      expect(busted.status).toBe(200);
      expect(busted.body.data).toBe('2');
      expect(busted.headers.get('cache-status')).toBe('clarity-cache; fwd=request; stored');

      expect(node.release()).toBe(1);
      const older = await first;
      expect(older.body.data).toBe('1');
      expect(older.headers.get('cache-status')).not.toContain('stored');

      const after = await call(gw, who);
      expect(after.headers.get('cache-status')).toMatch(/^clarity-cache; hit/);
      expect(after.body.data).toBe('2');
      expect(node.count('call-read')).toBe(before + 2);
    } finally {
      await gw.close();
    }
  });

  it.skipIf(redis === undefined)(
    'across two instances on one Redis: the bust does not take the older value, and the new value stays',
    async () => {
      const env = testEnv(node.url, {
        CACHE_STORE: 'redis',
        REDIS_URL: redis!.url,
        UPSTREAM_TIMEOUT_MS: '30000',
      });
      const a = await startGateway(env);
      const b = await startGateway(env);
      try {
        const who = `${MAINNET_ADDR}.p${++principals}`;
        const { first, bust, before } = await raceBustAgainstHeldLoad(a, b, who);
        // The bust is under way on b (waiting for a's lock) before the older load ends.
        await expect.poll(() => b.gateway.cache.inflight).toBe(1);
        node.release();
        expect((await first).body.data).toBe('1');
        const busted = await bust;
        expect(busted.status).toBe(200);
        expect(busted.body.data).toBe('2');
        expect(busted.headers.get('cache-status')).toBe('clarity-cache; fwd=request; stored');
        expect(node.count('call-read')).toBe(before + 2);
        for (const gw of [a, b]) {
          const after = await call(gw, who);
          expect(after.body.data).toBe('2');
        }
      } finally {
        await a.close();
        await b.close();
      }
    },
  );
});
