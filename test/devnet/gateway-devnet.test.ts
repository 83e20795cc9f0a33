/**
 * The gateway end to end against a real chain: the devnet (real Clarity VM) as upstream for
 * both networks, the gateway as a child process (`node --import tsx src/main.ts`) started
 * from environment variables, everything over real HTTP.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { Cl, cvToHex } from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { callPublic, http } from './helpers.js';

let devnet: Devnet;
let gateway: ChildProcess | undefined;
let gatewayUrl: string;
let gatewayOutput = '';
let D: string;
let W1: string;
let W2: string;
let TOKEN: string;
let DAO: string;

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function waitForGateway(url: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the gateway exited (${child.exitCode}):\n${gatewayOutput}`);
    try {
      const res = await fetch(`${url}/contract-calls/known-contracts`);
      await res.arrayBuffer();
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  throw new Error(`the gateway did not answer on ${url} within ${timeoutMs} ms:\n${gatewayOutput}`);
}

beforeAll(async () => {
  devnet = await startDevnet({ port: 0 });
  D = devnet.deployer;
  W1 = devnet.accounts.wallet_1;
  W2 = devnet.accounts.wallet_2;
  TOKEN = `${D}.demo-token`;
  DAO = `${D}.demo-dao`;

  const port = await freePort();
  gatewayUrl = `http://127.0.0.1:${port}`;
  gateway = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: new URL('../../', import.meta.url),
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      CACHE_STORE: 'memory',
      LOG_LEVEL: 'warn',
      STACKS_API_URL_MAINNET: devnet.url,
      STACKS_API_URL_TESTNET: devnet.url,
      // A test makes more uncached calls than the default budget of 20 a minute allows, and
      // a read-only call to a public function replays the chain in the devnet (seconds).
      UPSTREAM_RATE_LIMIT_PER_MINUTE: '100000',
      UPSTREAM_TIMEOUT_MS: '30000',
      UPSTREAM_RETRY_BASE_MS: '10',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  gateway.stdout?.on('data', (chunk: Buffer) => {
    gatewayOutput += chunk.toString();
  });
  gateway.stderr?.on('data', (chunk: Buffer) => {
    gatewayOutput += chunk.toString();
  });
  await waitForGateway(gatewayUrl, gateway, 45_000);
}, 90_000);

afterAll(async () => {
  // The gateway logs at warn level: whatever it said helps explain a failure.
  if (gatewayOutput.trim()) console.warn(`gateway output:\n${gatewayOutput}`);
  if (gateway && gateway.exitCode === null) {
    const exited = once(gateway, 'exit');
    gateway.kill('SIGTERM');
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))]);
    if (gateway.exitCode === null) gateway.kill('SIGKILL');
  }
  await devnet?.close();
});

function readOnly(contractId: string, fn: string, body: Record<string, unknown> = {}) {
  const [address, name] = contractId.split('.');
  return http(`${gatewayUrl}/contract-calls/read-only/${address}/${name}/${encodeURIComponent(fn)}`, {
    body: { functionArgs: [], ...body },
  });
}

describe('decoding real contract results', () => {
  it('a tuple of every kind: integers as decimal strings by default', async () => {
    const res = await readOnly(DAO, 'get-dao-info');
    expect(res.status).toBe(200);
    expect(res.json.success).toBe(true);
    const data = res.json.data;
    expect(data).toEqual({
      name: 'Demo DAO',
      motto: 'Gouvernance décentralisée 🚀',
      'treasury-cap': '340282366920938463463374607431768211455',
      'min-delta': '-170141183460469231731687303715884105728',
      quorum: '9007199254740993',
      'proposal-count': '2',
      'last-proposal-id': '2',
      'treasury-locked': true,
      founders: [D, W1, TOKEN],
      'charter-hash': expect.stringMatching(/^0x[0-9a-f]{64}$/),
      'created-at': expect.stringMatching(/^\d+$/),
      settings: { 'voting-period': '144', 'min-balance': '1000000', veto: null },
    });
  });

  it('strictJsonCompat:false gives numbers where exact and strings beyond 2^53', async () => {
    const res = await readOnly(DAO, 'get-dao-info', { strictJsonCompat: false });
    const data = res.json.data;
    expect(data['proposal-count']).toBe(2);
    expect(typeof data['created-at']).toBe('number');
    expect(data.settings).toEqual({ 'voting-period': 144, 'min-balance': 1000000, veto: null });
    expect(data.quorum).toBe('9007199254740993');
    expect(data['treasury-cap']).toBe('340282366920938463463374607431768211455');
    expect(data['min-delta']).toBe('-170141183460469231731687303715884105728');
  });

  it('preserveContainers keeps some/none/ok', async () => {
    const info = (await readOnly(DAO, 'get-dao-info', { preserveContainers: true })).json.data;
    expect(info['last-proposal-id']).toEqual({ type: 'some', value: '2' });
    expect(info.settings.veto).toEqual({ type: 'none', value: null });
    const name = (await readOnly(TOKEN, 'get-name', { preserveContainers: true })).json.data;
    expect(name).toEqual({ type: 'ok', value: 'Demo Token' });
  });

  it('optionals, lists, buffers, principals, negative ints and utf8 inside a proposal', async () => {
    const one = (await readOnly(DAO, 'get-proposal', { functionArgs: [{ type: 'uint', value: '1' }] })).json
      .data;
    expect(one).toMatchObject({
      title: 'Fund the devnet faucet',
      description: 'Send 1\u00a0000 STX to the faucet \u2014 💧',
      proposer: D,
      'votes-for': '100',
      'votes-against': '5',
      delta: '-250',
      executed: false,
      'payload-hash': '0x4bf5122f344554c53bde2ebb8cd2b7e3d1600ad631c385a5d7cce23c7785459a',
      tags: ['treasury', 'faucet'],
      target: devnet.accounts.faucet,
    });
    const two = (await readOnly(DAO, 'get-proposal', { functionArgs: [{ type: 'uint', value: '2' }] })).json
      .data;
    expect(two).toMatchObject({
      delta: '170141183460469231731687303715884105727',
      tags: [],
      target: null,
      'closes-at': null,
    });
    const none = await readOnly(DAO, 'get-proposal', { functionArgs: [{ type: 'uint', value: '99' }] });
    expect(none.json).toEqual({ success: true, data: null });
    const ids = await readOnly(DAO, 'get-proposal-ids', { strictJsonCompat: false });
    expect(ids.json.data).toEqual([1, 2]);
  });

  it('SIP-010 and SIP-009 read-only functions', async () => {
    expect((await readOnly(TOKEN, 'get-name')).json.data).toBe('Demo Token');
    expect((await readOnly(TOKEN, 'get-decimals')).json.data).toBe('6');
    expect((await readOnly(TOKEN, 'get-token-uri')).json.data).toBe('https://example.com/demo-token.json');
    const balance = await readOnly(TOKEN, 'get-balance', {
      functionArgs: [{ type: 'principal', value: W2 }],
      strictJsonCompat: false,
    });
    expect(balance.json.data).toBe(250_000_000_000);
    const owner = await readOnly(`${D}.demo-nft`, 'get-owner', {
      functionArgs: [{ type: 'uint', value: '3' }],
    });
    expect(owner.json.data).toBe(W2);
  });

  it('arguments of every kind, in simplified, native and hex forms, as the given sender', async () => {
    const res = await readOnly(DAO, 'preview-proposal', {
      senderAddress: W2,
      functionArgs: [
        { type: 'stringAscii', value: 'Ship it' },
        { type: 'utf8', value: 'naïve café ✓' }, // native stacks.js form
        { type: 'int', value: '-42' },
        { type: 'list', value: [{ type: 'string', value: 'a' }, cvToHex(Cl.stringAscii('b'))] },
        { type: 'buffer', value: `0x${'00'.repeat(31)}ff` },
        { type: 'some', value: { type: 'principal', value: DAO } },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.json.data).toMatchObject({
      title: 'Ship it',
      description: 'naïve café ✓',
      proposer: W2,
      delta: '-42',
      tags: ['a', 'b'],
      'payload-hash': `0x${'00'.repeat(31)}ff`,
      target: DAO,
      'votes-for': '0',
    });
  });

  it('the decode endpoint decodes what the chain returned', async () => {
    const node = await http(`${devnet.url}/v2/contracts/call-read/${D}/demo-dao/get-dao-info`, {
      body: { sender: D, arguments: [] },
    });
    const res = await http(`${gatewayUrl}/contract-calls/decode-clarity-value`, {
      body: { clarityValue: node.json.result },
    });
    expect(res.status).toBe(200);
    expect(res.json.data.original).toBe(node.json.result);
    expect(res.json.data.decoded['proposal-count']).toBe(2);
    expect(res.json.data.decoded.quorum).toBe('9007199254740993');
    expect(res.json.data.decoded.founders).toEqual([D, W1, TOKEN]);
  });
});

describe('validation against the real ABI', () => {
  it('INVALID_ARGUMENTS for wrong types, lengths and counts', async () => {
    const cases: Array<[string, string, unknown[]]> = [
      ['int for uint', `${D}.demo-nft`, [{ type: 'int', value: '1' }]],
      ['uint for principal', TOKEN, [{ type: 'uint', value: '1' }]],
      ['missing argument', TOKEN, []],
      [
        'extra argument',
        TOKEN,
        [
          { type: 'principal', value: W1 },
          { type: 'uint', value: '1' },
        ],
      ],
    ];
    for (const [label, contract, functionArgs] of cases) {
      const fn = contract === TOKEN ? 'get-balance' : 'get-owner';
      const res = await readOnly(contract, fn, { functionArgs });
      expect(res.status, label).toBe(400);
      expect(res.json.success, label).toBe(false);
      expect(res.json.error.code, label).toBe('INVALID_ARGUMENTS');
      expect(res.json.error.id, label).toMatch(/\S/);
    }
    const good = [
      { type: 'stringAscii', value: 'title' },
      { type: 'stringUtf8', value: 'text' },
      { type: 'int', value: '1' },
      { type: 'list', value: [] },
      { type: 'buffer', value: '0x01' },
      { type: 'none' },
    ];
    const deep: Array<[string, unknown[]]> = [
      ['title longer than 64', [{ type: 'stringAscii', value: 'x'.repeat(65) }, ...good.slice(1)]],
      [
        'six tags for a list of 5',
        [
          ...good.slice(0, 3),
          { type: 'list', value: Array(6).fill({ type: 'string', value: 't' }) },
          ...good.slice(4),
        ],
      ],
      [
        'buffer of 33 bytes',
        [...good.slice(0, 4), { type: 'buffer', value: `0x${'00'.repeat(33)}` }, good[5]],
      ],
      ['utf8 where ascii is expected', [{ type: 'stringUtf8', value: 'title' }, ...good.slice(1)]],
      [
        'some uint for an optional principal',
        [...good.slice(0, 5), { type: 'some', value: { type: 'uint', value: '1' } }],
      ],
    ];
    for (const [label, functionArgs] of deep) {
      const res = await readOnly(DAO, 'preview-proposal', { functionArgs });
      expect(res.status, label).toBe(400);
      expect(res.json.error.code, label).toBe('INVALID_ARGUMENTS');
    }
    expect((await readOnly(DAO, 'preview-proposal', { functionArgs: good })).status).toBe(200);
  });

  it('INVALID_FUNCTION for unknown and private functions', async () => {
    const unknown = await readOnly(TOKEN, 'get-nothing');
    expect(unknown.status).toBe(400);
    expect(unknown.json.error.code).toBe('INVALID_FUNCTION');
    expect(unknown.json.error.details).toEqual({ function: 'get-nothing', contract: TOKEN });
    const priv = await readOnly(`${D}.demo-nft`, 'mint-at-deploy', {
      functionArgs: [{ type: 'principal', value: W1 }],
    });
    expect(priv.status).toBe(400);
    expect(priv.json.error.code).toBe('INVALID_FUNCTION');
  });
});

describe('errors from the chain', () => {
  it('CONTRACT_ERROR (422) from a real (err ...)', async () => {
    const res = await readOnly(DAO, 'get-treasury-withdrawal', {
      functionArgs: [{ type: 'uint', value: '5' }],
    });
    expect(res.status).toBe(422);
    expect(res.json.success).toBe(false);
    expect(res.json.error.code).toBe('CONTRACT_ERROR');
    expect(res.json.error.details.value).toEqual({
      code: '403',
      reason: 'treasury is locked',
      'unlock-height': expect.stringMatching(/^\d+$/),
    });
    const member = await readOnly(DAO, 'get-member', {
      functionArgs: [{ type: 'principal', value: devnet.accounts.wallet_7 }],
    });
    expect(member.status).toBe(422);
    expect(member.json.error.details.value).toBe('404');
  });

  it('UPSTREAM_API_ERROR 404 for an unknown contract', async () => {
    const res = await readOnly(`${D}.no-such-contract`, 'get-name');
    expect(res.status).toBe(404);
    expect(res.json.error.code).toBe('UPSTREAM_API_ERROR');
    expect(res.json.error.details.retryable).toBe(false);
    const abi = await http(`${gatewayUrl}/contract-calls/abi/${D}/no-such-contract`);
    expect(abi.status).toBe(404);
    expect(abi.json.error.code).toBe('UPSTREAM_API_ERROR');
    // a mainnet address goes to the mainnet upstream (the devnet too), where nothing is deployed
    const mainnet = await http(
      `${gatewayUrl}/contract-calls/abi/SP3FBR2AGK5H9QBDH3EEN6DF8EK8JY7RX8QJ5SVTE/sip-010-trait-ft-standard`,
    );
    expect(mainnet.status).toBe(404);
  });

  it('UPSTREAM_API_ERROR 422 with the node cause for a runtime error and a write attempt', async () => {
    const divide = await readOnly(DAO, 'get-share', {
      functionArgs: [
        { type: 'uint', value: '1' },
        { type: 'uint', value: '0' },
      ],
    });
    expect(divide.status).toBe(422);
    expect(divide.json.error.code).toBe('UPSTREAM_API_ERROR');
    expect(divide.json.error.details.cause).toMatch(/^DivisionByZero/);
    const write = await readOnly(DAO, 'join', { senderAddress: devnet.accounts.wallet_5 });
    expect(write.status).toBe(422);
    expect(write.json.error.details.cause).toBe('NotReadOnly');
  }, 90_000);
});

describe('ABI endpoints', () => {
  it('serves the ABI and lists known contracts from local data', async () => {
    const abi = await http(`${gatewayUrl}/contract-calls/abi/${D}/demo-nft`);
    expect(abi.status).toBe(200);
    expect(abi.json.data.non_fungible_tokens).toEqual([{ name: 'demo-nft', type: 'uint128' }]);
    expect(abi.json.data.epoch).toBe('Epoch31');
    expect(abi.json.data.clarity_version).toBe('Clarity3');
    const known = await http(`${gatewayUrl}/contract-calls/known-contracts`);
    expect(known.status).toBe(200);
    const names = known.json.data.contracts.cached
      .map((c: { contractName: string }) => c.contractName)
      .sort();
    expect(names).toEqual(expect.arrayContaining(['demo-dao', 'demo-nft', 'demo-token']));
    expect(names).not.toContain('no-such-contract');
    expect(known.json.data.stats.total).toBe(known.json.data.contracts.cached.length);
  });
});

describe('caching across a state change', () => {
  it('a cached balance goes stale after a transfer; bustCache fetches the new one', async () => {
    const who = devnet.accounts.wallet_4;
    const balance = (cacheControl?: Record<string, unknown>) =>
      readOnly(TOKEN, 'get-balance', {
        functionArgs: [{ type: 'principal', value: who }],
        ...(cacheControl ? { cacheControl } : {}),
      });
    expect((await balance()).json.data).toBe('0');

    const transfer = await callPublic(devnet.url, {
      sender: W1,
      contract: TOKEN,
      function: 'transfer',
      arguments: [Cl.uint(42_000_000), Cl.principal(W1), Cl.principal(who), Cl.none()],
    });
    expect(transfer.json.committed).toBe(true);

    expect((await balance()).json.data).toBe('0'); // served from the cache: stale
    expect((await balance({ bustCache: true })).json.data).toBe('42000000');
    expect((await balance()).json.data).toBe('42000000'); // bustCache stored the fresh answer

    // skipCache: a fresh answer that is not stored
    await callPublic(devnet.url, {
      sender: W1,
      contract: TOKEN,
      function: 'transfer',
      arguments: [Cl.uint(1), Cl.principal(W1), Cl.principal(who), Cl.none()],
    });
    expect((await balance({ bustCache: true, skipCache: true })).json.data).toBe('42000001');
    expect((await balance()).json.data).toBe('42000000');
  });

  it('a cached (err ...) stays cached until busted', async () => {
    const withdraw = () =>
      readOnly(DAO, 'get-treasury-withdrawal', { functionArgs: [{ type: 'uint', value: '7' }] });
    expect((await withdraw()).status).toBe(422);
    const unlock = await callPublic(devnet.url, {
      sender: D,
      contract: DAO,
      function: 'set-treasury-locked',
      arguments: [Cl.bool(false)],
    });
    expect(unlock.json.committed).toBe(true);
    expect((await withdraw()).status).toBe(422);
    const fresh = await readOnly(DAO, 'get-treasury-withdrawal', {
      functionArgs: [{ type: 'uint', value: '7' }],
      cacheControl: { bustCache: true },
    });
    expect(fresh.status).toBe(200);
    expect(fresh.json.data).toBe('7');
  });
});
