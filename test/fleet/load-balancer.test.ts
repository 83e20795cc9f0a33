/**
 * The load balancer deploy/ ships (deploy/nginx/clarity-cache.conf, run by a real nginx): a
 * broadcast is never sent twice, whichever of its routes carries it, while a read that an
 * instance failed is answered by another. Two stand-in instances: one answers 502 to every
 * request (an instance dying mid-request), the other 200; each counts what it received. The
 * read runs last: its 502 takes the failing instance out of the rotation for a while.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LoadBalancer, startNginx } from '../support/nginx.js';

interface Instance {
  readonly server: Server;
  readonly url: string;
  readonly received: string[];
}

/** An instance answering `status` to everything but its health check (the harness's readiness probe). */
function instance(status: number): Promise<Instance> {
  const received: string[] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const health = req.url === '/health';
      if (!health) received.push(`${req.method} ${req.url}`);
      res.writeHead(health ? 200 : status, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received }),
    ),
  );
}

let failing: Instance;
let healthy: Instance;
let lb: LoadBalancer;

beforeAll(async () => {
  failing = await instance(502);
  healthy = await instance(200);
  lb = await startNginx([failing.url, healthy.url]);
});

afterAll(async () => {
  await lb?.stop();
  for (const i of [failing, healthy]) await new Promise((resolve) => i?.server.close(resolve));
});

describe('the shipped load balancer', () => {
  for (const path of [
    '/v2/transactions',
    '/testnet/v2/transactions',
    '/mainnet/v2/transactions',
    '/%762/transactions',
  ]) {
    it(`never sends a broadcast twice: ${path}`, async () => {
      const before = { failing: failing.received.length, healthy: healthy.received.length };
      const statuses: number[] = [];
      // Enough that round-robin hands some to the failing instance.
      for (let i = 0; i < 4; i++) {
        const res = await fetch(`${lb.url}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/octet-stream' },
          body: new Uint8Array([0x80, 0, 0, 0]),
        });
        await res.arrayBuffer();
        statuses.push(res.status);
      }
      const reached = failing.received.length - before.failing + (healthy.received.length - before.healthy);
      // Each broadcast reached exactly one instance; the failing one's 502 came back as it was.
      expect(reached).toBe(4);
      expect(statuses).toContain(502);
    });
  }

  it('answers a read that an instance failed from another', async () => {
    const before = failing.received.length;
    for (let i = 0; i < 4; i++) {
      const res = await fetch(
        `${lb.url}/contract-calls/read-only/SP000000000000000000002Q6VF78.pox-4/get-pox-info`,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"functionArgs":[]}',
        },
      );
      await res.arrayBuffer();
      expect(res.status).toBe(200);
    }
    // The failing instance was tried (and its 502 retried elsewhere) at least once.
    expect(failing.received.length).toBeGreaterThan(before);
  });
});
