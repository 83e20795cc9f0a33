/**
 * Fuzzing every public route over raw sockets (fast-check): random methods, paths (valid and
 * broken addresses, `addr.name`, percent-encoding, trailing slashes, queries), headers and
 * bodies. Every answer must be an envelope with a documented code and status, and nothing
 * malformed may reach the upstream (checked on the fake node's request log).
 */
import { Cl } from '@stacks/transactions';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  decodeClarityHex,
  isValidContractName,
  isValidFunctionName,
  principalProblem,
} from '../../../src/clarity/index.js';
import { ERROR_CATALOGUE, type ErrorCode } from '../../../src/errors.js';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { hex, MAINNET_ADDR, SAMPLE_ABI, TESTNET_ADDR } from '../../support/fixtures.js';
import { type RunningGateway, startGateway, testEnv } from '../../support/gateway.js';
import { type RawResponse, rawExchange } from '../../support/raw-http.js';

let node: FakeNode;
let gw: RunningGateway;

beforeAll(async () => {
  node = await startFakeNode();
  for (const addr of [MAINNET_ADDR, TESTNET_ADDR]) {
    node.setAbi(addr, 'demo', SAMPLE_ABI);
    node.setReadOnly(addr, 'demo', 'get-info', { okay: true, result: hex(Cl.uint(1)) });
    node.setReadOnly(addr, 'demo', 'get-balance', { okay: true, result: hex(Cl.ok(Cl.uint(5))) });
    node.setReadOnly(addr, 'demo', 'typed', { okay: true, result: hex(Cl.bool(true)) });
  }
  gw = await startGateway(
    testEnv(node.url, {
      UPSTREAM_RETRIES: '0',
      UPSTREAM_TIMEOUT_MS: '500',
      // Random bytes can look like an unfinished request: bound the wait (the answer is a 408).
      HTTP_HEADERS_TIMEOUT_MS: '1000',
      HTTP_REQUEST_TIMEOUT_MS: '1000',
    }),
  );
});

afterAll(async () => {
  await gw?.close();
  await node?.close();
});

// --- generators ---

const junk = fc.string({
  unit: fc.constantFrom(...'abcXYZ019-_.~!$&\'()*+,;=:@%/?#[]{}|\\^`"<>'.split('')),
  maxLength: 20,
});
const percentJunk = fc.constantFrom('%ZZ', '%', '%4', '%E0%A4%A', '%00', '%2F', '%2E', '%C0%AF', '%FF');
// Valid pieces are weighted up, so that a fair share of the random requests is well-formed
// enough to reach the upstream, where the request log is checked.
const address = fc.oneof(
  { arbitrary: fc.constantFrom(MAINNET_ADDR, TESTNET_ADDR), weight: 4 },
  fc.constantFrom(MAINNET_ADDR.toLowerCase(), `${MAINNET_ADDR.slice(0, -1)}X`, 'SP', ''),
  junk,
);
const contractName = fc.oneof(
  { arbitrary: fc.constant('demo'), weight: 4 },
  fc.constantFrom('nope', `a${'b'.repeat(127)}`, `a${'b'.repeat(128)}`, '1bad'),
  junk,
);
const functionName = fc.oneof(
  { arbitrary: fc.constantFrom('get-info', 'get-balance', 'typed'), weight: 4 },
  fc.constantFrom('secret', 'transfer', 'nope'),
  junk,
);
const segment = fc.oneof(junk, percentJunk, fc.constant(''));

const path = fc.oneof(
  fc
    .tuple(address, contractName, functionName)
    .map(([a, c, f]) => `/contract-calls/read-only/${a}/${c}/${f}`),
  fc
    .tuple(address, contractName, functionName)
    .map(([a, c, f]) => `/contract-calls/read-only/${a}.${c}/${f}`),
  fc.tuple(address, contractName).map(([a, c]) => `/contract-calls/abi/${a}/${c}`),
  fc.tuple(address, contractName).map(([a, c]) => `/contract-calls/abi/${a}.${c}`),
  fc.constantFrom(
    '/contract-calls/decode-clarity-value',
    '/contract-calls/known-contracts',
    '/contract-calls',
    '/',
    '/health',
    '/ready',
  ),
  fc.array(segment, { maxLength: 5 }).map((segs) => `/${segs.join('/')}`),
);
const query = fc.oneof(
  fc.constant(''),
  fc.constantFrom(
    '?network=mainnet',
    '?network=testnet',
    '?network=devnet',
    '?bustCache=true',
    '?bustCache=1',
    '?x=1&y',
  ),
  junk.map((j) => `?${j}`),
);
const trailing = fc.constantFrom('', '', '/');

const clarityArg: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.record({
      type: fc.constantFrom(
        'uint',
        'int',
        'bool',
        'principal',
        'buffer',
        'string',
        'stringUtf8',
        'none',
        'foo',
        'constructor',
      ),
      value: fc.oneof(
        fc.string({ maxLength: 12 }),
        fc.integer(),
        fc.boolean(),
        fc.constant(MAINNET_ADDR),
        fc.constant('0x01'),
      ),
    }),
    fc.record({ type: fc.constantFrom('list', 'some', 'ok', 'err', 'tuple'), value: tie('value') }),
    fc.record({ type: fc.constant('list'), value: fc.array(tie('value'), { maxLength: 3 }) }),
    fc.constantFrom('0x0100000000000000000000000000000005', '0x', '0x0', '0xzz', 'hello', hex(Cl.int(-1))),
    fc.anything({ maxDepth: 2 }),
  ),
})).value;

const body = fc.oneof(
  fc.constant(undefined),
  fc
    .record(
      {
        functionArgs: fc.oneof(fc.array(clarityArg, { maxLength: 5 }), fc.anything({ maxDepth: 1 })),
        clarityValue: clarityArg,
        network: fc.constantFrom('mainnet', 'testnet', 'devnet', 7),
        senderAddress: fc.oneof(fc.constant(MAINNET_ADDR), junk),
        cacheControl: fc.oneof(
          fc.record(
            { bustCache: fc.boolean(), ttl: fc.oneof(fc.integer(), fc.double()) },
            { requiredKeys: [] },
          ),
          fc.anything({ maxDepth: 1 }),
        ),
        strictJsonCompat: fc.anything({ maxDepth: 0 }),
      },
      { requiredKeys: [] },
    )
    .map((o) => JSON.stringify(o)),
  fc.string({ maxLength: 40 }),
  fc.constantFrom('{', '[]', 'null', '{"functionArgs":', '\u0000\u0001', '{"clarityValue":"0x0d00000001"}'),
);

const headers = fc.record(
  {
    'Content-Type': fc.constantFrom(
      'application/json',
      'text/plain',
      'application/xml',
      'application/x-www-form-urlencoded',
      'application/json; charset=utf-8',
      ';;;',
      '',
    ),
    Origin: fc.constantFrom('https://app.example', 'null', 'x'),
    Accept: fc.constantFrom('text/html', '*/*', 'application/json'),
    'Access-Control-Request-Method': fc.constantFrom('POST', 'GET', 'DELETE'),
    'X-Fuzz': junk,
  },
  { requiredKeys: [] },
);

const method = fc.oneof(
  { arbitrary: fc.constantFrom('GET', 'POST'), weight: 4 },
  fc.constantFrom('PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'TRACE', 'FOO'),
);

function build(m: string, p: string, h: Record<string, string>, b: string | undefined): string {
  const lines = [`${m} ${p} HTTP/1.1`, 'Host: localhost', 'Connection: close'];
  for (const [k, v] of Object.entries(h)) if (v !== '') lines.push(`${k}: ${v}`);
  if (b !== undefined) lines.push(`Content-Length: ${Buffer.byteLength(b)}`);
  return `${lines.join('\r\n')}\r\n\r\n${b ?? ''}`;
}

/** Why `res` is not a documented answer, or undefined when it is. */
function problem(m: string, res: RawResponse): string | undefined {
  const status = res.status;
  if (status === undefined) return `no HTTP answer: ${JSON.stringify(res.raw.slice(0, 200))}`;
  if (status === 204) return m === 'OPTIONS' && res.bodyText === '' ? undefined : 'unexpected 204';
  // HEAD answers carry no body, except a parser-level refusal, which closes the connection.
  if (m === 'HEAD' && res.bodyText === '') return undefined;
  // Pages for people (the /ready status page for a browser's Accept: text/html) are HTML.
  if (
    status === 200 &&
    (res.headers['content-type'] ?? '').startsWith('text/html') &&
    res.bodyText.startsWith('<!doctype html>')
  )
    return undefined;
  const body = res.body;
  if (typeof body !== 'object' || body === null) return `not JSON: ${res.bodyText.slice(0, 200)}`;
  if (status < 400) {
    if (body.success !== true || !('data' in body)) return 'success status without a success envelope';
    return status === 200 || status === 303 ? undefined : `undocumented success status ${status}`;
  }
  const error = body.error;
  if (body.success !== false || typeof error !== 'object' || error === null)
    return 'error without an error envelope';
  if (typeof error.id !== 'string' || typeof error.message !== 'string')
    return 'error record without id/message';
  const entry = ERROR_CATALOGUE[error.code as ErrorCode];
  if (entry === undefined) return `undocumented code ${error.code}`;
  if (error.code === 'INTERNAL_ERROR') return `INTERNAL_ERROR: ${error.message}`;
  // The statuses the one error table gives the code: its row's, and its variants'.
  const allowed: number[] = [entry.status, ...Object.values('variants' in entry ? entry.variants : {})];
  return allowed.includes(status) ? undefined : `${error.code} with undocumented status ${status}`;
}

/** Why a request the fake node received is malformed, or undefined. */
function upstreamProblem(r: (typeof node.requests)[number]): string | undefined {
  if (r.kind === 'info') return undefined;
  if (r.kind === 'other') return `unexpected upstream request ${r.method} ${r.url}`;
  if (r.address === undefined || principalProblem(r.address) !== undefined) return `bad address ${r.address}`;
  if (r.contractName === undefined || !isValidContractName(r.contractName))
    return `bad contract ${r.contractName}`;
  if (r.kind === 'interface') return undefined;
  if (r.functionName === undefined || !isValidFunctionName(r.functionName))
    return `bad function ${r.functionName}`;
  const b = r.body as { sender?: unknown; arguments?: unknown } | undefined;
  if (typeof b?.sender !== 'string' || principalProblem(b.sender) !== undefined) return 'bad sender';
  if (!Array.isArray(b.arguments)) return 'arguments not an array';
  for (const a of b.arguments) {
    try {
      decodeClarityHex(String(a));
    } catch {
      return `undecodable argument ${String(a).slice(0, 60)}`;
    }
  }
  return undefined;
}

describe('fuzzing every public route', () => {
  it('answers everything with a documented envelope, and sends nothing malformed upstream', async () => {
    node.resetStats();
    await fc.assert(
      fc.asyncProperty(method, path, trailing, query, headers, body, async (m, p, t, q, h, b) => {
        const res = await rawExchange(gw.url, build(m, `${p}${t}${q}`, h, b));
        const why = problem(m, res);
        expect(
          why,
          `${m} ${p}${t}${q} ${JSON.stringify(h)} ${b ?? ''}\n${res.raw.slice(0, 400)}`,
        ).toBeUndefined();
      }),
      { numRuns: 400 },
    );
    // The run did reach the upstream (valid calls exist among the random ones) ...
    expect(node.total).toBeGreaterThan(0);
    // ... and every request it made was well-formed.
    for (const r of node.requests) expect(upstreamProblem(r), r.url).toBeUndefined();
  }, 120_000);

  it('answers malformed HTTP (random bytes in the request line and headers) with an envelope', async () => {
    const bytes = fc.uint8Array({ minLength: 1, maxLength: 200 }).map((a) => Buffer.from(a));
    const line = fc.oneof(
      bytes,
      fc
        .tuple(method, bytes)
        .map(([m, b]) => Buffer.concat([Buffer.from(`${m} /`), b, Buffer.from(' HTTP/1.1')])),
      fc.tuple(bytes).map(([b]) => Buffer.concat([Buffer.from('GET /health HTTP/1.1\r\nHost: x\r\n'), b])),
    );
    await fc.assert(
      fc.asyncProperty(line, async (start) => {
        // The blank line ends the header section, so the parser decides at once.
        // untilResponse: a request that is valid after all gets its answer on a kept-alive connection.
        const res = await rawExchange(gw.url, Buffer.concat([start, Buffer.from('\r\n\r\n')]), {
          untilResponse: true,
        });
        // A HEAD request is answered without a body, whatever else is wrong with it.
        const why = problem(start.toString('latin1').startsWith('HEAD ') ? 'HEAD' : 'GET', res);
        expect(why, `${JSON.stringify(start.toString('latin1'))}\n${res.raw.slice(0, 400)}`).toBeUndefined();
      }),
      { numRuns: 200 },
    );
  }, 120_000);
});
