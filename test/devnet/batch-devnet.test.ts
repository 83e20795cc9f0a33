/**
 * The batch and node-compatible endpoints against a real chain: the devnet (real Clarity VM)
 * as the upstream of both networks, the gateway in-process on a real socket. stacks.js
 * pointed at the gateway gets what it gets from the node, and a "consistent" batch reads the
 * demo token at one block of the chain.
 */
import { Cl, type ClarityValue, cvToHex, fetchCallReadOnlyFunction } from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { indexBlockHash } from '../../src/chain/block-id.js';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { type RunningGateway, startGateway, testEnv } from '../support/gateway.js';
import { callPublic, http } from './helpers.js';

let devnet: Devnet;
let gw: RunningGateway;
let D: string;
let W1: string;
let W3: string;
let TOKEN: string;

beforeAll(async () => {
  devnet = await startDevnet({ port: 0 });
  D = devnet.deployer;
  W1 = devnet.accounts.wallet_1;
  W3 = devnet.accounts.wallet_3;
  TOKEN = `${D}.demo-token`;
  // A read-only call of the devnet replays its chain in the VM: allow for slow ones. The test
  // mines a block between two "consistent" batches: CHAIN_TIP_MAX_AGE_MS=0 makes each learn it.
  gw = await startGateway(testEnv(devnet.url, { UPSTREAM_TIMEOUT_MS: '30000', CHAIN_TIP_MAX_AGE_MS: '0' }));
}, 90_000);

afterAll(async () => {
  await gw?.close();
  await devnet?.close();
});

const read = (baseUrl: string, contract: string, functionName: string, functionArgs: ClarityValue[] = []) =>
  fetchCallReadOnlyFunction({
    contractAddress: D,
    contractName: contract,
    functionName,
    functionArgs,
    senderAddress: W1,
    network: 'testnet',
    client: { baseUrl },
  });

/** The devnet's current block, as the gateway must report it. */
async function devnetTip(): Promise<{ height: number; indexBlockHash: string }> {
  const { json } = await http(`${devnet.url}/v2/info`);
  return {
    height: json.stacks_tip_height,
    indexBlockHash: indexBlockHash(json.stacks_tip, json.stacks_tip_consensus_hash)!,
  };
}

describe('stacks.js fetchCallReadOnlyFunction with client.baseUrl at the gateway', () => {
  it('returns the Clarity values the devnet returns, a miss then a hit', async () => {
    const calls: Array<[string, string, ClarityValue[]]> = [
      ['demo-token', 'get-name', []],
      ['demo-token', 'get-decimals', []],
      ['demo-token', 'get-balance', [Cl.principal(W1)]],
      // An (err ...) result: the node's okay:true, so stacks.js returns the err value.
      ['demo-dao', 'get-treasury-withdrawal', [Cl.uint(10)]],
    ];
    for (const [contract, fn, args] of calls) {
      const fromNode = await read(devnet.url, contract, fn, args);
      expect(await read(gw.url, contract, fn, args), fn).toEqual(fromNode);
      expect(await read(gw.url, contract, fn, args), fn).toEqual(fromNode);
    }
    expect(await read(gw.url, 'demo-token', 'get-name')).toEqual(Cl.ok(Cl.stringAscii('Demo Token')));
    // The second read was the cache's: the same call over plain HTTP says so.
    const [address, name] = TOKEN.split('.');
    const again = await http(`${gw.url}/v2/contracts/call-read/${address}/${name}/get-name`, {
      body: { sender: W1, arguments: [] },
    });
    expect(again.headers.get('cache-status')).toBe('clarity-cache; hit');
    const direct = await http(`${devnet.url}/v2/contracts/call-read/${address}/${name}/get-name`, {
      body: { sender: W1, arguments: [] },
    });
    expect(again.text).toBe(direct.text);
  });

  it("serves the node's interface JSON", async () => {
    const [address, name] = TOKEN.split('.');
    const direct = await http(`${devnet.url}/v2/contracts/interface/${address}/${name}`);
    const viaGateway = await http(`${gw.url}/v2/contracts/interface/${address}/${name}`);
    expect(viaGateway.status).toBe(200);
    expect(viaGateway.json).toEqual(direct.json);
  });
});

describe('a consistent batch on the devnet', () => {
  const tokenCalls = (who: string) => [
    { contractAddress: TOKEN, functionName: 'get-name', functionArgs: [] },
    { contractAddress: TOKEN, functionName: 'get-symbol', functionArgs: [] },
    { contractAddress: TOKEN, functionName: 'get-decimals', functionArgs: [] },
    { contractAddress: TOKEN, functionName: 'get-total-supply', functionArgs: [] },
    {
      contractAddress: TOKEN,
      functionName: 'get-balance',
      functionArgs: [{ type: 'principal', value: who }],
    },
  ];

  it('reads the token at one block, reports that block, and a later batch pinned to it still reads there', async () => {
    const before = await devnetTip();
    const first = await http(`${gw.url}/contract-calls/batch`, {
      body: { calls: tokenCalls(W3), tip: 'consistent' },
    });
    expect(first.status).toBe(200);
    expect(first.json.data.tip).toEqual(before);
    const [nameR, symbolR, decimalsR, supplyR, balanceR] = first.json.data.results;
    expect(nameR.data).toBe('Demo Token');
    expect(symbolR.data).toBe('DEMO');
    expect(decimalsR.data).toBe('6');
    expect(supplyR.data).toMatch(/^\d+$/);
    const balanceBefore = BigInt(balanceR.data);

    // A transfer to wallet_3 in a new block.
    const transfer = await callPublic(devnet.url, {
      sender: W1,
      contract: TOKEN,
      function: 'transfer',
      arguments: [Cl.uint(1_000_000), Cl.principal(W1), Cl.principal(W3), Cl.none()],
    });
    expect(transfer.status).toBe(200);

    const after = await devnetTip();
    expect(after.height).toBeGreaterThan(before.height);
    const second = await http(`${gw.url}/contract-calls/batch`, {
      body: { calls: tokenCalls(W3), tip: 'consistent' },
    });
    expect(second.json.data.tip).toEqual(after);
    expect(BigInt(second.json.data.results[4].data)).toBe(balanceBefore + 1_000_000n);

    // Pinned to the first block, the same calls read the old balance (from the cache).
    const pinned = await http(`${gw.url}/contract-calls/batch`, {
      body: { calls: tokenCalls(W3), tip: before.indexBlockHash },
    });
    expect(BigInt(pinned.json.data.results[4].data)).toBe(balanceBefore);
    expect(pinned.json.data.results[4].meta.cacheStatus).toBe('clarity-cache; hit');

    // Each item is what the node says at that block.
    const [address, name] = TOKEN.split('.');
    const atBlock = await http(
      `${devnet.url}/v2/contracts/call-read/${address}/${name}/get-balance?tip=${before.indexBlockHash}`,
      { body: { sender: address, arguments: [cvToHex(Cl.principal(W3))] } },
    );
    expect(atBlock.json.okay).toBe(true);
    const viaGateway = await http(
      `${gw.url}/v2/contracts/call-read/${address}/${name}/get-balance?tip=${before.indexBlockHash}`,
      { body: { sender: address, arguments: [cvToHex(Cl.principal(W3))] } },
    );
    expect(viaGateway.text).toBe(atBlock.text);
  }, 60_000);
});
