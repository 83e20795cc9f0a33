/**
 * Node answers that pass through (node routes, a Clarity refusal's cause) never carry the
 * gateway's configured secrets, even when the upstream echoes the request it was sent: its
 * URL with the upstream's `?apikey=` query and its `x-api-key` header, in a body and in a
 * header. Real gateway, real fake node, real sockets; the echo is checked on the miss, on the
 * hit that follows, and in the store itself.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type FakeNode, type FakeRequest, startFakeNode } from '../../support/fake-node.js';
import { MAINNET_ADDR, SAMPLE_ABI } from '../../support/fixtures.js';
import { type RunningGateway, request, startGateway, testEnv } from '../../support/gateway.js';
import { tmpDir } from '../../unit/cache/tmp-dir.js';

const QUERY_KEY = 'QueryKey-2f9c41d7e0';
const HEADER_KEY = 'HeaderKey-8b1e55a3c6';
const ADMIN_TOKEN = 'AdminToken-4471aa90de';
const SECRETS = [QUERY_KEY, HEADER_KEY, ADMIN_TOKEN];

let node: FakeNode;
let upstreamsFile: string;
const dirs: Array<() => void> = [];
const running: RunningGateway[] = [];

/** What Express and many proxies answer to a path they do not serve: the request, echoed. */
function echo(req: FakeRequest) {
  const key = String(req.headers['x-api-key'] ?? '');
  return {
    status: 404,
    body: `<pre>Cannot GET ${req.url}</pre>\nx-api-key: ${key}\nadmin: ${ADMIN_TOKEN}`,
    headers: { 'content-type': `text/html; charset=utf-8; seen=${key}`, 'x-echo-api-key': key },
  };
}

beforeAll(async () => {
  node = await startFakeNode();
  node.setAbi(MAINNET_ADDR, 'demo', SAMPLE_ABI);
  node.setRoute('GET', `/v2/data_var/${MAINNET_ADDR}/demo/missing-var`, echo);
  node.setRoute('GET', `/v2/contracts/source/${MAINNET_ADDR}/echoed`, (req) => ({
    status: 200,
    body: JSON.stringify({ source: `;; served for ${req.url} with ${String(req.headers['x-api-key'])}` }),
    headers: { 'content-type': 'application/json' },
  }));
  node.setReadOnly(MAINNET_ADDR, 'demo', 'get-info', (call) => ({
    okay: false,
    cause: `Unchecked(NoSuchPublicFunction("get-info" requested with ${String(call.request.headers['x-api-key'])}))`,
  }));
  const { dir, remove } = tmpDir('node-route-secrets');
  dirs.push(remove);
  upstreamsFile = path.join(dir, 'upstreams.json');
  writeFileSync(
    upstreamsFile,
    JSON.stringify([
      { network: 'mainnet', url: `${node.url}/?apikey=${QUERY_KEY}`, apiKey: HEADER_KEY },
      { network: 'testnet', url: node.url },
    ]),
  );
});

afterAll(async () => {
  await node?.close();
  for (const remove of dirs) remove();
});

afterEach(async () => {
  for (const gw of running.splice(0)) await gw.close();
});

async function gateway(env: Record<string, string> = {}): Promise<RunningGateway> {
  const base = testEnv(node.url, { UPSTREAMS_FILE: upstreamsFile, ADMIN_TOKEN, ...env });
  delete base['STACKS_API_URL_MAINNET'];
  delete base['STACKS_API_URL_TESTNET'];
  const gw = await startGateway(base);
  running.push(gw);
  return gw;
}

interface Seen {
  status: number;
  headers: Headers;
  text: string;
}

async function get(url: string): Promise<Seen> {
  const res = await fetch(url);
  return { status: res.status, headers: res.headers, text: await res.text() };
}

function expectNoSecret(seen: Seen): void {
  for (const secret of SECRETS) {
    expect(seen.text).not.toContain(secret);
    for (const [name, value] of seen.headers) expect(`${name}: ${value}`).not.toContain(secret);
  }
}

describe('node answers that pass through', () => {
  it('replace the upstream key and URL query an upstream echoes in a 404 body and its content type, on the miss and on the hit', async () => {
    const gw = await gateway();
    const url = `${gw.url}/v2/data_var/${MAINNET_ADDR}/demo/missing-var`;
    const before = node.count('other');

    const miss = await get(url);
    // The upstream did see the secrets (else the test proves nothing).
    const sent = node.lastRequest('other')!;
    expect(sent.query['apikey']).toBe(QUERY_KEY);
    expect(sent.headers['x-api-key']).toBe(HEADER_KEY);
    expect(miss.status).toBe(404);
    expect(miss.headers.get('cache-status')).toContain('fwd=miss');
    expect(miss.text).toBe(
      `<pre>Cannot GET /v2/data_var/${MAINNET_ADDR}/demo/missing-var?apikey=[redacted]</pre>\nx-api-key: [redacted]\nadmin: [redacted]`,
    );
    expect(miss.headers.get('content-type')).toBe('text/html; charset=utf-8; seen=[redacted]');
    expectNoSecret(miss);

    const hit = await get(url);
    expect(hit.status).toBe(404);
    expect(hit.headers.get('cache-status')).toMatch(/; hit/);
    expect(node.count('other')).toBe(before + 1);
    expect(hit.text).toBe(miss.text);
    expect(hit.headers.get('content-type')).toBe(miss.headers.get('content-type'));
    expectNoSecret(hit);

    // What the store keeps is clean too: another instance on the same store serves it as is.
    for (const key of await gw.gateway.store.list('')) {
      const entry = await gw.gateway.store.get(key);
      for (const secret of SECRETS) expect(entry?.value ?? '').not.toContain(secret);
    }
  });

  it('replace them in a stored 2xx answer, and leave every other byte as the node wrote it', async () => {
    const gw = await gateway();
    const url = `${gw.url}/v2/contracts/source/${MAINNET_ADDR}/echoed`;
    const miss = await get(url);
    expect(miss.status).toBe(200);
    expect(JSON.parse(miss.text)).toEqual({
      source: `;; served for /v2/contracts/source/${MAINNET_ADDR}/echoed?apikey=[redacted] with [redacted]`,
    });
    const hit = await get(url);
    expect(hit.headers.get('cache-status')).toMatch(/; hit/);
    expect(hit.text).toBe(miss.text);
    expectNoSecret(hit);
  });

  it("replace them in a Clarity refusal's cause, in the node's shape and in the envelope", async () => {
    const gw = await gateway();
    const body = { sender: MAINNET_ADDR, arguments: [] };
    const shaped = await request(`${gw.url}/v2/contracts/call-read/${MAINNET_ADDR}/demo/get-info`, { body });
    expect(shaped.body).toEqual({
      okay: false,
      cause: 'Unchecked(NoSuchPublicFunction("get-info" requested with [redacted]))',
    });
    const enveloped = await request(`${gw.url}/contract-calls/read-only/${MAINNET_ADDR}/demo/get-info`, {
      body: { functionArgs: [] },
    });
    expect(enveloped.body.success).toBe(false);
    expect(enveloped.body.error.details.cause).toContain('requested with [redacted]');
    for (const secret of SECRETS) {
      expect(JSON.stringify(shaped.body)).not.toContain(secret);
      expect(JSON.stringify(enveloped.body)).not.toContain(secret);
    }
  });

  it('replace a short key only where it stands alone, so answers that merely contain its letters are untouched', async () => {
    const short = 'k7';
    const { dir, remove } = tmpDir('node-route-short-secret');
    dirs.push(remove);
    const file = path.join(dir, 'upstreams.json');
    writeFileSync(
      file,
      JSON.stringify([
        { network: 'mainnet', url: node.url, apiKey: short },
        { network: 'testnet', url: node.url },
      ]),
    );
    const gw = await gateway({ UPSTREAMS_FILE: file });
    node.setRoute('GET', `/v2/data_var/${MAINNET_ADDR}/demo/k7x`, {
      status: 200,
      body: '{"data":"0x0100000000000000000000000000000k7f","note":"k7x-k7"}',
      headers: { 'content-type': 'application/json' },
    });
    const echoed = await get(`${gw.url}/v2/data_var/${MAINNET_ADDR}/demo/missing-var`);
    expect(echoed.text).toContain('x-api-key: [redacted]\n');
    expect(echoed.headers.get('content-type')).toBe('text/html; charset=utf-8; seen=[redacted]');
    const untouched = await get(`${gw.url}/v2/data_var/${MAINNET_ADDR}/demo/k7x`);
    expect(untouched.text).toBe('{"data":"0x0100000000000000000000000000000k7f","note":"k7x-k7"}');
  });
});
