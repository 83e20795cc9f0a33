/**
 * StacksNodeClient against the fake Stacks node over real sockets: every upstream outcome maps
 * to the documented error, status and details (docs/api.md).
 * Waits between retries are injected (recorded, not slept); per-attempt timeouts are real but
 * short.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Network } from '../../../src/config/index.js';
import { GatewayError } from '../../../src/errors.js';
import type { AttemptEvent } from '../../../src/upstream/attempts.js';
import { TokenBucket } from '../../../src/upstream/budget/local.js';
import type { Budget } from '../../../src/upstream/budget/upstream-budget.js';
import { CALL_READ, INFO, INTERFACE, NODE_ENDPOINTS } from '../../../src/upstream/endpoints.js';
import { StacksNodeClient, type UpstreamConfig } from '../../../src/upstream/stacks-node.js';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';

const ADDR = 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM';
const SENDER = 'ST2CY5V39NHDPWSXMW9QDT3HC3GD6Q6XX4CFRK9AG';
const U5 = '0x0100000000000000000000000000000005';
const COUNTER_ABI = {
  functions: [{ name: 'get-count', access: 'read_only', args: [], outputs: { type: 'uint128' } }],
  variables: [],
  maps: [],
  fungible_tokens: [],
  non_fungible_tokens: [],
  epoch: 'Epoch30',
  clarity_version: 'Clarity2',
};

let node: FakeNode;
const clients: StacksNodeClient[] = [];

beforeAll(async () => {
  node = await startFakeNode();
});
afterAll(async () => {
  await node.close();
});
beforeEach(() => {
  node.clearFaults();
  node.resetStats();
  node.setTipHeight(100);
  node.setAbi(ADDR, 'counter', COUNTER_ABI);
  node.setReadOnly(ADDR, 'counter', 'get-count', { okay: true, result: U5 });
});
afterEach(async () => {
  node.release();
  for (const c of clients.splice(0)) await c.close();
  await node.up();
});

const unlimited = (): Budget => ({
  take: async () => undefined,
  available: () => Number.POSITIVE_INFINITY,
  queued: () => 0,
  close: () => undefined,
});

function makeClient(over: Partial<UpstreamConfig> & { budgets?: Record<Network, Budget> } = {}): {
  client: StacksNodeClient;
  sleeps: number[];
  events: AttemptEvent[];
} {
  const sleeps: number[] = [];
  const events: AttemptEvent[] = [];
  const { budgets, ...config } = over;
  const client = new StacksNodeClient({
    config: {
      upstreamUrls: { mainnet: node.url, testnet: node.url },
      stacksApiKey: undefined,
      upstreamTimeoutMs: 2000,
      upstreamRetries: 2,
      upstreamRetryBaseMs: 100,
      upstreamRetryAfterCapMs: 10_000,
      ...config,
    },
    budgets: budgets ?? { mainnet: unlimited(), testnet: unlimited() },
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    random: () => 0.5,
    onAttempt: (e) => events.push(e),
  });
  clients.push(client);
  return { client, sleeps, events };
}

function getCount(
  client: StacksNodeClient,
  network: Network = 'testnet',
  fn = 'get-count',
  args: string[] = [],
) {
  return callRead(client, network, 'counter', fn, args);
}

/** A read-only call as the read-only service sends it: the call-read descriptor, read for its result. */
function callRead(
  client: StacksNodeClient,
  network: Network,
  contract: string,
  fn: string,
  args: string[] = [],
  tip?: string,
) {
  return client.send(CALL_READ, {
    network,
    params: { address: ADDR, contract, function: fn },
    query: { tip },
    body: JSON.stringify({ sender: SENDER, arguments: args }),
    latest: tip === undefined,
    read: 'result',
  });
}

const abiOf = (client: StacksNodeClient, network: Network, contract: string) =>
  client.send(INTERFACE, { network, params: { address: ADDR, contract }, read: 'abi' });
const infoOf = (client: StacksNodeClient, network: Network) => client.send(INFO, { network, read: 'info' });

async function failure(p: Promise<unknown>): Promise<GatewayError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    return err as GatewayError;
  }
  throw new Error('expected a GatewayError, got success');
}

const CALL_PATH = `/v2/contracts/call-read/${ADDR}/counter/get-count`;

describe('read-only calls', () => {
  it('posts {sender, arguments} as JSON and returns the result with the tip height', async () => {
    node.setTipHeight(4242);
    const { client } = makeClient();
    const res = await callRead(client, 'testnet', 'counter', 'get-count', [
      '0x0100000000000000000000000000000001',
    ]);
    expect(res).toEqual({ result: U5, tipHeight: 4242, upstream: 'testnet' });
    const req = node.lastRequest('call-read')!;
    expect(req.method).toBe('POST');
    expect(req.path).toBe(CALL_PATH);
    expect(req.body).toEqual({ sender: SENDER, arguments: ['0x0100000000000000000000000000000001'] });
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.headers['accept']).toBe('application/json');
  });

  it('passes arguments through so answers can depend on them', async () => {
    node.setReadOnly(ADDR, 'counter', 'echo', ({ arguments: args }) => ({ okay: true, result: args[0]! }));
    const { client } = makeClient();
    await expect(getCount(client, 'testnet', 'echo', ['0x03'])).resolves.toMatchObject({ result: '0x03' });
    await expect(getCount(client, 'testnet', 'echo', ['0x04'])).resolves.toMatchObject({ result: '0x04' });
  });

  it('URL-encodes the function name into the path', async () => {
    node.setReadOnly(ADDR, 'counter', 'is-ok?', { okay: true, result: '0x03' });
    node.setReadOnly(ADDR, 'counter', 'a/b<=c', { okay: true, result: '0x04' });
    const { client } = makeClient();
    await expect(getCount(client, 'testnet', 'is-ok?')).resolves.toMatchObject({ result: '0x03' });
    expect(node.lastRequest()!.url).toBe(`/v2/contracts/call-read/${ADDR}/counter/is-ok%3F`);
    expect(node.lastRequest()!.functionName).toBe('is-ok?');
    await expect(getCount(client, 'testnet', 'a/b<=c')).resolves.toMatchObject({ result: '0x04' });
    expect(node.lastRequest()!.url).toBe(`/v2/contracts/call-read/${ADDR}/counter/a%2Fb%3C%3Dc`);
  });

  it('sends ?tip= when given', async () => {
    node.setReadOnly(ADDR, 'counter', 'at-tip', ({ tip }) =>
      tip === 'abcd' ? { okay: true, result: '0x07' } : { status: 404, body: 'No such block' },
    );
    const { client } = makeClient();
    const ok = await callRead(client, 'testnet', 'counter', 'at-tip', [], 'abcd');
    expect(ok.result).toBe('0x07');
    expect(node.lastRequest()!.query).toEqual({ tip: 'abcd' });
    // An unknown tip is a 404 from the node: with no other upstream to ask, UPSTREAM_API_ERROR
    // 404 naming the tip (docs/freshness.md), carrying the upstream status and body.
    const err = await failure(callRead(client, 'testnet', 'counter', 'at-tip', [], 'ffff'));
    expect(err.status).toBe(404);
    expect(err.code).toBe('UPSTREAM_API_ERROR');
    expect(err.details).toMatchObject({
      tip: 'ffff',
      upstreamStatus: 404,
      retryable: false,
    });
    // The node's own words stay out of what a client sees (they are logged at debug only).
    expect(err.details).not.toHaveProperty('upstreamBody');
    expect(err.upstreamText).toBe('No such block');
    expect(node.count('call-read')).toBe(2);
  });

  it('okay:false is UPSTREAM_API_ERROR 422 with the cause, not retried', async () => {
    node.setReadOnly(ADDR, 'counter', 'boom', { okay: false, cause: 'ArithmeticUnderflow' });
    const { client } = makeClient();
    const err = await failure(getCount(client, 'testnet', 'boom'));
    expect(err.code).toBe('UPSTREAM_API_ERROR');
    expect(err.status).toBe(422);
    expect(err.details).toEqual({ cause: 'ArithmeticUnderflow', retryable: false });
    expect(node.count('call-read')).toBe(1);
  });

  it('an undefined function (okay:false UndefinedFunction) is 422', async () => {
    const { client } = makeClient();
    const err = await failure(getCount(client, 'testnet', 'nope'));
    expect(err.status).toBe(422);
    expect(err.details?.['cause']).toContain('UndefinedFunction');
  });

  it('an unknown contract (okay:false NoSuchContract) is UPSTREAM_API_ERROR 404', async () => {
    const { client } = makeClient();
    const err = await failure(callRead(client, 'testnet', 'ghost', 'get-count'));
    expect(err.code).toBe('UPSTREAM_API_ERROR');
    expect(err.status).toBe(404);
    expect(err.details).toEqual({ cause: `RuntimeCheck(NoSuchContract("${ADDR}.ghost"))`, retryable: false });
    expect(err.message).toContain(`${ADDR}.ghost`);
  });

  it('a 400 from the node (undeserializable argument) is a final 502 with the upstream status and body', async () => {
    const { client } = makeClient();
    const err = await failure(getCount(client, 'testnet', 'get-count', ['zz']));
    expect(err.code).toBe('UPSTREAM_API_ERROR');
    expect(err.status).toBe(502);
    expect(err.details).toMatchObject({ upstreamStatus: 400, retryable: false });
    expect(err.details?.['reason']).toBe('the upstream refused the request as malformed');
    expect(JSON.stringify(err.details)).not.toContain('Failed to deserialize');
    expect(err.upstreamText).toContain('Failed to deserialize');
    expect(node.count()).toBe(1);
  });

  it('truncates a long upstream error body to about 500 characters', async () => {
    node.httpError(403, 'x'.repeat(5000), { times: 1 });
    const { client } = makeClient();
    const err = await failure(getCount(client));
    const body = err.upstreamText as string;
    expect(body.startsWith('xxxx')).toBe(true);
    expect(body.length).toBeGreaterThanOrEqual(500);
    expect(body.length).toBeLessThanOrEqual(501);
    expect(err.details).toMatchObject({ upstreamStatus: 403 });
  });

  it('5xx still failing after the retries is 502 retryable with the attempt count', async () => {
    node.status5xx(500);
    const { client, sleeps } = makeClient({ upstreamRetries: 2 });
    const err = await failure(getCount(client));
    expect(err.code).toBe('UPSTREAM_API_ERROR');
    expect(err.status).toBe(502);
    expect(err.details).toMatchObject({ retryable: true, attempts: 3, upstreamStatus: 500 });
    expect(node.count('call-read')).toBe(3);
    expect(sleeps).toEqual([75, 150]);
    expect(err.message).toContain('testnet');
    expect(err.message).toContain(CALL_PATH);
  });

  it('recovers when a 5xx is followed by a good answer', async () => {
    node.status5xx(502, { times: 1 });
    node.status5xx(503, { times: 1, retryAfter: 2 });
    const { client, sleeps, events } = makeClient({ upstreamRetries: 3 });
    await expect(getCount(client)).resolves.toMatchObject({ result: U5 });
    expect(node.count('call-read')).toBe(3);
    expect(sleeps).toEqual([75, 2000]);
    expect(events.map((e) => [e.outcome, e.status])).toEqual([
      ['server-error', 502],
      ['server-error', 503],
      ['ok', 200],
    ]);
  });

  it('429 still failing after the retries is RATE_LIMIT_EXCEEDED with retryAfter and Retry-After', async () => {
    node.rateLimit(3);
    const { client, sleeps } = makeClient({ upstreamRetries: 2 });
    const err = await failure(getCount(client));
    expect(err.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(err.status).toBe(429);
    expect(err.details).toMatchObject({ retryAfter: 3, retryable: true, attempts: 3 });
    expect(err.retryAfter).toBe(3);
    expect(sleeps).toEqual([3000, 3000]);
    expect(node.count()).toBe(3);
  });

  it('a hung upstream ends in TIMEOUT 504 after the retries', async () => {
    node.hang();
    const { client, events } = makeClient({ upstreamTimeoutMs: 150, upstreamRetries: 1 });
    const started = performance.now();
    const err = await failure(getCount(client));
    expect(err.code).toBe('TIMEOUT');
    expect(err.status).toBe(504);
    expect(err.details).toMatchObject({ timeoutMs: 150, retryable: true, attempts: 2 });
    expect(node.count()).toBe(2);
    expect(events.map((e) => e.outcome)).toEqual(['timeout', 'timeout']);
    for (const e of events) expect(e.durationMs).toBeGreaterThanOrEqual(140);
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it('the timeout also bounds the body read (headers arrive, the body stalls)', async () => {
    node.stallBody();
    const { client } = makeClient({ upstreamTimeoutMs: 150, upstreamRetries: 0 });
    const err = await failure(getCount(client));
    expect(err.code).toBe('TIMEOUT');
    expect(err.details).toMatchObject({ attempts: 1, timeoutMs: 150 });
  });

  it('a slow answer within the timeout succeeds', async () => {
    node.delay(50, { times: 1 });
    const { client } = makeClient({ upstreamTimeoutMs: 2000, upstreamRetries: 0 });
    await expect(getCount(client)).resolves.toMatchObject({ result: U5 });
  });

  it('one timed-out attempt followed by a good one succeeds', async () => {
    node.hang({ times: 1 });
    const { client } = makeClient({ upstreamTimeoutMs: 150, upstreamRetries: 1 });
    await expect(getCount(client)).resolves.toMatchObject({ result: U5 });
    expect(node.count()).toBe(2);
  });

  it('a reset connection is retried and ends in 502 retryable with the socket error as cause', async () => {
    node.reset();
    const { client } = makeClient({ upstreamRetries: 1 });
    const err = await failure(getCount(client));
    expect(err.code).toBe('UPSTREAM_API_ERROR');
    expect(err.status).toBe(502);
    expect(err.details).toMatchObject({ retryable: true, attempts: 2, cause: 'ECONNRESET' });
    expect(node.count()).toBe(2);
  });

  it('a refused connection is retried and ends in 502 retryable, cause ECONNREFUSED; up() heals it', async () => {
    await node.down();
    const { client, events } = makeClient({ upstreamRetries: 2 });
    const err = await failure(getCount(client));
    expect(err.code).toBe('UPSTREAM_API_ERROR');
    expect(err.status).toBe(502);
    expect(err.details).toMatchObject({ retryable: true, attempts: 3, cause: 'ECONNREFUSED' });
    expect(events.map((e) => e.outcome)).toEqual([
      'connection-error',
      'connection-error',
      'connection-error',
    ]);
    expect(node.count()).toBe(0);
    await node.up();
    await expect(getCount(client)).resolves.toMatchObject({ result: U5 });
  });

  it('a 200 with a non-JSON body is 502, marked retryable but not retried', async () => {
    node.garbage();
    const { client } = makeClient({ upstreamRetries: 3 });
    const err = await failure(getCount(client));
    expect(err.code).toBe('UPSTREAM_API_ERROR');
    expect(err.status).toBe(502);
    expect(err.details).toMatchObject({ retryable: true, reason: 'malformed', upstreamStatus: 200 });
    expect(node.count()).toBe(1);
  });

  it('okay:true with a result that is not 0x hex is a final 502 malformed', async () => {
    node.setReadOnly(ADDR, 'counter', 'weird', { okay: true, result: 'u5' });
    const { client } = makeClient();
    const err = await failure(getCount(client, 'testnet', 'weird'));
    expect(err.status).toBe(502);
    expect(err.details).toMatchObject({ retryable: false, reason: 'malformed' });
    expect(node.count()).toBe(1);
  });
});

describe('contract interface and info', () => {
  it('returns the parsed ABI', async () => {
    const { client } = makeClient();
    await expect(abiOf(client, 'mainnet', 'counter')).resolves.toEqual({
      abi: COUNTER_ABI,
      tipHeight: 100,
      upstream: 'mainnet',
    });
    expect(node.lastRequest()!.url).toBe(`/v2/contracts/interface/${ADDR}/counter`);
    expect(node.lastRequest()!.method).toBe('GET');
  });

  it('an unknown contract (404 text/plain) is UPSTREAM_API_ERROR 404, not retried', async () => {
    const { client } = makeClient({ upstreamRetries: 3 });
    const err = await failure(abiOf(client, 'mainnet', 'ghost'));
    expect(err.code).toBe('UPSTREAM_API_ERROR');
    expect(err.status).toBe(404);
    expect(err.details).toEqual({ retryable: false, upstreamStatus: 404 });
    expect(err.message).toMatch(/not found/);
    expect(err.message).toContain(`${ADDR}.ghost`);
    expect(err.message).toContain('mainnet');
    expect(node.count('interface')).toBe(1);
  });

  it('an ABI without a functions array is 502 malformed', async () => {
    node.setAbi(ADDR, 'odd', { functions: 'nope' });
    const { client } = makeClient();
    const err = await failure(abiOf(client, 'testnet', 'odd'));
    expect(err.status).toBe(502);
    expect(err.details).toMatchObject({ reason: 'malformed' });
  });

  it('a 404 that is not the "no interface" answer is a 502, not "contract not found"', async () => {
    node.httpError(404, '<html>Not Found</html>', { times: 1, contentType: 'text/html' });
    const { client } = makeClient();
    const err = await failure(abiOf(client, 'testnet', 'counter'));
    expect(err.status).toBe(502);
    expect(err.details).toMatchObject({ upstreamStatus: 404 });
  });

  it('/v2/info read for the gateway returns the tip', async () => {
    node.setTipHeight(321);
    const { client } = makeClient();
    await expect(infoOf(client, 'testnet')).resolves.toMatchObject({
      info: { stacks_tip_height: 321 },
      tipHeight: 321,
      upstream: 'testnet',
    });
    expect(node.lastRequest()!.kind).toBe('info');
  });
});

describe('one client for every route of the endpoint table', () => {
  const TIP = 'ab'.repeat(32);

  it("sends each descriptor by its own method, path and query, and passes the node's answer through", async () => {
    const { client, events } = makeClient({ upstreamRetries: 0 });
    for (const endpoint of NODE_ENDPOINTS) {
      const params = endpoint.example.params ?? {};
      const answer = await client.send(endpoint, {
        network: 'testnet',
        params,
        query: { tip: TIP, proof: '0' },
        ...(endpoint.body === 'none' ? {} : { body: JSON.stringify(endpoint.example.body) }),
        latest: false,
      });
      const req = node.lastRequest()!;
      const path = endpoint.path.replace(/:([A-Za-z]+)/g, (_, name: string) => params[name]!);
      // Only the query parameters the descriptor names, in its order.
      const query = endpoint.query.map((name) => (name === 'tip' ? `tip=${TIP}` : 'proof=0')).join('&');
      expect(req.method, endpoint.name).toBe(endpoint.method);
      expect(req.url, endpoint.name).toBe(query === '' ? path : `${path}?${query}`);
      // Whatever it said: a client's answer is the node's own status and body.
      expect(answer).toMatchObject({ status: expect.any(Number), body: expect.any(String) });
    }
    // A client's request is counted as a node route's, whichever route it is.
    expect(new Set(events.map((e) => e.kind))).toEqual(new Set(['node']));
  });

  it('reads call-read, the interface and /v2/info for the gateway, named by their route', async () => {
    const { client, events } = makeClient();
    await getCount(client);
    await abiOf(client, 'testnet', 'counter');
    await infoOf(client, 'testnet');
    expect(events.map((e) => e.kind)).toEqual(['call-read', 'interface', 'info']);
    // The same /v2/info for a client is the node's answer as it gave it.
    const asGiven = await client.send(INFO, { network: 'testnet' });
    expect(asGiven).toMatchObject({ status: 200, contentType: 'application/json' });
    expect(JSON.parse(asGiven.body)).toMatchObject({ stacks_tip_height: 100 });
  });

  it('refuses to read a route as what its descriptor does not say it is', async () => {
    const { client } = makeClient();
    await expect(client.send(INFO, { network: 'testnet', read: 'abi' })).rejects.toThrow(TypeError);
    expect(node.count()).toBe(0);
  });
});

describe('transport', () => {
  it('sends x-api-key only when configured', async () => {
    const withKey = makeClient({ stacksApiKey: 'secret-key' }).client;
    await getCount(withKey);
    expect(node.lastRequest()!.headers['x-api-key']).toBe('secret-key');
    const without = makeClient().client;
    await getCount(without);
    expect(node.lastRequest()!.headers).not.toHaveProperty('x-api-key');
  });

  it('reuses keep-alive connections', async () => {
    const { client } = makeClient();
    for (let i = 0; i < 6; i++) await getCount(client);
    await abiOf(client, 'testnet', 'counter');
    await infoOf(client, 'testnet');
    expect(node.total).toBe(8);
    // Sequential requests share pooled sockets. (undici's Pool may open a second socket when the
    // next request is dispatched before the first socket is marked free again; never one each.)
    expect(node.connections()).toBeLessThanOrEqual(2);
    expect(node.connections()).toBeLessThan(node.total);
    expect(new Set(node.requests.map((r) => r.connection)).size).toBe(node.connections());
  });

  it('prefixes a base URL path', async () => {
    const { client } = makeClient({ upstreamUrls: { mainnet: `${node.url}/proxy`, testnet: node.url } });
    const err = await failure(infoOf(client, 'mainnet'));
    expect(node.lastRequest()!.url).toBe('/proxy/v2/info');
    expect(err.details).toMatchObject({ upstreamStatus: 404 });
  });

  it('close() aborts in-flight attempts and refuses later calls', async () => {
    node.hang();
    const { client } = makeClient({ upstreamTimeoutMs: 10_000, upstreamRetries: 3 });
    const pending = failure(getCount(client));
    await node.waitForRequests(1);
    await client.close();
    const err = await pending;
    expect(err.code).toBe('SERVICE_UNAVAILABLE');
    expect(err.status).toBe(503);
    expect(err.details).toMatchObject({ retryable: true, reason: 'closed' });
    expect(node.count()).toBe(1);
    await expect(getCount(client)).rejects.toMatchObject({ details: { reason: 'closed' } });
  });
});

describe('budget', () => {
  it('every attempt takes a token from its network; an exhausted budget stops before the node', async () => {
    const testnet = new TokenBucket({ capacity: 2, refillPerMinute: 2, queueTimeoutMs: 0, label: 'testnet' });
    const mainnet = new TokenBucket({ capacity: 5, refillPerMinute: 5, queueTimeoutMs: 0, label: 'mainnet' });
    node.status5xx(503, { times: 1 });
    const { client } = makeClient({ budgets: { mainnet, testnet }, upstreamRetries: 3 });
    await expect(getCount(client)).resolves.toMatchObject({ result: U5 }); // 503 then 200: two tokens
    expect(testnet.available()).toBe(0);
    const err = await failure(getCount(client));
    expect(err.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(err.status).toBe(429);
    expect(err.retryAfter).toBe(err.details?.['retryAfter']);
    expect(err.message).toContain(`testnet POST ${CALL_PATH}`);
    expect(node.count()).toBe(2);
    await expect(getCount(client, 'mainnet')).resolves.toMatchObject({ result: U5 });
    expect(mainnet.available()).toBe(4);
    testnet.close();
    mainnet.close();
  });
});
