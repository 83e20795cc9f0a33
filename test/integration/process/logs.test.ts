/**
 * What the service process writes to its log, read from its real stdout: ISO timestamps, a
 * start-up line naming the upstreams (without credentials, query or API key) and the store,
 * access lines with the cache outcome and the upstream facts of the request, and retry lines
 * tied to the request by its id.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Cl } from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { hex, MAINNET_ADDR, SAMPLE_ABI } from '../../support/fixtures.js';
import { request } from '../../support/gateway.js';
import { type LogLine, logLines, type ServiceProcess, startService } from '../../support/process.js';

let node: FakeNode;
let dataDir: string;
let svc: ServiceProcess;

const lines = (): LogLine[] => logLines(svc);

/** The access lines of the requests to `url`, in order. */
function accessLines(url: string): LogLine[] {
  return lines().filter((l) => l.msg === 'request' && l.url === url);
}

const READ = `/contract-calls/read-only/${MAINNET_ADDR}/demo/get-balance`;
const bodyFor = (who: string) => ({ functionArgs: [{ type: 'principal', value: who }] });

beforeAll(async () => {
  node = await startFakeNode();
  node.setAbi(MAINNET_ADDR, 'demo', SAMPLE_ABI);
  node.setReadOnly(MAINNET_ADDR, 'demo', 'get-balance', { okay: true, result: hex(Cl.ok(Cl.uint(77))) });
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'clarity-cache-logs-'));
  const withSecrets = new URL(node.url);
  withSecrets.username = 'alice';
  withSecrets.password = 's3cr3t-pass';
  withSecrets.search = '?apikey=q-secret';
  svc = await startService({
    CACHE_STORE: 'sqlite',
    DATA_DIR: dataDir,
    STACKS_API_URL_MAINNET: withSecrets.toString(),
    STACKS_API_URL_TESTNET: node.url,
    STACKS_API_KEY: 'header-secret-key',
    UPSTREAM_RETRY_BASE_MS: '1',
    UPSTREAM_RATE_LIMIT_PER_MINUTE: '100000',
  });
});

afterAll(async () => {
  await svc?.stop();
  await node?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('the log', () => {
  it('has ISO timestamps and a start-up line naming the upstreams (no secrets) and the store', () => {
    const start = lines().find((l) => String(l.msg).includes('listening on'));
    expect(start).toBeDefined();
    expect(start!.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const host = new URL(node.url).host;
    expect(start!.upstreams).toEqual([`mainnet http://${host}`, `testnet http://${host}`]);
    expect(start!.store).toBe('sqlite');
    expect(start!.dataDir).toBe(path.resolve(dataDir));
    expect(start!.msg).toContain(`upstreams mainnet http://${host}`);
    expect(start!.msg).toContain(`store sqlite in ${path.resolve(dataDir)}`);
    for (const secret of ['s3cr3t-pass', 'alice', 'q-secret', 'header-secret-key']) {
      expect(svc.output()).not.toContain(secret);
    }
  });

  it('says miss with the upstream time and host, then hit without upstream fields', async () => {
    const body = bodyFor('SP2J6ZY48GV1EZ5V2V5RB9MP66SW86PYKKNRV9EJ7');
    const miss = await request(`${svc.url}${READ}`, { body });
    expect(miss.headers.get('cache-status')).toContain('fwd=miss');
    const hit = await request(`${svc.url}${READ}`, { body });
    expect(hit.headers.get('cache-status')).toContain('hit');
    const [missLine, hitLine] = await waitForLines(READ, 2);
    expect(missLine).toMatchObject({
      cache: 'miss',
      upstream: 'mainnet',
      upstreamHost: new URL(node.url).host,
      upstreamAttempts: 2, // the ABI, then the call
    });
    expect(typeof missLine!.upstreamMs).toBe('number');
    expect(missLine!.upstreamMs).toBeGreaterThan(0);
    expect(hitLine!.cache).toBe('hit');
    expect(hitLine).not.toHaveProperty('upstreamMs');
    expect(hitLine).not.toHaveProperty('upstreamHost');
  });

  it('ties a retry line to its request by reqId and names the upstream host', async () => {
    node.status5xx(503, { times: 1, kind: 'call-read' });
    const res = await request(`${svc.url}${READ}`, { body: bodyFor('SP000000000000000000002Q6VF78') });
    expect(res.status).toBe(200);
    const access = (await waitForLines(READ, 3))[2]!;
    expect(access).toMatchObject({ cache: 'miss', upstreamAttempts: 2 });
    const retry = lines().find((l) => l.msg === 'upstream attempt failed, retrying');
    expect(retry).toMatchObject({
      reqId: access.reqId,
      upstream: 'mainnet',
      upstreamHost: new URL(node.url).host,
      outcome: 'server-error',
    });
  });

  it('logs the requests that joined another one as coalesced, without upstream time', async () => {
    const body = bodyFor('SP3FBR2AGK5H9QBDH3EEN6DF8EK8JY7RX8QJ5SVTE');
    const before = node.count('call-read');
    const seen = accessLines(READ).length;
    node.gate({ kind: 'call-read' });
    const first = request(`${svc.url}${READ}`, { body });
    await node.waitForRequests(before + 1, { kind: 'call-read' });
    const others = Array.from({ length: 4 }, () => request(`${svc.url}${READ}`, { body }));
    // No event says a request has joined; a few round trips through the gateway's event loop
    // let the four (sent before them) arrive while the first is still held upstream.
    for (let i = 0; i < 5; i++) await request(`${svc.url}/health`);
    node.release();
    const answers = await Promise.all([first, ...others]);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    const latest = (await waitForLines(READ, seen + 5)).slice(seen);
    const joined = latest.filter((l) => l.cache === 'coalesced');
    const led = latest.filter((l) => l.cache === 'miss');
    expect(joined.length).toBeGreaterThan(0);
    expect(led.length + joined.length).toBe(5);
    // Each request that made the call carries it; those that joined carry none.
    expect(led).toHaveLength(node.count('call-read') - before);
    for (const l of led) expect(l).toMatchObject({ upstreamAttempts: 1, upstream: 'mainnet' });
    for (const l of joined) {
      expect(l).not.toHaveProperty('upstreamMs');
      expect(l).not.toHaveProperty('upstreamAttempts');
    }
  });
});

/** Access lines are written after the answer is sent: wait (bounded) until `n` of them are in. */
async function waitForLines(url: string, n: number): Promise<LogLine[]> {
  for (let i = 0; i < 200; i++) {
    const found = accessLines(url);
    if (found.length >= n) return found;
    await new Promise<void>((resolve) => svc.child.stdout!.once('data', () => resolve()));
  }
  throw new Error(`fewer than ${n} access lines for ${url}`);
}
