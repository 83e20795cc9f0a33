/**
 * The upstream pool and what it learns per upstream: one upstream per attempt, failed ones
 * avoided when another can serve, each attempt paid from the chosen upstream's own budget,
 * answers naming the upstream that gave them. Driven through an undici MockAgent (no sockets).
 */
import { MockAgent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import type { Budget } from '../../../src/upstream/budget/upstream-budget.js';
import { CALL_READ } from '../../../src/upstream/endpoints.js';
import { createDefaultPool, type Upstream, UpstreamPool } from '../../../src/upstream/pool.js';
import { StacksNodeClient } from '../../../src/upstream/stacks-node.js';
import { UpstreamStats } from '../../../src/upstream/stats.js';

const ADDR = 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM';
const CALL_PATH = `/v2/contracts/call-read/${ADDR}/counter/get-count`;
const OK_BODY = JSON.stringify({ okay: true, result: '0x0100000000000000000000000000000005' });

/** A budget that always grants and counts its tokens. */
function counting(): Budget & { taken: number } {
  const b = {
    taken: 0,
    take: async () => {
      b.taken += 1;
    },
    available: () => 1,
    queued: () => 0,
    close: () => undefined,
  };
  return b;
}

describe('UpstreamPool', () => {
  it('builds one upstream per network from the config, named after the network, credentials kept out of the label', () => {
    const pool = createDefaultPool(
      {
        upstreamUrls: { mainnet: 'https://user:secret@node.example/api/', testnet: 'http://127.0.0.1:20443' },
        stacksApiKey: 'k-123',
      },
      { mainnet: counting(), testnet: counting() },
    );
    const main = pool.pick('mainnet');
    expect(main).toMatchObject({
      id: 'mainnet',
      network: 'mainnet',
      label: 'https://node.example/api',
      origin: 'https://node.example',
      pathPrefix: '/api',
      apiKey: 'k-123',
      priority: 0,
    });
    expect(pool.pick('testnet')).toMatchObject({
      id: 'testnet',
      origin: 'http://127.0.0.1:20443',
      pathPrefix: '',
    });
    expect(pool.upstreams().map((u) => u.id)).toEqual(['mainnet', 'testnet']);
  });

  it('prefers the lower priority, avoids the given upstreams while another can serve, and falls back to them', () => {
    const pool = new UpstreamPool([
      { id: 'b', network: 'mainnet', url: 'http://b.test', priority: 2, budget: counting() },
      { id: 'a', network: 'mainnet', url: 'http://a.test', priority: 1, budget: counting() },
      { id: 't', network: 'testnet', url: 'http://t.test', budget: counting() },
    ]);
    const a = pool.pick('mainnet');
    expect(a.id).toBe('a');
    expect(pool.pick('mainnet', { avoid: new Set([a]) }).id).toBe('b');
    const all = new Set<Upstream>(pool.upstreams('mainnet'));
    expect(pool.pick('mainnet', { avoid: all }).id).toBe('a');
    expect(pool.upstreams('mainnet').map((u) => u.id)).toEqual(['a', 'b']);
  });

  it('refuses two upstreams with one id', () => {
    expect(
      () =>
        new UpstreamPool([
          { id: 'x', network: 'mainnet', url: 'http://a.test', budget: counting() },
          { id: 'x', network: 'testnet', url: 'http://b.test', budget: counting() },
        ]),
    ).toThrow(/"x" is used twice/);
  });
});

describe('UpstreamStats', () => {
  it('counts transient failures in a row, averages answer latency, keeps the highest tip', () => {
    const s = new UpstreamStats();
    expect(s.latencyMs).toBeUndefined();
    expect(s.tip).toBeUndefined();
    s.record('timeout', 5000);
    s.record('server-error', 10);
    expect(s.consecutiveFailures).toBe(2);
    expect(s.latencyMs).toBeUndefined();
    s.record('okay-false', 100, 50);
    expect(s.consecutiveFailures).toBe(0);
    expect(s.latencyMs).toBe(100);
    s.record('ok', 200, 49);
    expect(s.latencyMs).toBeCloseTo(120);
    expect(s.tip?.height).toBe(50);
  });
});

describe('the attempt loop asks the pool for one upstream per attempt', () => {
  const agents: MockAgent[] = [];
  afterEach(async () => {
    for (const a of agents.splice(0)) await a.close();
  });

  it('retries a transient failure on another upstream of the network, paid from that upstream’s budget', async () => {
    const agent = new MockAgent();
    agent.disableNetConnect();
    agents.push(agent);
    agent.get('http://a.test').intercept({ path: CALL_PATH, method: 'POST' }).reply(503, 'busy');
    agent
      .get('http://b.test')
      .intercept({ path: CALL_PATH, method: 'POST' })
      .reply(200, OK_BODY, { headers: { 'x-canonical-stacks-tip-height': '9' } });
    const budgetA = counting();
    const budgetB = counting();
    const pool = new UpstreamPool([
      { id: 'a', network: 'testnet', url: 'http://a.test', priority: 1, budget: budgetA },
      { id: 'b', network: 'testnet', url: 'http://b.test', priority: 2, budget: budgetB },
    ]);
    const events: string[] = [];
    const client = new StacksNodeClient({
      config: {
        upstreamUrls: { mainnet: 'http://unused.test', testnet: 'http://unused.test' },
        stacksApiKey: undefined,
        upstreamTimeoutMs: 1000,
        upstreamRetries: 2,
        upstreamRetryBaseMs: 1,
        upstreamRetryAfterCapMs: 1,
      },
      pool,
      dispatcher: agent,
      sleep: async () => undefined,
      onAttempt: (e) => events.push(`${e.upstream}:${e.outcome}`),
    });
    const answer = await client.send(CALL_READ, {
      network: 'testnet',
      params: { address: ADDR, contract: 'counter', function: 'get-count' },
      body: JSON.stringify({ sender: ADDR, arguments: [] }),
      read: 'result',
    });
    expect(answer).toEqual({ result: '0x0100000000000000000000000000000005', tipHeight: 9, upstream: 'b' });
    expect(events).toEqual(['a:server-error', 'b:ok']);
    expect([budgetA.taken, budgetB.taken]).toEqual([1, 1]);
    const [a, b] = pool.upstreams('testnet');
    expect(a!.stats.consecutiveFailures).toBe(1);
    expect(b!.stats.tip?.height).toBe(9);
    await client.close();
  });
});
