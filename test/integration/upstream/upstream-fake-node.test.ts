/**
 * The fake Stacks node itself: the HTTP integration tests rely on these behaviours, so they
 * are pinned here with plain fetch (no gateway code involved).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';

const ADDR = 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM';
const CALL = `/v2/contracts/call-read/${ADDR}/counter/get-count`;

let node: FakeNode;
beforeEach(async () => {
  node = await startFakeNode({ tipHeight: 55 });
  node.setAbi(ADDR, 'counter', { functions: [] });
  node.setReadOnly(ADDR, 'counter', 'get-count', {
    okay: true,
    result: '0x0100000000000000000000000000000005',
  });
});
afterEach(async () => {
  await node.close();
});

function post(path: string, body: unknown): Promise<Response> {
  return fetch(node.url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

const callBody = { sender: ADDR, arguments: [] };

describe('fake node routes', () => {
  it('answers call-read with the tip height header and logs the request', async () => {
    const res = await post(CALL, callBody);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-canonical-stacks-tip-height')).toBe('55');
    expect(await res.json()).toEqual({ okay: true, result: '0x0100000000000000000000000000000005' });
    expect(node.count('call-read')).toBe(1);
    expect(node.lastRequest()).toMatchObject({
      kind: 'call-read',
      method: 'POST',
      address: ADDR,
      contractName: 'counter',
      functionName: 'get-count',
      body: callBody,
    });
  });

  it('answers okay:false NoSuchContract for an unknown contract and UndefinedFunction for an unknown function', async () => {
    const unknown = await post(`/v2/contracts/call-read/${ADDR}/ghost/f`, callBody);
    expect(unknown.status).toBe(200);
    expect(await unknown.json()).toEqual({
      okay: false,
      cause: `RuntimeCheck(NoSuchContract("${ADDR}.ghost"))`,
    });
    const undef = await post(`/v2/contracts/call-read/${ADDR}/counter/nope`, callBody);
    expect(await undef.json()).toEqual({ okay: false, cause: 'RuntimeCheck(UndefinedFunction("nope"))' });
  });

  it('answers 400 text/plain to a body that is not JSON or not of the expected shape', async () => {
    const bad = await post(CALL, '{not json');
    expect(bad.status).toBe(400);
    expect(bad.headers.get('content-type')).toBe('text/plain');
    expect((await post(CALL, { sender: ADDR })).status).toBe(400);
    expect((await post(CALL, { sender: ADDR, arguments: ['0xzz'] })).status).toBe(400);
    expect(node.count('call-read')).toBe(3);
  });

  it('serves ABIs, and 404 text/plain "No contract interface data found" otherwise', async () => {
    const ok = await fetch(`${node.url}/v2/contracts/interface/${ADDR}/counter`);
    expect(await ok.json()).toEqual({ functions: [] });
    const missing = await fetch(`${node.url}/v2/contracts/interface/${ADDR}/ghost`);
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toBe('text/plain');
    expect(await missing.text()).toBe('No contract interface data found');
  });

  it('answers /v2/info and 404 for unknown routes', async () => {
    const info = await fetch(`${node.url}/v2/info`);
    expect(await info.json()).toMatchObject({ stacks_tip_height: 55 });
    expect((await fetch(`${node.url}/v3/whatever`)).status).toBe(404);
    expect(node.count('other')).toBe(1);
  });

  it('lets a handler answer depending on the arguments', async () => {
    node.setReadOnly(ADDR, 'counter', 'double', ({ arguments: args }) => ({
      okay: true,
      result: `${args[0]}${args[0]!.slice(2)}`,
    }));
    const res = await post(`/v2/contracts/call-read/${ADDR}/counter/double`, {
      sender: ADDR,
      arguments: ['0xab'],
    });
    expect(await res.json()).toEqual({ okay: true, result: '0xabab' });
  });
});

describe('fake node faults', () => {
  it('applies faults for the next N requests, in the order they were added, then answers normally', async () => {
    node.status5xx(503, { times: 2, retryAfter: 1 });
    node.rateLimit(7, { times: 1 });
    node.garbage({ times: 1 });
    const statuses: number[] = [];
    const r1 = await post(CALL, callBody);
    statuses.push(r1.status);
    expect(r1.headers.get('retry-after')).toBe('1');
    statuses.push((await post(CALL, callBody)).status);
    const limited = await post(CALL, callBody);
    statuses.push(limited.status);
    expect(limited.headers.get('retry-after')).toBe('7');
    expect(limited.headers.get('ratelimit-remaining')).toBe('0');
    const garbage = await post(CALL, callBody);
    statuses.push(garbage.status);
    await expect(garbage.clone().json()).rejects.toThrow();
    statuses.push((await post(CALL, callBody)).status);
    expect(statuses).toEqual([503, 503, 429, 200, 200]);
  });

  it('restricts a fault to one endpoint with `kind`, and keeps a permanent fault until cleared', async () => {
    node.status5xx(500, { kind: 'interface' });
    expect((await post(CALL, callBody)).status).toBe(200);
    expect((await fetch(`${node.url}/v2/contracts/interface/${ADDR}/counter`)).status).toBe(500);
    expect((await fetch(`${node.url}/v2/contracts/interface/${ADDR}/counter`)).status).toBe(500);
    node.clearFaults();
    expect((await fetch(`${node.url}/v2/contracts/interface/${ADDR}/counter`)).status).toBe(200);
  });

  it('gate() holds requests until release(); waitForRequests resolves on arrival', async () => {
    node.gate();
    const replies = Array.from({ length: 3 }, () => post(CALL, callBody).then((r) => r.status));
    await node.waitForRequests(3);
    expect(node.held()).toBe(3);
    let settled = false;
    void Promise.all(replies).then(() => {
      settled = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(false);
    expect(node.release()).toBe(3);
    expect(await Promise.all(replies)).toEqual([200, 200, 200]);
    // The gate is open now: a new request is answered at once.
    expect((await post(CALL, callBody)).status).toBe(200);
  });

  it('waitForRequests counts per kind and can time out', async () => {
    const waiting = node.waitForRequests(2, { kind: 'interface' });
    await post(CALL, callBody);
    await fetch(`${node.url}/v2/contracts/interface/${ADDR}/counter`);
    await fetch(`${node.url}/v2/contracts/interface/${ADDR}/counter`);
    await waiting;
    await expect(node.waitForRequests(10, { timeoutMs: 20 })).rejects.toThrow(/expected 10/);
  });

  it('reset() drops the connection and down() refuses connections until up()', async () => {
    node.reset({ times: 1 });
    await expect(post(CALL, callBody)).rejects.toThrow();
    await node.down();
    await expect(fetch(`${node.url}/v2/info`)).rejects.toThrow();
    await node.up();
    expect((await fetch(`${node.url}/v2/info`)).status).toBe(200);
  });

  it('close() does not wait for hung requests', async () => {
    node.hang();
    const pending = fetch(`${node.url}/v2/info`).catch((err: unknown) => err);
    await node.waitForRequests(1);
    await node.close();
    expect(await pending).toBeInstanceOf(Error);
  });
});
