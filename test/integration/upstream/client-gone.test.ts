/**
 * A request whose client goes away while it waits for an upstream budget token leaves the
 * queue and spends nothing (docs/upstreams.md). The request's abort signal is made only when
 * something waits on it, so this checks that a waiter still hears of a client that left.
 */
import { Cl } from '@stacks/transactions';
import { afterEach, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { GET_N_ABI, hex, TESTNET_ADDR } from '../../support/fixtures.js';
import { type RunningGateway, startGateway, testEnv } from '../../support/gateway.js';
import { metricValue, parseMetrics } from '../../support/prom.js';

const running: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const r of running.splice(0).reverse()) await r.close();
});

async function waiting(gw: RunningGateway): Promise<number> {
  const text = await fetch(`${gw.url}/metrics`).then((r) => r.text());
  return metricValue(parseMetrics(text), 'clarity_cache_upstream_waiting', { network: 'testnet' });
}

/** Poll until `check` holds (each poll one /metrics read), failing after `ms`. */
async function until(check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not reached in time');
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe('a client that leaves while its request waits for the upstream budget', () => {
  it('takes its request out of the queue, and the upstream never sees it', async () => {
    const node: FakeNode = await startFakeNode({ tipHeight: 100 });
    running.push(node);
    node.setAbi(TESTNET_ADDR, 'demo', GET_N_ABI);
    node.setReadOnly(TESTNET_ADDR, 'demo', 'get-n', ({ arguments: args }) => ({
      okay: true,
      result: args[0]!,
    }));
    const gw = await startGateway(
      testEnv(node.url, { UPSTREAM_RATE_LIMIT_PER_MINUTE: '4', UPSTREAM_QUEUE_TIMEOUT_MS: '60000' }),
    );
    running.push(gw);
    // Distinct reads, more than the budget holds: some of them queue for a token.
    const clients = Array.from({ length: 8 }, () => new AbortController());
    const reads = clients.map((c, n) =>
      fetch(`${gw.url}/contract-calls/read-only/${TESTNET_ADDR}/demo/get-n`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ functionArgs: [hex(Cl.uint(n))] }),
        signal: c.signal,
      }).then(
        (r) => r.status,
        () => 'left' as const,
      ),
    );
    await until(async () => (await waiting(gw)) >= 1);
    for (const c of clients) c.abort();
    const outcomes = await Promise.all(reads);
    expect(outcomes).toContain('left');
    // Every waiter left the queue at once (a waiter that stayed would wait for the next token,
    // 15 s away at 4 a minute, or for UPSTREAM_QUEUE_TIMEOUT_MS), and the node saw no more
    // requests than the budget held.
    await until(async () => (await waiting(gw)) === 0, 5_000);
    expect(node.requests.length).toBeLessThanOrEqual(4);
  });
});
