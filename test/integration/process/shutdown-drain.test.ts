/**
 * on SIGTERM, requests waiting for the upstream (a budget token, a
 * retry's backoff, an attempt under way) are answered in the envelope with
 * SERVICE_UNAVAILABLE 503 before the process exits, and no retry starts during the drain.
 * A real process (`node --import tsx src/main.ts`), a real signal, real sockets.
 */
import { Cl } from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { hex, SAMPLE_ABI, TESTNET_ADDR } from '../../support/fixtures.js';
import { type JsonResponse, request } from '../../support/gateway.js';
import { type ServiceProcess, startService } from '../../support/process.js';

let node: FakeNode;

beforeAll(async () => {
  node = await startFakeNode();
  node.setAbi(TESTNET_ADDR, 'demo', SAMPLE_ABI);
  node.setReadOnly(TESTNET_ADDR, 'demo', 'get-balance', { okay: true, result: hex(Cl.ok(Cl.uint(77))) });
});

afterAll(async () => {
  await node?.close();
});

/** Resolves once the service has printed text (event-based). */
function printed(svc: ServiceProcess, text: string): Promise<void> {
  return new Promise((resolve) => {
    const check = (): void => {
      if (svc.output().includes(text)) {
        svc.child.stdout?.off('data', check);
        resolve();
      }
    };
    svc.child.stdout?.on('data', check);
    check();
  });
}

async function metric(svc: ServiceProcess, name: string): Promise<number> {
  const text = await (await fetch(`${svc.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{network="testnet"}`));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}

describe('SIGTERM while requests wait for the upstream', () => {
  it('answers the budget wait, the retry backoff and the attempt under way with 503 envelopes, and starts no retry', async () => {
    const svc = await startService({
      STACKS_API_URL_MAINNET: node.url,
      STACKS_API_URL_TESTNET: node.url,
      CACHE_STORE: 'memory',
      // Four tokens: the start-up /v2/info check, the ABI, the attempt that fails, the attempt
      // that hangs; then a wait.
      UPSTREAM_RATE_LIMIT_PER_MINUTE: '4',
      UPSTREAM_QUEUE_TIMEOUT_MS: '60000',
      // A retry's backoff of 10-20 s; attempts that would last 30 s.
      UPSTREAM_RETRIES: '3',
      UPSTREAM_RETRY_BASE_MS: '20000',
      UPSTREAM_TIMEOUT_MS: '30000',
      SHUTDOWN_GRACE_MS: '4000',
    });
    const call = (who: string): Promise<JsonResponse> =>
      request(`${svc.url}/contract-calls/read-only/${TESTNET_ADDR}/demo/get-balance`, {
        body: { functionArgs: [{ type: 'principal', value: `${TESTNET_ADDR}.${who}` }] },
      });
    try {
      // The start-up check of each network's upstream (one token each) comes first.
      await node.waitForRequests(2, { kind: 'info' });
      node.resetStats();
      expect((await request(`${svc.url}/contract-calls/abi/${TESTNET_ADDR}/demo`)).status).toBe(200);

      // 1. A failed attempt, now in its retry backoff.
      node.status5xx(503, { kind: 'call-read', times: 1 });
      const inBackoff = call('backoff');
      await printed(svc, 'upstream attempt failed, retrying');

      // 2. An attempt under way that the node never answers.
      node.hang({ kind: 'call-read', times: 1 });
      const inFlight = call('in-flight');
      await node.waitForRequests(3);

      // 3. A request waiting for a budget token.
      const waiting = call('budget');
      await expect.poll(() => metric(svc, 'clarity_cache_upstream_waiting')).toBe(1);
      const sentBefore = node.count('call-read');
      expect(sentBefore).toBe(2);

      svc.child.kill('SIGTERM');
      const answers = await Promise.all([inBackoff, inFlight, waiting]);
      for (const res of answers) {
        expect(res.status).toBe(503);
        expect(res.body.success).toBe(false);
        expect(res.body.error.code).toBe('SERVICE_UNAVAILABLE');
        expect(res.body.error.details).toMatchObject({ retryable: true });
        expect(typeof res.body.error.id).toBe('string');
      }
      expect(await svc.exited).toBe(0);
      // No retry was sent during the drain.
      expect(node.count('call-read')).toBe(sentBefore);
    } finally {
      node.clearFaults();
      await svc.stop();
    }
  });
});
