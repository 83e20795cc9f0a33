/**
 * The typed client (client/, the package clarity-cache-client) against the real gateway over real HTTP, in front of the
 * fault-injecting fake node: data unwrapped, one error class per code, retries of 429 and
 * transient failures honouring Retry-After, and every input form of the read-only endpoint.
 */
import { Cl } from '@stacks/transactions';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  ClarityCacheError,
  ContractError,
  createClient,
  InvalidArgumentsError,
  InvalidContractAddressError,
  InvalidFunctionError,
  InvalidHexStringError,
  NetworkError,
  RateLimitExceededError,
  type RetryEvent,
  UpstreamApiError,
  ValidationError,
} from '../../client/src/index.js';
import { type FakeNode, startFakeNode } from '../support/fake-node.js';
import { hex, MAINNET_ADDR, OTHER_ADDR, SAMPLE_ABI } from '../support/fixtures.js';
import { type RunningGateway, startGateway, testEnv } from '../support/gateway.js';
import { freePort } from '../support/process.js';

let node: FakeNode;
let gw: RunningGateway;
const DEMO = `${MAINNET_ADDR}.demo`;

beforeAll(async () => {
  node = await startFakeNode({ tipHeight: 777 });
  node.setAbi(MAINNET_ADDR, 'demo', SAMPLE_ABI);
  node.setReadOnly(MAINNET_ADDR, 'demo', 'get-balance', (call) => ({
    okay: true,
    result: hex(Cl.ok(Cl.uint(call.arguments.length === 1 ? 1000 : 0))),
  }));
  node.setReadOnly(MAINNET_ADDR, 'demo', 'typed', { okay: true, result: hex(Cl.bool(true)) });
  node.setReadOnly(MAINNET_ADDR, 'demo', 'fails', { okay: true, result: hex(Cl.error(Cl.uint(7))) });
  // No upstream retries: each client attempt maps to exactly one upstream attempt.
  gw = await startGateway(testEnv(node.url, { UPSTREAM_RETRIES: '0' }));
});

afterAll(async () => {
  await gw?.close();
  await node?.close();
});

afterEach(() => node.clearFaults());

describe('createClient against the gateway', () => {
  it('returns the decoded result of a read-only call, and its cache headers through raw', async () => {
    const client = createClient({ baseUrl: gw.url });
    expect(await client.readOnly(DEMO, 'get-balance', [{ type: 'principal', value: MAINNET_ADDR }])).toBe(
      '1000',
    );
    const again = await client.raw.readOnly(DEMO, 'get-balance', [
      { type: 'principal', value: MAINNET_ADDR },
    ]);
    expect(again.status).toBe(200);
    expect(again.envelope).toEqual({ success: true, data: '1000' });
    expect(again.meta.cacheStatus).toMatch(/hit/);
    expect(again.meta.age).toBeGreaterThanOrEqual(0);
    // The tip-height header comes with docs/freshness.md; read when the gateway sends it.
    const tip = again.headers.get('x-canonical-stacks-tip-height');
    expect(again.meta.tipHeight).toBe(tip === null ? undefined : Number(tip));
  });

  it('accepts native stacks.js values (bigint integers), hex and simplified objects alike', async () => {
    const client = createClient({ baseUrl: `${gw.url}/` });
    const native = [
      Cl.int(-5n),
      Cl.bufferFromHex('01020304'),
      Cl.list([Cl.uint(1n), Cl.uint(2n ** 100n)]),
      Cl.some(Cl.bool(true)),
      Cl.tuple({ a: Cl.uint(1n), s: Cl.stringAscii('x') }),
    ];
    expect(await client.readOnly(DEMO, 'typed', native, { cacheControl: { bustCache: true } })).toBe(true);
    expect(await client.readOnly(DEMO, 'typed', native.map(hex))).toBe(true);
    const lastArgs = node.lastRequest('call-read')?.body as { arguments: string[] };
    expect(lastArgs.arguments).toEqual(native.map(hex));
  });

  it('returns the ABI, the known contracts and decoded values', async () => {
    const client = createClient({ baseUrl: gw.url });
    const abi = await client.abi(DEMO);
    expect(abi.functions.map((f) => f.name)).toContain('get-balance');
    const known = await client.knownContracts();
    expect(known.contracts.cached).toContainEqual(
      expect.objectContaining({ contractAddress: MAINNET_ADDR, contractName: 'demo' }),
    );
    expect(await client.decode(hex(Cl.stringAscii('hello')))).toEqual({
      original: hex(Cl.stringAscii('hello')),
      decoded: 'hello',
    });
    expect((await client.decode({ type: 'uint', value: '42' })).decoded).toBe(42);
  });

  it('pages the known contracts with limit and cursor', async () => {
    const client = createClient({ baseUrl: gw.url });
    for (const name of ['page-a', 'page-b', 'page-c']) {
      node.setAbi(MAINNET_ADDR, name, SAMPLE_ABI);
      await client.abi(`${MAINNET_ADDR}.${name}`);
    }
    const all = (await client.knownContracts()).contracts.cached.map((c) => c.contractName);
    expect(all.length).toBeGreaterThanOrEqual(3);
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages < all.length + 1; pages++) {
      const page = await client.knownContracts({ limit: 2, ...(cursor === undefined ? {} : { cursor }) });
      expect(page.contracts.cached.length).toBeLessThanOrEqual(2);
      seen.push(...page.contracts.cached.map((c) => c.contractName));
      cursor = page.nextCursor;
      if (cursor === undefined) break;
    }
    expect(seen).toEqual(all);
    await expect(client.knownContracts({ limit: 0 })).rejects.toBeInstanceOf(ValidationError);
  });

  it('throws one error class per code, with code, status, details and id', async () => {
    const client = createClient({ baseUrl: gw.url });
    const err = await client.readOnly(DEMO, 'fails', []).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ContractError);
    expect(err).toBeInstanceOf(ClarityCacheError);
    expect(err).toMatchObject({ code: 'CONTRACT_ERROR', status: 422, name: 'ContractError' });
    expect((err as ContractError).details).toMatchObject({ value: '7' });
    expect((err as ContractError).id).toMatch(/^err_/);

    await expect(client.readOnly(DEMO, 'nope', [])).rejects.toBeInstanceOf(InvalidFunctionError);
    await expect(client.readOnly(DEMO, 'get-balance', [])).rejects.toBeInstanceOf(InvalidArgumentsError);
    await expect(client.abi('SPNOTANADDRESS.demo')).rejects.toBeInstanceOf(InvalidContractAddressError);
    await expect(client.decode('0xzz')).rejects.toMatchObject({ code: 'INVALID_HEX_STRING', status: 400 });
    await expect(client.decode('0xzz')).rejects.toBeInstanceOf(InvalidHexStringError);
    await expect(client.decode({ type: 'float', value: '1' })).rejects.toBeInstanceOf(ValidationError);
    // Not a transient failure: an unknown contract is not retried.
    await expect(client.abi(`${MAINNET_ADDR}.missing`)).rejects.toMatchObject({
      code: 'UPSTREAM_API_ERROR',
      status: 404,
    });
  });

  it('refuses a contract id without a dot before any request', async () => {
    const before = node.count();
    const client = createClient({ baseUrl: gw.url });
    await expect(client.readOnly('no-dot', 'f', [])).rejects.toBeInstanceOf(ValidationError);
    expect(node.count()).toBe(before);
  });

  it('retries a 429 after the Retry-After the gateway sent', async () => {
    node.rateLimit(1, { times: 1, kind: 'call-read' });
    const retries: RetryEvent[] = [];
    const client = createClient({ baseUrl: gw.url, onRetry: (e) => retries.push(e) });
    const value = await client.readOnly(DEMO, 'get-balance', [Cl.principal(MAINNET_ADDR)], {
      cacheControl: { bustCache: true },
    });
    expect(value).toBe('1000');
    expect(retries).toEqual([{ retry: 1, delayMs: 1000, status: 429, code: 'RATE_LIMIT_EXCEEDED' }]);
  });

  it('retries transient upstream failures with backoff, up to `retries` times', async () => {
    node.status5xx(503, { times: 2, kind: 'call-read' });
    const retries: RetryEvent[] = [];
    const client = createClient({
      baseUrl: gw.url,
      retries: { retries: 2, baseDelayMs: 5 },
      onRetry: (e) => retries.push(e),
    });
    const fresh = { cacheControl: { bustCache: true } };
    expect(await client.readOnly(DEMO, 'get-balance', [Cl.principal(MAINNET_ADDR)], fresh)).toBe('1000');
    expect(retries.map((r) => [r.retry, r.status, r.code])).toEqual([
      [1, 502, 'UPSTREAM_API_ERROR'],
      [2, 502, 'UPSTREAM_API_ERROR'],
    ]);

    node.status5xx(503, { times: 3, kind: 'call-read' });
    const noRetry = createClient({ baseUrl: gw.url, retries: 0 });
    await expect(
      noRetry.readOnly(DEMO, 'get-balance', [Cl.principal(MAINNET_ADDR)], fresh),
    ).rejects.toBeInstanceOf(UpstreamApiError);
  });

  it('does not wait for a Retry-After longer than maxDelayMs: it throws at once', async () => {
    node.rateLimit(3600, { kind: 'call-read' });
    const retries: RetryEvent[] = [];
    const client = createClient({
      baseUrl: gw.url,
      retries: { retries: 3, maxDelayMs: 5000 },
      onRetry: (e) => retries.push(e),
    });
    // An argument no other test uses: no other call can join this hung one.
    const err = await client
      .readOnly(DEMO, 'get-balance', [Cl.principal(OTHER_ADDR)], { cacheControl: { bustCache: true } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitExceededError);
    expect((err as RateLimitExceededError).status).toBe(429);
    expect(retries).toEqual([]);
  });

  it('throws NetworkError when nothing answers, after its retries', async () => {
    const port = await freePort();
    const retries: RetryEvent[] = [];
    const client = createClient({
      baseUrl: `http://127.0.0.1:${port}`,
      retries: { retries: 1, baseDelayMs: 1 },
      onRetry: (e) => retries.push(e),
    });
    const err = await client.knownContracts().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NetworkError);
    expect(err).toMatchObject({ code: 'NETWORK_ERROR', status: 0 });
    expect(retries).toHaveLength(1);
  });

  it('gives up an attempt after timeoutMs', async () => {
    node.gate({ kind: 'call-read' });
    const client = createClient({ baseUrl: gw.url, timeoutMs: 300, retries: 0 });
    // An argument no other test uses: no other call joins this held one.
    const args = [Cl.principal(OTHER_ADDR)];
    // The upstream holds the call; without the client's own timeout this would wait for the
    // gateway's upstream timeout (2 s in testEnv) and end as its TIMEOUT (504).
    const err = await client.readOnly(DEMO, 'get-balance', args).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NetworkError);
    expect((err as NetworkError).message).toMatch(/no answer within 300 ms$/);
    // Let the held call finish, and wait for it (the same call joins it or hits its result),
    // so that nothing is left in flight.
    node.clearFaults();
    node.release();
    expect(await createClient({ baseUrl: gw.url }).readOnly(DEMO, 'get-balance', args)).toBe('1000');
  });

  it('uses the fetch it is given', async () => {
    const seen: string[] = [];
    const client = createClient({
      baseUrl: gw.url,
      fetch: (input, init) => {
        seen.push(String(input));
        return fetch(input, init);
      },
    });
    await client.knownContracts();
    expect(seen).toEqual([`${gw.url}/contract-calls/known-contracts`]);
  });
});
