/**
 * One spelling per route behind the shipped load balancer (deploy/nginx/clarity-cache.conf run
 * by a real nginx, a real gateway behind it). nginx matches its locations on the decoded path
 * but passes the request target on as the client spelt it, so the gateway must classify the
 * spelling it receives as the route its router serves: every spelling of an API route asks for
 * the key, and an admin route spelt with an escape is not found.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Cl } from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../support/fake-node.js';
import { hex, MAINNET_ADDR, SAMPLE_ABI } from '../support/fixtures.js';
import { type RunningGateway, startGateway, testEnv } from '../support/gateway.js';
import { type LoadBalancer, startNginx } from '../support/nginx.js';
import { httpRequest, rawExchange } from '../support/raw-http.js';
import { tmpDir } from '../unit/cache/tmp-dir.js';

const KEY = 'k-through-nginx-0123456789abcdef';
const TOKEN = 'admin-token-through-nginx';

let node: FakeNode;
let gw: RunningGateway;
let lb: LoadBalancer;

beforeAll(async () => {
  node = await startFakeNode();
  node.setAbi(MAINNET_ADDR, 'demo', SAMPLE_ABI);
  node.setReadOnly(MAINNET_ADDR, 'demo', 'get-balance', { okay: true, result: hex(Cl.ok(Cl.uint(7))) });
  const keysFile = path.join(tmpDir('nginx-keys').dir, 'keys.json');
  writeFileSync(keysFile, JSON.stringify([{ name: 'app', key: KEY }]));
  gw = await startGateway(
    testEnv(node.url, { ADMIN_TOKEN: TOKEN, API_KEYS_FILE: keysFile, API_KEYS_REQUIRED: 'true' }),
  );
  lb = await startNginx([gw.url]);
});

afterAll(async () => {
  await lb?.stop();
  await gw?.close();
  await node?.close();
});

const call = (target: string, headers: Record<string, string> = {}) =>
  rawExchange(
    lb.url,
    httpRequest(
      'POST',
      target,
      { 'content-type': 'application/json', ...headers },
      JSON.stringify({ functionArgs: [{ type: 'principal', value: `${MAINNET_ADDR}.c1` }] }),
    ),
  );

describe('spellings of a route through the shipped load balancer', () => {
  it('asks for the key on every spelling of an API route', async () => {
    const canonical = `/contract-calls/read-only/${MAINNET_ADDR}/demo/get-balance`;
    for (const target of [
      canonical,
      `/%63ontract-calls/read-only/${MAINNET_ADDR}/demo/get-balance`,
      `/contract-calls/read-%6fnly/${MAINNET_ADDR}/demo/get-balance`,
    ]) {
      const refused = await call(target);
      expect(refused.status, target).toBe(401);
      expect(refused.body.error.code, target).toBe('UNAUTHORIZED');
      const admitted = await call(target, { 'x-api-key': KEY });
      expect(admitted.status, target).toBe(200);
      expect(admitted.body.success, target).toBe(true);
    }
    for (const target of ['/v%32/info', '/%6dainnet/v2/info']) {
      const refused = await rawExchange(lb.url, httpRequest('GET', target));
      expect(refused.status, target).toBe(401);
    }
  });

  it('never serves an admin route spelt with an escape', async () => {
    for (const target of ['/%61dmin/cache/stats', '/admin/%63ache/stats']) {
      const res = await rawExchange(lb.url, httpRequest('GET', target, { authorization: `Bearer ${TOKEN}` }));
      expect(res.status, target).toBe(404);
    }
  });
});
