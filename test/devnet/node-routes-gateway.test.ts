/**
 * The gateway as a drop-in node in front of the local chain (real Clarity VM, real HTTP): each
 * node route answers byte for byte what the node answers, and stacks.js 7 pointed at the
 * gateway reads, estimates fees and broadcasts a contract call whose new state it then reads
 * through the gateway (the answer read before the block is not served after it).
 */
import {
  broadcastTransaction,
  Cl,
  cvToHex,
  fetchAbi,
  fetchCallReadOnlyFunction,
  fetchContractMapEntry,
  fetchFeeEstimateTransfer,
  fetchNonce,
  makeContractCall,
  makeSTXTokenTransfer,
} from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEVNET_PRIVATE_KEYS, type Devnet, startDevnet } from '../../src/devnet/index.js';
import { type RunningGateway, startGateway, testEnv } from '../support/gateway.js';

let devnet: Devnet;
let gw: RunningGateway;
let D: string;
let W1: string;
const network = 'devnet' as const;

beforeAll(async () => {
  devnet = await startDevnet({ port: 0 });
  D = devnet.deployer;
  W1 = devnet.accounts.wallet_1;
  gw = await startGateway(testEnv(devnet.url, { NODE_DEFAULT_NETWORK: 'testnet' }));
}, 90_000);

afterAll(async () => {
  await gw?.close();
  await devnet?.close();
});

async function both(
  path: string,
  init: { method?: string; body?: string } = {},
): Promise<{ node: Response; nodeText: string; gateway: Response; gatewayText: string }> {
  const req = (base: string) =>
    fetch(`${base}${path}`, {
      method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
      ...(init.body === undefined
        ? {}
        : { body: init.body, headers: { 'content-type': 'application/json' } }),
    });
  const node = await req(devnet.url);
  const nodeText = await node.text();
  const gateway = await req(gw.url);
  return { node, nodeText, gateway, gatewayText: await gateway.text() };
}

describe('every node route answers what the node answers', () => {
  it('byte for byte, with the node’s status and content type', async () => {
    const routes: Array<[string, { method?: string; body?: string }?]> = [
      [`/v2/contracts/source/${D}/demo-dao?proof=0`],
      [`/v2/contracts/source/${D}/nobody`],
      [`/v2/contracts/interface/${D}/demo-token`],
      [`/v2/constant_val/${D}/demo-dao/created-at`],
      [`/v2/traits/${D}/demo-token/${D}/sip-010-trait-ft-standard/sip-010-trait`],
      [`/v2/traits/${D}/demo-dao/${D}/sip-010-trait-ft-standard/sip-010-trait`],
      [`/v2/data_var/${D}/demo-dao/proposal-count`],
      [`/v2/data_var/${D}/demo-dao/no-such-var`],
      [`/v2/map_entry/${D}/demo-dao/members`, { body: JSON.stringify(cvToHex(Cl.principal(W1))) }],
      [`/v2/accounts/${W1}?proof=0`],
      ['/v2/pox'],
      ['/v3/tenures/info'],
      ['/v2/fees/transfer'],
      [
        `/v2/contracts/call-read/${D}/demo-token/get-name`,
        { body: JSON.stringify({ sender: D, arguments: [] }) },
      ],
    ];
    for (const [path, init] of routes) {
      const { node, nodeText, gateway, gatewayText } = await both(path, init);
      expect(gateway.status, path).toBe(node.status);
      expect(gatewayText, path).toBe(nodeText);
      expect(gateway.headers.get('content-type'), path).toBe(node.headers.get('content-type'));
    }
  });

  it('says which contracts implement a trait, as the node does', async () => {
    const yes = await fetch(
      `${gw.url}/v2/traits/${D}/demo-token/${D}/sip-010-trait-ft-standard/sip-010-trait`,
    );
    expect(await yes.json()).toEqual({ is_implemented: true });
    const no = await fetch(`${gw.url}/v2/traits/${D}/demo-dao/${D}/sip-010-trait-ft-standard/sip-010-trait`);
    expect(await no.json()).toEqual({ is_implemented: false });
  });

  it('answers /v2/info from the node, with the identity of its chain', async () => {
    const res = await fetch(`${gw.url}/testnet/v2/info`);
    const info = (await res.json()) as { genesis_chainstate_hash: string; network_id: number };
    expect(info.genesis_chainstate_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(info.network_id).toBe(2147483648);
  });
});

describe('stacks.js 7 pointed at the gateway', () => {
  const client = () => ({ baseUrl: gw.url });

  it('reads: fetchNonce, fetchFeeEstimateTransfer, fetchContractMapEntry, fetchAbi, fetchCallReadOnlyFunction', async () => {
    expect(await fetchNonce({ address: W1, network, client: client() })).toBe(0n);
    const transfer = await makeSTXTokenTransfer({
      recipient: D,
      amount: 1n,
      senderKey: DEVNET_PRIVATE_KEYS.wallet_1,
      network,
      fee: 0,
      nonce: 0,
    });
    expect(
      await fetchFeeEstimateTransfer({ transaction: transfer, network, client: client() }),
    ).toBeGreaterThan(0n);
    const member = await fetchContractMapEntry({
      contractAddress: D,
      contractName: 'demo-dao',
      mapName: 'members',
      mapKey: Cl.principal(W1),
      network,
      client: client(),
    });
    expect(member).toMatchObject(Cl.some(Cl.tuple({ role: Cl.stringAscii('member') })));
    const abi = await fetchAbi({ contractAddress: D, contractName: 'demo-dao', network, client: client() });
    expect(abi.functions.map((f) => f.name)).toContain('propose');
    const name = await fetchCallReadOnlyFunction({
      contractAddress: D,
      contractName: 'demo-token',
      functionName: 'get-name',
      functionArgs: [],
      senderAddress: W1,
      network,
      client: client(),
    });
    expect(name).toMatchObject(Cl.ok(Cl.stringAscii('Demo Token')));
  });

  it('broadcastTransaction: sent once, mined, and the new state read through the gateway', async () => {
    const countPath = `/v2/data_var/${D}/demo-dao/proposal-count`;
    const before = (await (await fetch(`${gw.url}${countPath}`)).json()) as { data: string };
    const again = await fetch(`${gw.url}${countPath}`);
    expect(again.headers.get('cache-status')).toMatch(/hit/);
    const tip = devnet.tipHeight();
    const tx = await makeContractCall({
      contractAddress: D,
      contractName: 'demo-dao',
      functionName: 'propose',
      functionArgs: [
        Cl.stringAscii('Through the gateway'),
        Cl.stringUtf8('broadcast via clarity-cache'),
        Cl.int(1),
        Cl.list([Cl.stringAscii('gateway')]),
        Cl.bufferFromHex('cd'.repeat(32)),
        Cl.none(),
      ],
      senderKey: DEVNET_PRIVATE_KEYS.wallet_1,
      network,
      client: client(),
    });
    const result = await broadcastTransaction({ transaction: tx, network, client: client() });
    expect(result).toEqual({ txid: tx.txid() });
    expect(devnet.tipHeight()).toBe(tip + 1);
    // NODE_MAX_BLOCKS=0: the value read a block ago is not served; the new one is.
    const after = await fetch(`${gw.url}${countPath}`);
    const count = BigInt(`0x${((await after.json()) as { data: string }).data.slice(4)}`);
    expect(count).toBe(BigInt(`0x${before.data.slice(4)}`) + 1n);
    expect(after.headers.get('x-canonical-stacks-tip-height')).toBe(String(tip + 1));
    expect(await fetchNonce({ address: W1, network, client: client() })).toBe(1n);
  });
});
