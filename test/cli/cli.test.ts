/**
 * The `clarity-cache` command line against the real gateway over real HTTP (fake node
 * upstream): in-process through run() for most cases, and as a real process for the exit
 * status, the streams and `serve`.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Cl } from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway } from '../../src/app.js';
import { run } from '../../src/cli/run.js';
import { loadConfig } from '../../src/config/index.js';
import { type FakeNode, startFakeNode } from '../support/fake-node.js';
import { hex, INFO_VALUE, MAINNET_ADDR, SAMPLE_ABI } from '../support/fixtures.js';
import { type RunningGateway, testEnv } from '../support/gateway.js';
import { freePort, spawnNode } from '../support/process.js';

const DEMO = `${MAINNET_ADDR}.demo`;
const VERSION = JSON.parse(
  readFileSync(path.join(import.meta.dirname, '../../package.json'), 'utf8'),
).version;
let node: FakeNode;
let gw: RunningGateway;
let gatewayRequests = 0;
/**
 * A front for the gateway, as a reverse proxy would be: /cache/... is the gateway under a
 * base path (each request's Authorization recorded), /listing/... answers every path with a
 * success envelope that is no ABI, /html/... with a page.
 */
let front: http.Server;
let frontUrl: string;
const frontAuthorizations: Array<string | undefined> = [];

beforeAll(async () => {
  node = await startFakeNode();
  node.setAbi(MAINNET_ADDR, 'demo', SAMPLE_ABI);
  node.setReadOnly(MAINNET_ADDR, 'demo', 'get-info', { okay: true, result: hex(INFO_VALUE) });
  node.setReadOnly(MAINNET_ADDR, 'demo', 'get-balance', { okay: true, result: hex(Cl.ok(Cl.uint(1000))) });
  node.setReadOnly(MAINNET_ADDR, 'demo', 'typed', { okay: true, result: hex(Cl.bool(true)) });
  node.setReadOnly(MAINNET_ADDR, 'demo', 'fails', { okay: true, result: hex(Cl.error(Cl.uint(7))) });
  // Every request the gateway receives is counted: a refused literal must cost none.
  const gateway = await createGateway(loadConfig(testEnv(node.url, { UPSTREAM_RETRIES: '0' })));
  gateway.app.addHook('onRequest', async () => {
    gatewayRequests++;
  });
  const url = await gateway.app.listen({ port: 0, host: '127.0.0.1' });
  gw = { url, gateway, close: () => gateway.close() };
  front = http.createServer((req, res) => {
    const reqUrl = req.url ?? '/';
    if (reqUrl.startsWith('/cache/')) {
      frontAuthorizations.push(req.headers.authorization);
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        void fetch(`${gw.url}${reqUrl.slice('/cache'.length)}`, {
          method: req.method ?? 'GET',
          headers: { 'content-type': req.headers['content-type'] ?? 'application/json' },
          ...(req.method === 'POST' ? { body: Buffer.concat(chunks) } : {}),
        }).then(async (answer) => {
          res.writeHead(answer.status, { 'content-type': 'application/json' });
          res.end(Buffer.from(await answer.arrayBuffer()));
        });
      });
    } else if (reqUrl.startsWith('/listing/')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ success: true, data: { endpoints: ['/contract-calls/abi/:a/:n', '/health'] } }),
      );
    } else {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<!doctype html><p>not a gateway</p>');
    }
  });
  await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
  frontUrl = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => front?.close(resolve));
  await gw?.close();
  await node?.close();
});

async function cli(argv: string[], env: Record<string, string> = {}) {
  let stdout = '';
  let stderr = '';
  const code = await run(argv, {
    stdout: (t) => {
      stdout += t;
    },
    stderr: (t) => {
      stderr += t;
    },
    env,
  });
  return { code, stdout, stderr };
}

describe('clarity-cache call', () => {
  it('calls a read-only function and prints the decoded JSON', async () => {
    const r = await cli(['call', DEMO, 'get-balance', `'${MAINNET_ADDR}`, '--url', gw.url]);
    expect(r).toEqual({ code: 0, stdout: '"1000"\n', stderr: '' });
    const sent = node.lastRequest('call-read')?.body as { arguments: string[] };
    expect(sent.arguments).toEqual([hex(Cl.principal(MAINNET_ADDR))]);
  });

  it('sends each kind of literal as the ABI types it', async () => {
    const r = await cli([
      '--url',
      gw.url,
      'call',
      DEMO,
      'typed',
      '-5',
      '0x01020304',
      '(list u1 2 u3)',
      'true',
      '{a: u1, s: "x"}',
      '--fresh',
    ]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toBe(true);
    const sent = node.lastRequest('call-read')?.body as { arguments: string[] };
    expect(sent.arguments).toEqual(
      [
        Cl.int(-5),
        Cl.bufferFromHex('01020304'),
        Cl.list([Cl.uint(1), Cl.uint(2), Cl.uint(3)]),
        Cl.some(Cl.bool(true)),
        Cl.tuple({ a: Cl.uint(1), s: Cl.stringAscii('x') }),
      ].map(hex),
    );
  });

  it('prints the whole envelope with --raw', async () => {
    const r = await cli(['call', '--raw', DEMO, 'get-info'], { CLARITY_CACHE_URL: gw.url });
    expect(r.code).toBe(0);
    const envelope = JSON.parse(r.stdout);
    expect(envelope.success).toBe(true);
    expect(envelope.data.height).toBe('123456');
  });

  it('rejects a malformed literal before any request, naming the position', async () => {
    const before = gatewayRequests;
    const r = await cli(['call', DEMO, 'typed', '-5', '(list u1 u2', '--url', gw.url]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      'clarity-cache: VALIDATION_ERROR: argument 2: unclosed "(" at position 1 of "(list u1 u2"\n',
    );
    expect(gatewayRequests).toBe(before);
  });

  it('refuses a literal the ABI does not allow, naming the argument', async () => {
    const r = await cli(['call', DEMO, 'get-balance', 'u5', '--url', gw.url]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      'INVALID_ARGUMENTS: argument 1 (who: principal): expected principal, got a uint',
    );
    const count = await cli(['call', DEMO, 'get-balance', '--url', gw.url]);
    expect(count.stderr).toContain('get-balance takes 1 argument(s) (who: principal), got 0');
    const fn = await cli(['call', DEMO, 'transfer', '--url', gw.url]);
    expect(fn.code).toBe(2);
    expect(fn.stderr).toContain('INVALID_FUNCTION');
    expect(fn.stderr).toContain('get-balance');
  });

  it('prints a gateway error with its code on stderr and exits 1', async () => {
    const r = await cli(['call', DEMO, 'fails', '--url', gw.url]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(
      /^clarity-cache: CONTRACT_ERROR \(HTTP 422\): .*\n {2}details: \{"value":"7"\}\n {2}id: err_/,
    );
    const raw = await cli(['call', DEMO, 'fails', '--url', gw.url, '--raw']);
    expect(raw.code).toBe(1);
    expect(JSON.parse(raw.stdout)).toMatchObject({ success: false, error: { code: 'CONTRACT_ERROR' } });
    const missing = await cli(['call', `${MAINNET_ADDR}.missing`, 'f', '--url', gw.url]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('UPSTREAM_API_ERROR (HTTP 404)');
  });
});

describe('clarity-cache abi, known, decode', () => {
  it('prints the ABI, the known contracts and decoded values', async () => {
    const abi = await cli(['abi', DEMO, '--url', gw.url]);
    expect(abi.code).toBe(0);
    expect(JSON.parse(abi.stdout).functions.map((f: { name: string }) => f.name)).toContain('typed');
    const known = await cli(['known', `--url=${gw.url}`]);
    expect(JSON.parse(known.stdout).contracts.cached).toContainEqual(
      expect.objectContaining({ contractAddress: MAINNET_ADDR, contractName: 'demo' }),
    );
    const decoded = await cli(['decode', hex(Cl.stringAscii('hello')), '--url', gw.url]);
    expect(decoded).toEqual({ code: 0, stdout: '"hello"\n', stderr: '' });
    const bad = await cli(['decode', '0xzz', '--url', gw.url]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('INVALID_HEX_STRING (HTTP 400)');
  });

  it('explains usage mistakes with exit status 2', async () => {
    expect(await cli([])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('USAGE_ERROR: no command'),
    });
    expect(await cli(['frob'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('unknown command'),
    });
    expect(await cli(['known', '--bogus'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--bogus'),
    });
    expect(await cli(['abi', 'nodot'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('INVALID_CONTRACT_ADDRESS'),
    });
    expect(await cli(['known', '--url', 'localhost:3000'])).toMatchObject({ code: 2 });
    const help = await cli(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Examples (each runs as written against `npm run demo`):');
    expect(help.stdout).toContain('clarity-cache call');
  });
});

describe('clarity-cache --version', () => {
  it('prints the package version alone on stdout', async () => {
    expect(await cli(['--version'])).toEqual({ code: 0, stdout: `${VERSION}\n`, stderr: '' });
    expect(await spawnCli(['--version']).done).toEqual({ code: 0, stdout: `${VERSION}\n`, stderr: '' });
  });
});

describe('usage errors: exit 2 before any request', () => {
  const U128_PLUS_1 = (2n ** 128n).toString();
  const I128_MIN_MINUS_1 = (-(2n ** 127n) - 1n).toString();
  it.each([
    [
      'a --url with a query',
      ['known', '--url', 'http://127.0.0.1:1/?key=1'],
      'without a query or a fragment',
    ],
    [
      'a --url with a fragment',
      ['known', '--url', 'http://127.0.0.1:1/cache#x'],
      'without a query or a fragment',
    ],
    ['a --url that is no URL', ['known', '--url', 'localhost:3000'], 'http:// or https://'],
    ['an unknown long option', ['known', '--frobnicate'], 'unknown option --frobnicate'],
    ['an unknown short option', ['call', DEMO, 'typed', '-x'], 'unknown option -x'],
    ['a uint above u128', ['call', DEMO, 'typed', `u${U128_PLUS_1}`], 'larger than the largest uint'],
    [
      'a negative int below int128',
      ['call', DEMO, 'typed', I128_MIN_MINUS_1],
      'smaller than the smallest int',
    ],
    ['an out-of-range uint in a list', ['call', DEMO, 'typed', `(list u1 u${U128_PLUS_1})`], 'position 10'],
  ])('%s', async (_what, argv, message) => {
    const before = gatewayRequests;
    const r = await cli([...argv, ...(argv.includes('--url') ? [] : ['--url', gw.url])]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(message);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(gatewayRequests).toBe(before);
  });

  it('a CLARITY_CACHE_URL with a query, before any request', async () => {
    const r = await cli(['known'], { CLARITY_CACHE_URL: `${gw.url}/?x=1` });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('CLARITY_CACHE_URL must be');
  });

  it('checks a literal the syntax leaves open against the ABI before the call', async () => {
    const calls = node.count('call-read');
    // An unsigned-less integer is an int here (the ABI says int128): 2^127 does not fit.
    const r = await cli([
      'call',
      DEMO,
      'typed',
      (2n ** 127n).toString(),
      '0x01',
      '(list)',
      'none',
      '{a: u1, s: ""}',
      '--url',
      gw.url,
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('argument 1 (n: int): out of the range of an int');
    expect(node.count('call-read')).toBe(calls);
  });
});

describe('--url: base paths, credentials, answers that are not what was asked', () => {
  it('keeps a base path and sends credentials as HTTP Basic authentication, never printing them', async () => {
    const url = `${frontUrl.replace('http://', 'http://alice:s3cr%40t@')}/cache/`;
    const basic = Buffer.from('alice:s3cr@t').toString('base64');
    frontAuthorizations.length = 0;
    const ok = await cli(['call', DEMO, 'get-balance', `'${MAINNET_ADDR}`, '--url', url]);
    expect(ok).toEqual({ code: 0, stdout: '"1000"\n', stderr: '' });
    expect(frontAuthorizations).toEqual([`Basic ${basic}`, `Basic ${basic}`]);
    const viaEnv = await cli(['known'], { CLARITY_CACHE_URL: url });
    expect(viaEnv.code).toBe(0);
    // Errors of every kind: a gateway error, no answer, a usage error.
    const failures = [
      await cli(['call', DEMO, 'fails', '--url', url]),
      await cli(['known', '--url', 'http://alice:s3cr%40t@127.0.0.1:1/cache/']),
      await cli(['known', '--url', `${url}?x`]),
      await cli(['known', '--raw', '--url', 'http://alice:s3cr%40t@127.0.0.1:1/']),
    ];
    for (const r of failures) {
      expect(r.code).not.toBe(0);
      for (const secret of ['s3cr', basic, 'alice:']) expect(r.stdout + r.stderr).not.toContain(secret);
    }
    expect(failures[1]!.stderr).toContain('NETWORK_ERROR');
    expect(failures[1]!.stderr).toContain('http://127.0.0.1:1/cache/contract-calls/known-contracts');
  });

  it('does not print another answer as if it were an ABI', async () => {
    for (const argv of [['abi', DEMO], ['call', DEMO, 'get-info'], ['known'], ['abi', DEMO, '--raw']]) {
      const r = await cli([...argv, '--url', `${frontUrl}/listing/`]);
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(
        /^clarity-cache: UNEXPECTED_ANSWER: the answer is not a (contract ABI|list of known contracts): is ".*\/listing\/" the gateway's base URL/,
      );
    }
  });

  it('a page instead of an envelope: exit 1, one line, no stack trace', async () => {
    const r = await spawnCli(['abi', DEMO, '--url', `${frontUrl}/html/`]).done;
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^clarity-cache: NETWORK_ERROR \(HTTP 200\): GET .* without a JSON envelope\n$/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });
});

/** The command as users run it (sources through tsx); resolves with status and streams. */
function spawnCli(argv: string[], env: Record<string, string> = {}) {
  return spawnNode(['--import', 'tsx', 'src/cli/main.ts', ...argv], env);
}

describe('clarity-cache as a process', () => {
  it('exits 0 with the result on stdout, non-zero with the code on stderr', async () => {
    const ok = await spawnCli(['call', DEMO, 'get-balance', `'${MAINNET_ADDR}`, '--url', gw.url]).done;
    expect(ok).toEqual({ code: 0, stdout: '"1000"\n', stderr: '' });
    const failed = await spawnCli(['call', DEMO, 'fails'], { CLARITY_CACHE_URL: gw.url }).done;
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain('CONTRACT_ERROR');
  });

  it('serve starts the gateway, which then answers', async () => {
    const port = await freePort();
    const svc = spawnCli(['serve', '--port', String(port), '--host', '127.0.0.1'], {
      CACHE_STORE: 'memory',
      STACKS_API_URL_MAINNET: node.url,
      LOG_LEVEL: 'info',
    });
    try {
      await new Promise<void>((resolve, reject) => {
        svc.child.stdout.on('data', () => {
          if (svc.output().includes('listening on')) resolve();
        });
        void svc.done.then(() => reject(new Error(`serve exited:\n${svc.output()}`)));
      });
      const r = await cli([
        'call',
        DEMO,
        'get-balance',
        `'${MAINNET_ADDR}`,
        '--url',
        `http://127.0.0.1:${port}`,
      ]);
      expect(r).toEqual({ code: 0, stdout: '"1000"\n', stderr: '' });
    } finally {
      svc.child.kill('SIGTERM');
      await svc.done;
    }
  });
});

describe('a command line that never surprises', () => {
  it('prints the package version alone with --version', async () => {
    const r = await cli(['--version']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
    expect(r.stderr).toBe('');
  });

  it('refuses a literal out of its type’s range before any request (exit 2, 1-based position)', async () => {
    const before = gatewayRequests;
    for (const literal of [
      'u340282366920938463463374607431768211456',
      '-170141183460469231731687303715884105729',
    ]) {
      const r = await cli(['call', DEMO, 'get-balance', literal, '--url', gw.url]);
      expect(r.code, literal).toBe(2);
      expect(r.stderr).toContain('argument 1');
    }
    expect(gatewayRequests).toBe(before);
  });

  it('refuses a --url with a query or a fragment as a usage error, before any request', async () => {
    const before = gatewayRequests;
    for (const url of [`${gw.url}/?x=1`, `${gw.url}/#top`]) {
      const r = await cli(['known', '--url', url]);
      expect(r.code, url).toBe(2);
      expect(r.stderr).toContain('query or a fragment');
    }
    expect(gatewayRequests).toBe(before);
  });

  it('sends credentials in --url as Basic authentication and never prints them', async () => {
    const { createServer } = await import('node:http');
    const seen: Array<string | undefined> = [];
    const server = createServer((req, res) => {
      seen.push(req.headers.authorization);
      res.writeHead(503, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          success: false,
          error: { id: 'err_x', code: 'SERVICE_UNAVAILABLE', message: `no for ${req.url}` },
        }),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    try {
      const r = await cli(['known', '--url', `http://ops:Pa55-w0rd-x@127.0.0.1:${port}/cache/`]);
      expect(r.code).toBe(1);
      const basic = Buffer.from('ops:Pa55-w0rd-x').toString('base64');
      expect(seen[0]).toBe(`Basic ${basic}`);
      for (const text of [r.stdout, r.stderr]) {
        expect(text).not.toContain('Pa55-w0rd-x');
        expect(text).not.toContain(basic);
      }
      expect(r.stderr).toContain('SERVICE_UNAVAILABLE');
    } finally {
      server.close();
    }
  });

  it('ends a failure it did not expect in one line, never a stack trace', async () => {
    const r = await cli(['known', '--url', 'http://127.0.0.1:9']);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });
});
