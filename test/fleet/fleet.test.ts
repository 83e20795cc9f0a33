/**
 * A fleet as it is run: three gateway processes behind a real nginx on one real redis-server,
 * in front of one fake Stacks node that counts every upstream request. The fleet behaves as
 * one gateway: one cache, one budget, one set of quotas, admin invalidation reaching every
 * instance within a second, and an instance killed with SIGKILL under load while the others
 * keep answering and lose nothing they acknowledged.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Cl } from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../support/fake-node.js';
import { hex, SAMPLE_ABI, TESTNET_ADDR } from '../support/fixtures.js';
import { type JsonResponse, request } from '../support/gateway.js';
import { type LoadBalancer, startNginx } from '../support/nginx.js';
import { type ServiceProcess, startService } from '../support/process.js';
import { type RedisServer, startRedis } from '../support/redis-server.js';
import { tmpDir } from '../unit/cache/tmp-dir.js';

const TOKEN = 'fleet-admin-token';
const KEY = 'k-fleet-quota-0123456789';

let node: FakeNode;
let redis: RedisServer | undefined;
let lb: LoadBalancer;
const instances: ServiceProcess[] = [];

const call = (base: string, who: string, headers: Record<string, string> = {}): Promise<JsonResponse> =>
  request(`${base}/contract-calls/read-only/${TESTNET_ADDR}/demo/get-balance`, {
    body: { functionArgs: [{ type: 'principal', value: `${TESTNET_ADDR}.${who}` }] },
    headers,
  });

beforeAll(async () => {
  redis = await startRedis();
  if (redis === undefined) throw new Error('redis-server is needed for the fleet test');
  node = await startFakeNode();
  node.setAbi(TESTNET_ADDR, 'demo', SAMPLE_ABI);
  node.setReadOnly(TESTNET_ADDR, 'demo', 'get-balance', { okay: true, result: hex(Cl.ok(Cl.uint(77))) });
  const { dir } = tmpDir('fleet-keys');
  const keysFile = path.join(dir, 'keys.json');
  writeFileSync(keysFile, JSON.stringify([{ name: 'fleet', key: KEY, requestsPerMinute: 6 }]));
  const env = {
    CACHE_STORE: 'redis',
    REDIS_URL: redis.url,
    STACKS_API_URL_MAINNET: node.url,
    STACKS_API_URL_TESTNET: node.url,
    ADMIN_TOKEN: TOKEN,
    API_KEYS_FILE: keysFile,
    TRUST_PROXY: '1',
    UPSTREAM_RATE_LIMIT_PER_MINUTE: '100000',
    LOG_LEVEL: 'info',
  };
  for (let i = 0; i < 3; i++) instances.push(await startService(env));
  lb = await startNginx(instances.map((s) => s.url));
  // Each instance's start-up /v2/info check (two networks) comes first.
  await node.waitForRequests(6, { kind: 'info' });
}, 60_000);

afterAll(async () => {
  await lb?.stop();
  for (const s of instances) await s.stop();
  await node?.close();
  await redis?.stop();
});

describe('three instances behind nginx on one Redis', () => {
  it('share one cache: a result stored through the balancer is a hit on every instance, with no new upstream call', async () => {
    const first = await call(lb.url, 'shared');
    expect(first.status).toBe(200);
    const calls = node.count('call-read');
    for (const s of instances) {
      const res = await call(s.url, 'shared');
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-status')).toContain('hit');
    }
    expect(node.count('call-read')).toBe(calls);
  });

  it('count one quota per key, whichever instance answers', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 9; i++)
      statuses.push((await call(instances[i % 3]!.url, 'shared', { 'x-api-key': KEY })).status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(6);
    expect(statuses.slice(6)).toEqual([429, 429, 429]);
  });

  it('carry an admin invalidation to every instance within a second', async () => {
    // The node answers a new value on every call: an answer from before the invalidation shows.
    let n = 1000;
    node.setAbi(TESTNET_ADDR, 'counter', SAMPLE_ABI);
    node.setReadOnly(TESTNET_ADDR, 'counter', 'get-balance', () => ({
      okay: true,
      result: hex(Cl.ok(Cl.uint(++n))),
    }));
    const read = async (base: string): Promise<string> =>
      (
        await request(`${base}/contract-calls/read-only/${TESTNET_ADDR}/counter/get-balance`, {
          body: { functionArgs: [{ type: 'principal', value: TESTNET_ADDR }] },
        })
      ).body.data;
    // Every instance holds the value (twice: the second answer is a hot-tier or lane hit).
    const before = await read(instances[0]!.url);
    for (const s of instances) for (let i = 0; i < 2; i++) expect(await read(s.url)).toBe(before);
    const started = Date.now();
    // To one instance, as an operator does (the load balancer keeps the admin API off the
    // public side): the invalidation reaches the others through Redis.
    const res = await request(`${instances[0]!.url}/admin/cache`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(res.status).toBe(200);
    // Each instance, asked until it no longer answers the removed value (bounded by a second).
    for (const s of instances) {
      let value = await read(s.url);
      while (value === before && Date.now() - started < 1000) value = await read(s.url);
      expect(value).not.toBe(before);
    }
  });

  it('keep answering when an instance is killed with SIGKILL under load, and lose nothing it stored', async () => {
    const victim = instances[1]!;
    // What the victim answered as stored: the others serve it without asking the node.
    const stored = await call(victim.url, 'victim-stored');
    expect(stored.status).toBe(200);
    expect(stored.headers.get('cache-status')).toContain('stored');

    const results: number[] = [];
    let killed = false;
    const worker = async (w: number): Promise<void> => {
      for (let i = 0; i < 40; i++) {
        const res = await call(lb.url, `load-${(w * 40 + i) % 25}`);
        results.push(res.status);
        if (!killed && results.length >= 60) {
          killed = true;
          victim.child.kill('SIGKILL');
        }
      }
    };
    await Promise.all([0, 1, 2, 3, 4].map(worker));
    expect(killed).toBe(true);
    expect(await victim.exited).toBe(null);
    expect(results).toHaveLength(200);
    expect(results.filter((s) => s !== 200)).toEqual([]);

    const calls = node.count('call-read');
    for (const s of [instances[0]!, instances[2]!]) {
      const res = await call(s.url, 'victim-stored');
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-status')).toContain('hit');
    }
    expect(node.count('call-read')).toBe(calls);
  });
});
