/**
 * The local chain's blocks as a node posts them (src/devnet/observers.ts): a transaction with
 * its status and result, and the events of a committed one in the node's shape (prints as
 * `contract_event`, token events with their `asset_identifier`); and epoch 3.3, where a
 * broadcast deployment runs as the Clarity version its payload names (Clarity 4 has
 * `stacks-block-time`). Over real HTTP, on the real Clarity VM.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  Cl,
  ClarityVersion,
  cvToHex,
  makeContractCall,
  makeContractDeploy,
  serializeTransaction,
} from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEVNET_PRIVATE_KEYS, type Devnet, startDevnet } from '../../src/devnet/index.js';
import { http } from './helpers.js';

// biome-ignore lint/suspicious/noExplicitAny: the payload is the node's JSON
type Payload = any;

let devnet31: Devnet;
let devnet33: Devnet;
let observer: Server;
const posted: Payload[] = [];
const waiting: Array<() => void> = [];

beforeAll(async () => {
  observer = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/new_block') posted.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      res.writeHead(200).end();
      for (const wake of waiting.splice(0)) wake();
    });
  });
  await new Promise<void>((resolve) => observer.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(observer.address() as AddressInfo).port}`;
  devnet31 = await startDevnet({ port: 0, eventObserverUrls: [url] });
  devnet33 = await startDevnet({ port: 0, epoch: '3.3' });
}, 90_000);

afterAll(async () => {
  await devnet31?.close();
  await devnet33?.close();
  await new Promise((resolve) => observer?.close(resolve));
});

/** The /new_block payload of `height`, once posted. */
async function payloadAt(height: number): Promise<Payload> {
  for (;;) {
    const found = posted.find((p) => p.block_height === height);
    if (found) return found;
    await new Promise<void>((resolve) => waiting.push(resolve));
  }
}

async function broadcast(devnet: Devnet, tx: Parameters<typeof serializeTransaction>[0]) {
  const res = await http(`${devnet.url}/v2/transactions`, { body: { tx: serializeTransaction(tx) } });
  expect(res.status).toBe(200);
}

const nonceOf = async (devnet: Devnet, who: string): Promise<number> =>
  (await http(`${devnet.url}/v2/accounts/${who}?proof=0`)).json.nonce;

const PROBE = `
(define-fungible-token probe-token)
(define-data-var n uint u0)
(define-public (bump (by uint))
  (begin
    (var-set n (+ (var-get n) by))
    (print {bumped: by})
    (try! (ft-mint? probe-token by tx-sender))
    (if (> by u100) (err u7) (ok (var-get n)))))
(define-public (abort) (ok (unwrap-panic (element-at? (list u1) u9))))
(define-read-only (get-n) (var-get n))
`;

describe('blocks posted with their transactions results and events', () => {
  it('a committed call posts success, its result and its print and token events; a failed one none', async () => {
    const D = devnet31.deployer;
    const key = DEVNET_PRIVATE_KEYS.deployer;
    let nonce = await nonceOf(devnet31, D);
    const common = { network: 'devnet' as const, fee: 0, senderKey: key };
    await broadcast(
      devnet31,
      await makeContractDeploy({ ...common, nonce: nonce++, contractName: 'probe', codeBody: PROBE }),
    );
    const deployed = await payloadAt(devnet31.tipHeight());
    expect(deployed.transactions[0].status).toBe('success');

    await broadcast(
      devnet31,
      await makeContractCall({
        ...common,
        nonce: nonce++,
        contractAddress: D,
        contractName: 'probe',
        functionName: 'bump',
        functionArgs: [Cl.uint(5)],
      }),
    );
    const ok = await payloadAt(devnet31.tipHeight());
    expect(ok.transactions).toHaveLength(1);
    expect(ok.transactions[0]).toMatchObject({ status: 'success', raw_result: cvToHex(Cl.ok(Cl.uint(5))) });
    const txid = ok.transactions[0].txid;
    expect(ok.events).toEqual([
      {
        txid,
        event_index: 0,
        committed: true,
        type: 'contract_event',
        contract_event: {
          contract_identifier: `${D}.probe`,
          topic: 'print',
          raw_value: cvToHex(Cl.tuple({ bumped: Cl.uint(5) })),
        },
      },
      {
        txid,
        event_index: 1,
        committed: true,
        type: 'ft_mint_event',
        ft_mint_event: { asset_identifier: `${D}.probe::probe-token`, recipient: D, amount: '5' },
      },
    ]);

    // (err ...): rolled back, no events.
    await broadcast(
      devnet31,
      await makeContractCall({
        ...common,
        nonce: nonce++,
        contractAddress: D,
        contractName: 'probe',
        functionName: 'bump',
        functionArgs: [Cl.uint(500)],
      }),
    );
    const failed = await payloadAt(devnet31.tipHeight());
    expect(failed.transactions[0]).toMatchObject({
      status: 'abort_by_response',
      raw_result: cvToHex(Cl.error(Cl.uint(7))),
    });
    expect(failed.events).toEqual([]);

    // A runtime abort: mined, (err none), no events.
    await broadcast(
      devnet31,
      await makeContractCall({
        ...common,
        nonce: nonce++,
        contractAddress: D,
        contractName: 'probe',
        functionName: 'abort',
        functionArgs: [],
      }),
    );
    const aborted = await payloadAt(devnet31.tipHeight());
    expect(aborted.transactions[0]).toMatchObject({ status: 'abort_by_response', raw_result: '0x0809' });
    expect(aborted.events).toEqual([]);
    expect((await http(`${devnet31.url}/v2/data_var/${D}/probe/n?proof=0`)).json.data).toBe(
      cvToHex(Cl.uint(5)),
    );
  });

  it('an empty block posts no transaction and no event', async () => {
    await http(`${devnet31.url}/devnet/mine`, { body: {} });
    const empty = await payloadAt(devnet31.tipHeight());
    expect(empty.transactions).toEqual([]);
    expect(empty.events).toEqual([]);
  });
});

describe('epoch 3.3', () => {
  it('deploys a broadcast Clarity 4 contract (stacks-block-time) and a Clarity 3 one (as-contract)', async () => {
    const D = devnet33.deployer;
    const common = { network: 'devnet' as const, fee: 0, senderKey: DEVNET_PRIVATE_KEYS.deployer };
    let nonce = await nonceOf(devnet33, D);
    await broadcast(
      devnet33,
      await makeContractDeploy({
        ...common,
        nonce: nonce++,
        contractName: 'clock',
        codeBody: '(define-read-only (now) stacks-block-time)',
        clarityVersion: ClarityVersion.Clarity4,
      }),
    );
    await broadcast(
      devnet33,
      await makeContractDeploy({
        ...common,
        nonce: nonce++,
        contractName: 'payer',
        codeBody: '(define-read-only (me) (as-contract tx-sender))',
        clarityVersion: ClarityVersion.Clarity3,
      }),
    );
    const clock = await http(`${devnet33.url}/v2/contracts/interface/${D}/clock`);
    expect(clock.json).toMatchObject({ epoch: 'Epoch33', clarity_version: 'Clarity4' });
    const payer = await http(`${devnet33.url}/v2/contracts/interface/${D}/payer`);
    expect(payer.json).toMatchObject({ clarity_version: 'Clarity3' });
    const read = async () =>
      (
        await http(`${devnet33.url}/v2/contracts/call-read/${D}/clock/now`, {
          body: { sender: D, arguments: [] },
        })
      ).json;
    const first = await read();
    expect(first.okay).toBe(true);
    await http(`${devnet33.url}/devnet/mine`, { body: {} });
    const later = await read();
    expect(later.okay).toBe(true);
    expect(later.result).not.toBe(first.result);
    const me = await http(`${devnet33.url}/v2/contracts/call-read/${D}/payer/me`, {
      body: { sender: D, arguments: [] },
    });
    expect(me.json).toEqual({ okay: true, result: cvToHex(Cl.principal(`${D}.payer`)) });
    expect((await http(`${devnet33.url}/v2/pox`)).json.epochs[0].epoch_id).toBe('Epoch33');
  });

  it('in epoch 3.1 a Clarity 4 payload still runs as Clarity 3', async () => {
    const D = devnet31.deployer;
    const nonce = await nonceOf(devnet31, D);
    await broadcast(
      devnet31,
      await makeContractDeploy({
        network: 'devnet',
        fee: 0,
        senderKey: DEVNET_PRIVATE_KEYS.deployer,
        nonce,
        contractName: 'plain',
        codeBody: '(define-read-only (one) u1)',
        clarityVersion: ClarityVersion.Clarity4,
      }),
    );
    const iface = await http(`${devnet31.url}/v2/contracts/interface/${D}/plain`);
    expect(iface.json).toMatchObject({ epoch: 'Epoch31', clarity_version: 'Clarity3' });
  });
});
