/**
 * Closing the gateway with event streams open (docs/watch.md): the streams end at once, with no
 * error event (their clients reconnect elsewhere with Last-Event-ID), and the close does not
 * wait for them until the grace period.
 */
import { Cl } from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { hex, MAINNET_ADDR, SAMPLE_ABI } from '../../support/fixtures.js';
import { request, startGateway, testEnv } from '../../support/gateway.js';
import { openSse } from '../../support/sse.js';

let node: FakeNode;
beforeAll(async () => {
  node = await startFakeNode();
  node.setAbi(MAINNET_ADDR, 'demo', SAMPLE_ABI);
  node.setReadOnly(MAINNET_ADDR, 'demo', 'get-balance', { okay: true, result: hex(Cl.ok(Cl.uint(7))) });
});
afterAll(async () => node?.close());

describe('shutdown with open streams', () => {
  it('ends every stream without an error event, and closes well within the grace period', async () => {
    const gw = await startGateway(
      testEnv(node.url, { SHUTDOWN_GRACE_MS: '60000', WATCH_MAX_STREAMS_ANONYMOUS: '10' }),
    );
    const created = await request(`${gw.url}/subscriptions`, {
      body: {
        reads: [
          {
            contractAddress: MAINNET_ADDR,
            contractName: 'demo',
            functionName: 'get-balance',
            functionArgs: [{ type: 'principal', value: MAINNET_ADDR }],
          },
        ],
      },
    });
    expect(created.status).toBe(201);
    const streams = await Promise.all([1, 2, 3].map(() => openSse(`${gw.url}${created.body.data.events}`)));
    for (const s of streams) await s.next((e) => e.event === 'values');
    const started = Date.now();
    await gw.close();
    // Far under SHUTDOWN_GRACE_MS: nothing waited for the streams to end by themselves.
    expect(Date.now() - started).toBeLessThan(30_000);
    for (const s of streams) {
      await s.ended;
      expect(s.events.filter((e) => e.event === 'error')).toEqual([]);
    }
  });
});
