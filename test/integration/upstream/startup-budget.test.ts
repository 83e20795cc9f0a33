/**
 * The start-up round spends the upstream budget like any request (docs/upstreams.md): a fleet of
 * three gateways on one real redis-server (CACHE_STORE=redis, one shared bucket per upstream),
 * each doing its start-up round (one GET /v2/info of each upstream) and then reads, never sends
 * a node more than UPSTREAM_RATE_LIMIT_PER_MINUTE requests in the minute.
 */
import { Cl } from '@stacks/transactions';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { GET_N_ABI, hex, TESTNET_ADDR } from '../../support/fixtures.js';
import { type RunningGateway, request, startGateway, testEnv } from '../../support/gateway.js';
import { startRedis } from '../../support/redis-server.js';

const redis = await startRedis();
afterAll(async () => {
  await redis?.stop();
});

const running: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const r of running.splice(0).reverse()) await r.close();
});

const RATE = 6;

async function node(): Promise<FakeNode> {
  const n = await startFakeNode({ tipHeight: 100 });
  n.setAbi(TESTNET_ADDR, 'demo', GET_N_ABI);
  n.setReadOnly(TESTNET_ADDR, 'demo', 'get-n', ({ arguments: args }) => ({ okay: true, result: args[0]! }));
  running.push(n);
  return n;
}

/** Three gateways on the shared Redis, each in front of the given upstreams. */
async function fleet(env: Record<string, string>): Promise<RunningGateway[]> {
  const { Redis } = await import('ioredis');
  const admin = new Redis(redis!.url);
  // Fresh buckets: another file's gateways may have used the same keys.
  await admin.flushall();
  await admin.quit();
  const gateways: RunningGateway[] = [];
  for (let i = 0; i < 3; i++) {
    const gw = await startGateway({
      ...env,
      CACHE_STORE: 'redis',
      REDIS_URL: redis!.url,
      UPSTREAM_RATE_LIMIT_PER_MINUTE: String(RATE),
      UPSTREAM_QUEUE_TIMEOUT_MS: '0',
      UPSTREAM_RETRIES: '0',
    });
    running.push(gw);
    gateways.push(gw);
  }
  return gateways;
}

/** A distinct read per n (each a miss for every instance). */
function read(gw: RunningGateway, n: number) {
  return request(`${gw.url}/contract-calls/read-only/${TESTNET_ADDR}/demo/get-n`, {
    body: { functionArgs: [hex(Cl.uint(n))] },
  });
}

describe.skipIf(redis === undefined)('a fleet on one Redis, with its start-up rounds', () => {
  it('takes the start-up /v2/info from the shared bucket: the node gets at most UPSTREAM_RATE_LIMIT_PER_MINUTE requests in the minute', async () => {
    // Each network its own node (a node serves one chain): each upstream has its own bucket,
    // cc:budget:mainnet and cc:budget:testnet, shared by the three instances.
    const testnet = await node();
    const mainnet = await node();
    const gateways = await fleet(testEnv(mainnet.url, { STACKS_API_URL_TESTNET: testnet.url }));
    for (const gw of gateways) expect(await gw.gateway.startupRound?.()).toEqual([]);
    expect(testnet.count('info')).toBe(3);
    // The three start-up probes took three of the six shared tokens (less what refilled since:
    // one every 10 s).
    const { Redis } = await import('ioredis');
    const admin = new Redis(redis!.url);
    const level = await admin.hget('cc:budget:testnet', 't');
    await admin.quit();
    // No bucket yet would be a full one: nothing taken.
    const left = level === null ? RATE : Number(level);
    expect(left).toBeGreaterThanOrEqual(RATE - 3);
    expect(left).toBeLessThan(RATE - 2);

    // Then reads, each a miss, round-robin over the fleet, until well past the budget.
    const statuses: number[] = [];
    let n = 0;
    for (let round = 0; round < 3; round++)
      for (const gw of gateways) statuses.push((await read(gw, n++)).status);
    // Three tokens were left: the ABI and two calls; every later read is refused.
    expect(statuses.slice(0, 2)).toEqual([200, 200]);
    expect(statuses.slice(3)).toEqual(Array(statuses.length - 3).fill(429));
    expect(testnet.total).toBeLessThanOrEqual(RATE);
    expect(mainnet.total).toBeLessThanOrEqual(RATE);
  });
});
