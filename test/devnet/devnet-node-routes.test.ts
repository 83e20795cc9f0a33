/**
 * The devnet's node routes for stacks.js (src/devnet/devnet-node-routes.ts, broadcast.ts) over real
 * HTTP against the real Clarity VM and the sample contracts of contracts/, then stacks.js 7
 * itself pointed at the devnet: reads, fee estimates, and a signed contract call broadcast,
 * mined in one block that the event observer receives.
 * Tests run in file order and share one devnet; the state-changing ones come last.
 */
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import {
  broadcastTransaction,
  Cl,
  type ClarityValue,
  cvToHex,
  deserializeCV,
  fetchAbi,
  fetchCallReadOnlyFunction,
  fetchContractMapEntry,
  fetchFeeEstimateTransfer,
  fetchNonce,
  makeContractCall,
  makeContractDeploy,
  makeSTXTokenTransfer,
  serializePayload,
  serializeTransaction,
} from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INITIAL_USTX_BALANCE } from '../../src/devnet/accounts.js';
import { DEVNET_PRIVATE_KEYS, type Devnet, startDevnet } from '../../src/devnet/index.js';
import { http, readValue } from './helpers.js';

let devnet: Devnet;
let url: string;
let D: string;
let W1: string;
let W2: string;
let DAO: string;
/** Bodies of the /new_block posts the devnet made to the test's observer. */
const newBlocks: Array<{ block_height: number; transactions: Array<{ txid: string; raw_tx: string }> }> = [];
let observer: Server;

const hex = (value: ClarityValue) => cvToHex(value);
const client = () => ({ baseUrl: url });
const network = 'devnet' as const;

beforeAll(async () => {
  observer = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.url === '/new_block') newBlocks.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      res.end();
    });
  });
  await new Promise<void>((resolve) => observer.listen(0, '127.0.0.1', resolve));
  const address = observer.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  devnet = await startDevnet({ port: 0, eventObserverUrls: [`http://127.0.0.1:${port}`] });
  url = devnet.url;
  D = devnet.deployer;
  W1 = devnet.accounts.wallet_1;
  W2 = devnet.accounts.wallet_2;
  DAO = `${D}.demo-dao`;
}, 90_000);

afterAll(async () => {
  await devnet?.close();
  await new Promise((resolve) => observer?.close(resolve));
});

describe('GET /v2/contracts/source', () => {
  it('answers the source as deployed and the height that published it', async () => {
    const res = await http(`${url}/v2/contracts/source/${D}/demo-dao?proof=0`);
    expect(res.status).toBe(200);
    expect(res.json).toEqual({
      source: await readFile('contracts/demo-dao.clar', 'utf8'),
      // Five sample contracts, one block each from height 2: demo-dao is the last.
      publish_height: 6,
    });
    const token = await http(`${url}/v2/contracts/source/${D}/demo-token`);
    expect(token.json.publish_height).toBe(4);
    // Without ?proof=0 a node adds a MARF proof; the devnet has none to give.
    expect(token.json.proof).toBe('');
  });

  it('is 404 for a contract nobody deployed', async () => {
    const res = await http(`${url}/v2/contracts/source/${D}/no-such-contract?proof=0`);
    expect(res.status).toBe(404);
    expect(res.text).toBe('No contract source data found');
  });
});

describe('GET /v2/data_var', () => {
  it('answers data vars serialized', async () => {
    const count = await http(`${url}/v2/data_var/${D}/demo-dao/proposal-count?proof=0`);
    expect(count.status).toBe(200);
    expect(count.json).toEqual({ data: hex(Cl.uint(2)) });
    const locked = await http(`${url}/v2/data_var/${D}/demo-dao/treasury-locked`);
    expect(locked.json).toEqual({ data: hex(Cl.bool(true)), proof: '' });
    const uri = await http(`${url}/v2/data_var/${D}/demo-token/token-uri?proof=0`);
    expect(uri.json.data).toBe(hex(Cl.some(Cl.stringUtf8('https://example.com/demo-token.json'))));
  });

  it('is 404 for an unknown var or contract, and for a constant', async () => {
    for (const path of [
      `${D}/demo-dao/no-such-var`,
      `${D}/nothing/proposal-count`,
      `${D}/demo-dao/deployer`,
    ]) {
      const res = await http(`${url}/v2/data_var/${path}?proof=0`);
      expect(res.status, path).toBe(404);
    }
  });
});

describe('POST /v2/map_entry', () => {
  const entry = (map: string, key: ClarityValue, contract = 'demo-dao') =>
    http(`${url}/v2/map_entry/${D}/${contract}/${map}?proof=0`, { body: hex(key) });

  it('answers (some value) for a present key', async () => {
    const res = await entry('members', Cl.principal(D));
    expect(res.status).toBe(200);
    expect(res.json.proof).toBeUndefined();
    const joinedAt = deserializeCV(res.json.data);
    expect(joinedAt).toEqual(
      Cl.some(
        Cl.tuple({ role: Cl.stringAscii('founder'), 'joined-at': expect.anything(), weight: Cl.uint(100) }),
      ),
    );
    const vote = await entry('votes', Cl.tuple({ 'proposal-id': Cl.uint(1), voter: Cl.principal(W2) }));
    expect(vote.json.data).toBe(hex(Cl.some(Cl.tuple({ 'in-favor': Cl.bool(false), weight: Cl.uint(5) }))));
  });

  it('answers none (0x09) for an absent key', async () => {
    const res = await entry('members', Cl.principal(devnet.accounts.wallet_5));
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ data: '0x09' });
    expect((await entry('proposals', Cl.uint(999))).json.data).toBe('0x09');
  });

  it('is 404 for an unknown map and 400 for a body that is not a serialized value', async () => {
    expect((await entry('no-such-map', Cl.uint(1))).status).toBe(404);
    expect((await entry('members', Cl.uint(1), 'no-such-contract')).status).toBe(404);
    const bad = await http(`${url}/v2/map_entry/${D}/demo-dao/members`, { body: '0xzz' });
    expect(bad.status).toBe(400);
    const notString = await http(`${url}/v2/map_entry/${D}/demo-dao/members`, { body: { key: '0x09' } });
    expect(notString.status).toBe(400);
  });
});

describe('GET /v2/constant_val', () => {
  it('answers constants as evaluated at their deployment', async () => {
    const constant = async (contract: string, name: string) => {
      const res = await http(`${url}/v2/constant_val/${D}/${contract}/${name}`);
      expect(res.status, name).toBe(200);
      return res.json.data as string;
    };
    expect(await constant('demo-dao', 'deployer')).toBe(hex(Cl.principal(D)));
    expect(await constant('demo-dao', 'err-not-found')).toBe(hex(Cl.error(Cl.uint(404))));
    expect(await constant('demo-token', 'err-invalid-amount')).toBe(hex(Cl.error(Cl.uint(102))));
    // created-at and charter-hash as the contract itself reports them.
    const info = (await readValue(url, DAO, 'get-dao-info', [], D)) as {
      value: Record<string, ClarityValue>;
    };
    expect(await constant('demo-dao', 'created-at')).toBe(hex(info.value['created-at']!));
    expect(await constant('demo-dao', 'charter-hash')).toBe(hex(info.value['charter-hash']!));
  });

  it('is 404 for an unknown constant, and for a data var', async () => {
    expect((await http(`${url}/v2/constant_val/${D}/demo-dao/no-such-constant`)).status).toBe(404);
    expect((await http(`${url}/v2/constant_val/${D}/demo-dao/proposal-count`)).status).toBe(404);
  });
});

describe('GET /v2/accounts', () => {
  it('answers balance and locked as 0x + 32 hex digits, and the nonce', async () => {
    const res = await http(`${url}/v2/accounts/${devnet.accounts.wallet_4}?proof=0`);
    expect(res.status).toBe(200);
    expect(res.json).toEqual({
      balance: `0x${INITIAL_USTX_BALANCE.toString(16).padStart(32, '0')}`,
      locked: `0x${'0'.repeat(32)}`,
      unlock_height: 0,
      nonce: 0,
    });
    // The deployer sent five deployments at start-up.
    const deployer = await http(`${url}/v2/accounts/${D}`);
    expect(deployer.json).toMatchObject({ nonce: 5, balance_proof: '', nonce_proof: '' });
  });

  it('answers a contract principal, and refuses what is no principal', async () => {
    const contract = await http(`${url}/v2/accounts/${DAO}?proof=0`);
    expect(contract.json).toMatchObject({ balance: `0x${'0'.repeat(32)}`, nonce: 0 });
    expect((await http(`${url}/v2/accounts/not-a-principal`)).status).toBe(400);
  });
});

describe('PoX, tenure and fee information', () => {
  it('GET /v2/pox answers the fields stacks.js reads', async () => {
    const res = await http(`${url}/v2/pox`);
    expect(res.status).toBe(200);
    const pox = res.json;
    expect(pox.contract_id).toBe('ST000000000000000000002AMW42H.pox-4');
    expect(pox.current_burnchain_block_height).toBe((await http(`${url}/v2/info`)).json.burn_block_height);
    for (const field of [
      'first_burnchain_block_height',
      'min_amount_ustx',
      'reward_cycle_length',
      'prepare_phase_block_length',
      'reward_cycle_id',
      'next_reward_cycle_in',
      'total_liquid_supply_ustx',
    ]) {
      expect(Number.isInteger(pox[field]), field).toBe(true);
    }
    expect(pox.current_cycle).toMatchObject({
      id: pox.reward_cycle_id,
      stacked_ustx: 0,
      is_pox_active: false,
    });
    expect(pox.next_cycle.id).toBe(pox.reward_cycle_id + 1);
    expect(pox.next_cycle.reward_phase_start_block_height - pox.current_burnchain_block_height).toBe(
      pox.next_reward_cycle_in,
    );
  });

  it('GET /v3/tenures/info names the tip block and its tenure', async () => {
    const res = await http(`${url}/v3/tenures/info`);
    expect(res.status).toBe(200);
    const tip = devnet.tipHeight();
    const block = (await http(`${url}/devnet/blocks/${tip}`)).json;
    expect(res.json).toMatchObject({
      consensus_hash: block.consensusHash,
      tip_block_id: block.indexBlockHash,
      tip_height: tip,
      reward_cycle: expect.any(Number),
    });
    for (const field of ['tenure_start_block_id', 'parent_tenure_start_block_id'])
      expect(res.json[field]).toMatch(/^[0-9a-f]{64}$/);
    expect(res.json.parent_consensus_hash).toMatch(/^[0-9a-f]{40}$/);
  });

  it('GET /v2/fees/transfer is a fee rate; POST /v2/fees/transaction three estimates', async () => {
    const rate = await http(`${url}/v2/fees/transfer`);
    expect(rate.status).toBe(200);
    expect(rate.json).toBe(1);
    const call = await makeContractCall({
      contractAddress: D,
      contractName: 'demo-dao',
      functionName: 'join',
      functionArgs: [],
      senderKey: DEVNET_PRIVATE_KEYS.wallet_2,
      network,
      fee: 0,
      nonce: 0,
    });
    const payload = serializePayload(call.payload);
    const res = await http(`${url}/v2/fees/transaction`, {
      body: { transaction_payload: `0x${payload}`, estimated_len: 180 },
    });
    expect(res.status).toBe(200);
    expect(res.json.estimations).toHaveLength(3);
    const fees = res.json.estimations.map((e: { fee: number }) => e.fee);
    expect(fees).toEqual([...fees].sort((a, b) => a - b));
    expect(res.json.estimations[0]).toEqual({ fee_rate: 1, fee: 180 });
    expect(res.json).toHaveProperty('estimated_cost');
    expect(res.json).toHaveProperty('estimated_cost_scalar');
    expect(res.json).toHaveProperty('cost_scalar_change_by_byte');
    const bad = await http(`${url}/v2/fees/transaction`, { body: { transaction_payload: 'zz' } });
    expect(bad.status).toBe(400);
  });
});

describe('POST /v2/transactions refusals', () => {
  it('refuses bytes that are no transaction, with its txid', async () => {
    const res = await http(`${url}/v2/transactions`, {
      rawBody: '\u0000\u0080',
      contentType: 'application/octet-stream',
    });
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ error: 'transaction rejected', reason: 'Deserialization' });
    expect(res.json.txid).toMatch(/^[0-9a-f]{64}$/);
    const json = await http(`${url}/v2/transactions`, { body: { tx: 'not hex' } });
    expect(json.status).toBe(400);
  });

  it('refuses a bad signature, a stale nonce and an unknown contract, making no block', async () => {
    const tip = devnet.tipHeight();
    const call = (nonce: number, contractName = 'demo-dao') =>
      makeContractCall({
        contractAddress: D,
        contractName,
        functionName: 'join',
        functionArgs: [],
        senderKey: DEVNET_PRIVATE_KEYS.wallet_2,
        network,
        fee: 200,
        nonce,
      });
    const tampered = await call(0);
    tampered.auth.spendingCondition.nonce = 7n;
    const signature = await broadcastTransaction({ transaction: tampered, network, client: client() });
    expect(signature).toMatchObject({ error: 'transaction rejected', reason: 'SignatureValidation' });
    const stale = await broadcastTransaction({ transaction: await call(3), network, client: client() });
    expect(stale).toMatchObject({
      reason: 'BadNonce',
      reason_data: { expected: 0, actual: 3 },
      txid: (await call(3)).txid(),
    });
    const missing = await broadcastTransaction({
      transaction: await call(0, 'no-such-contract'),
      network,
      client: client(),
    });
    expect(missing).toMatchObject({ reason: 'NoSuchContract' });
    // Deploying over a contract would panic simnet's VM: refused first, as a node refuses it.
    const redeploy = await makeContractDeploy({
      contractName: 'demo-dao',
      codeBody: '(define-read-only (f) u1)',
      senderKey: DEVNET_PRIVATE_KEYS.deployer,
      network,
      fee: 200,
      nonce: 5,
    });
    expect(await broadcastTransaction({ transaction: redeploy, network, client: client() })).toMatchObject({
      reason: 'ContractAlreadyExists',
    });
    expect(devnet.tipHeight()).toBe(tip);
    expect((await http(`${url}/v2/accounts/${W2}?proof=0`)).json.nonce).toBe(0);
    expect((await http(`${url}/v2/accounts/${D}?proof=0`)).json.nonce).toBe(5);
  });
});

describe('stacks.js 7 against the devnet', () => {
  it('reads: fetchNonce, fetchFeeEstimateTransfer, fetchContractMapEntry, fetchAbi, fetchCallReadOnlyFunction', async () => {
    expect(await fetchNonce({ address: W1, network, client: client() })).toBe(0n);
    expect(await fetchNonce({ address: D, network, client: client() })).toBe(5n);
    const transfer = await makeSTXTokenTransfer({
      recipient: W2,
      amount: 1n,
      senderKey: DEVNET_PRIVATE_KEYS.wallet_1,
      network,
      fee: 0,
      nonce: 0,
    });
    expect(await fetchFeeEstimateTransfer({ transaction: transfer, network, client: client() })).toBe(
      BigInt(transfer.serializeBytes().byteLength),
    );
    const member = await fetchContractMapEntry({
      contractAddress: D,
      contractName: 'demo-dao',
      mapName: 'members',
      mapKey: Cl.principal(W1),
      network,
      client: client(),
    });
    expect(member).toMatchObject(Cl.some(Cl.tuple({ role: Cl.stringAscii('member'), weight: Cl.uint(10) })));
    const abi = await fetchAbi({ contractAddress: D, contractName: 'demo-dao', network, client: client() });
    expect(abi.functions.map((f) => f.name)).toContain('propose');
    const count = await fetchCallReadOnlyFunction({
      contractAddress: D,
      contractName: 'demo-dao',
      functionName: 'get-proposal-ids',
      functionArgs: [],
      senderAddress: W1,
      network,
      client: client(),
    });
    expect(count).toEqual(Cl.list([Cl.uint(1), Cl.uint(2)]));
  });

  it('makeContractCall + broadcastTransaction: one block, observed, new state, nonce advanced', async () => {
    const tip = devnet.tipHeight();
    const posted = newBlocks.length;
    // Nonce and fee left to stacks.js: it asks the devnet (/v2/accounts, /v2/fees/transaction).
    const tx = await makeContractCall({
      contractAddress: D,
      contractName: 'demo-dao',
      functionName: 'propose',
      functionArgs: [
        Cl.stringAscii('Broadcast'),
        Cl.stringUtf8('sent by stacks.js'),
        Cl.int(-3),
        Cl.list([Cl.stringAscii('devnet')]),
        Cl.bufferFromHex('ab'.repeat(32)),
        Cl.none(),
      ],
      senderKey: DEVNET_PRIVATE_KEYS.wallet_1,
      network,
      client: client(),
    });
    expect(tx.auth.spendingCondition.nonce).toBe(0n);
    expect(tx.auth.spendingCondition.fee).toBeGreaterThan(0n);
    const result = await broadcastTransaction({ transaction: tx, network, client: client() });
    expect(result).toEqual({ txid: tx.txid() });
    expect(devnet.tipHeight()).toBe(tip + 1);

    // The new state, through the node routes and through stacks.js.
    const count = await http(`${url}/v2/data_var/${D}/demo-dao/proposal-count?proof=0`);
    expect(count.json.data).toBe(hex(Cl.uint(3)));
    const proposal = await fetchContractMapEntry({
      contractAddress: D,
      contractName: 'demo-dao',
      mapName: 'proposals',
      mapKey: Cl.uint(3),
      network,
      client: client(),
    });
    expect(proposal).toMatchObject(
      Cl.some(
        Cl.tuple({ title: Cl.stringAscii('Broadcast'), proposer: Cl.principal(W1), delta: Cl.int(-3) }),
      ),
    );
    expect(await fetchNonce({ address: W1, network, client: client() })).toBe(1n);

    // The observer got exactly that block, with the transaction as sent.
    await expect.poll(() => newBlocks.length).toBe(posted + 1);
    const block = newBlocks[posted]!;
    expect(block.block_height).toBe(tip + 1);
    expect(block.transactions).toEqual([
      expect.objectContaining({ txid: `0x${tx.txid()}`, raw_tx: `0x${serializeTransaction(tx)}` }),
    ]);

    // Sent again, it is a stale nonce.
    const again = await broadcastTransaction({ transaction: tx, network, client: client() });
    expect(again).toMatchObject({ reason: 'BadNonce', reason_data: { expected: 1, actual: 0 } });
  });

  it('an STX transfer sent as raw bytes moves the balance', async () => {
    const before = BigInt((await http(`${url}/v2/accounts/${W2}?proof=0`)).json.balance);
    const tx = await makeSTXTokenTransfer({
      recipient: devnet.accounts.wallet_6,
      amount: 1_000n,
      senderKey: DEVNET_PRIVATE_KEYS.wallet_2,
      network,
      fee: 180,
      nonce: 0,
    });
    const res = await fetch(`${url}/v2/transactions`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: tx.serializeBytes(),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toBe(tx.txid());
    const after = (await http(`${url}/v2/accounts/${W2}?proof=0`)).json;
    expect(BigInt(after.balance)).toBe(before - 1_000n);
    expect(after.nonce).toBe(1);
    const recipient = (await http(`${url}/v2/accounts/${devnet.accounts.wallet_6}?proof=0`)).json;
    expect(BigInt(recipient.balance)).toBe(INITIAL_USTX_BALANCE + 1_000n);
  });

  it('a contract deployment: its source, constant, data var and functions answer', async () => {
    const codeBody = [
      '(define-constant owner tx-sender)',
      '(define-read-only (get-owner) owner)',
      '(define-data-var hits uint u41)',
    ].join('\n');
    const tx = await makeContractDeploy({
      contractName: 'broadcast-demo',
      codeBody,
      senderKey: DEVNET_PRIVATE_KEYS.deployer,
      network,
      client: client(),
    });
    expect(tx.auth.spendingCondition.nonce).toBe(5n);
    expect(await broadcastTransaction({ transaction: tx, network, client: client() })).toEqual({
      txid: tx.txid(),
    });
    const source = await http(`${url}/v2/contracts/source/${D}/broadcast-demo?proof=0`);
    expect(source.json).toEqual({ source: codeBody, publish_height: devnet.tipHeight() });
    expect((await http(`${url}/v2/constant_val/${D}/broadcast-demo/owner`)).json.data).toBe(
      hex(Cl.principal(D)),
    );
    expect((await http(`${url}/v2/data_var/${D}/broadcast-demo/hits?proof=0`)).json.data).toBe(
      hex(Cl.uint(41)),
    );
    expect(await readValue(url, `${D}.broadcast-demo`, 'get-owner', [], W1)).toEqual(Cl.principal(D));
    expect(await fetchNonce({ address: D, network, client: client() })).toBe(6n);
  });

  it('a deployment failing analysis is mined as on a node: its block made, its nonce taken', async () => {
    const tip = devnet.tipHeight();
    const tx = await makeContractDeploy({
      contractName: 'broken-demo',
      codeBody: '(define-read-only (f) (+ 1 u1))',
      senderKey: DEVNET_PRIVATE_KEYS.deployer,
      network,
      client: client(),
    });
    expect(await broadcastTransaction({ transaction: tx, network, client: client() })).toEqual({
      txid: tx.txid(),
    });
    expect(devnet.tipHeight()).toBe(tip + 1);
    expect(await fetchNonce({ address: D, network, client: client() })).toBe(7n);
    expect((await http(`${url}/v2/contracts/source/${D}/broken-demo?proof=0`)).status).toBe(404);
  });
});
