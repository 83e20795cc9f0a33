/**
 * What an answer kept current by the event observer tells, on every path (docs/events.md), over
 * real HTTP: the gateway follows the fake node through a proxy that needs a path prefix and a
 * key in its query (as a hosted node does), and this test posts the node's blocks to the
 * observer. The tip /v2/info described at start-up is held, so the first block continues the
 * proofs of entries read at it; a replayed hit tells the present tip; node routes follow too
 * (fast-call-read as call-read); an answer that carried no tip height of its node starts no
 * proof; a node route's 404 is remembered until the contract's deploy; contract sources are
 * read through the gateway's own node route, the upstream's prefix and key included.
 */
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  Cl,
  getAddressFromPrivateKey,
  makeContractCall,
  makeContractDeploy,
  makeRandomPrivKey,
  serializeCV,
  serializeTransaction,
} from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventDispatcher } from '../../../src/devnet/event-dispatcher.js';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import {
  type JsonResponse,
  type RunningGateway,
  request,
  startGateway,
  testEnv,
} from '../../support/gateway.js';

const DEPLOYER = 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM';
const id = (name: string) => `${DEPLOYER}.${name}`;
const key = makeRandomPrivKey();
const signer = getAddressFromPrivateKey(key, 'testnet');
const PREFIX = '/hosted';
const API_KEY = 'k-observer-test';

const SOURCES: Record<string, string> = {
  token:
    '(define-map balances principal uint) (define-read-only (get-balance (who principal)) (default-to u0 (map-get? balances who))) (define-public (mint) (ok (map-set balances tx-sender u1)))',
  vault:
    '(define-private (of (who principal)) (contract-call? .token get-balance who)) (define-read-only (get-vault (ws (list 2 principal))) (map of ws)) (define-read-only (get-fee) u5)',
  other: '(define-data-var n uint u0) (define-public (bump) (ok (var-set n (+ u1 (var-get n)))))',
};
const fn = (name: string, args: { name: string; type: unknown }[] = []) => ({
  name,
  access: 'read_only',
  args,
  outputs: { type: 'uint128' },
});
const ABIS: Record<string, unknown> = {
  token: { functions: [fn('get-balance', [{ name: 'who', type: 'principal' }])], variables: [], maps: [] },
  vault: {
    functions: [
      fn('get-vault', [{ name: 'ws', type: { list: { type: 'principal', length: 2 } } }]),
      fn('get-fee'),
    ],
    variables: [],
    maps: [],
  },
  other: { functions: [], variables: [{ name: 'n', type: 'uint128', access: 'variable' }], maps: [] },
};

let node: FakeNode;
let proxy: Server;
const proxied: string[] = [];
let gw: RunningGateway;
let dispatcher: EventDispatcher;
/** What the node answers for the vault's reads; a block that "runs" the vault changes it. */
let vaultValue = 1;

/** A hosted node: only `${PREFIX}/...?apikey=${API_KEY}` is let through, stripped, to the fake node. */
function startProxy(target: FakeNode): Promise<Server> {
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (!url.pathname.startsWith(`${PREFIX}/`) || url.searchParams.get('apikey') !== API_KEY) {
      res.writeHead(401, { 'content-type': 'text/plain' }).end('no key');
      return;
    }
    proxied.push(req.url ?? '');
    url.searchParams.delete('apikey');
    const upstream = httpRequest(
      `${target.url}${url.pathname.slice(PREFIX.length)}${url.search}`,
      { method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    req.pipe(upstream);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

beforeAll(async () => {
  node = await startFakeNode({ tipHeight: 100 });
  for (const name of Object.keys(SOURCES)) {
    node.setAbi(DEPLOYER, name, ABIS[name]);
    node.setSource(DEPLOYER, name, SOURCES[name]!);
  }
  const u = (n: number) => ({ okay: true as const, result: `0x${serializeCV(Cl.uint(n))}` });
  node.setReadOnly(DEPLOYER, 'vault', 'get-vault', () => u(vaultValue));
  node.setReadOnly(DEPLOYER, 'vault', 'get-fee', () => u(5));
  node.setRoute('POST', `/v3/contracts/fast-call-read/${DEPLOYER}/vault/get-fee`, () => ({
    status: 200,
    body: JSON.stringify(u(5)),
    headers: { 'content-type': 'application/json', 'x-canonical-stacks-tip-height': String(node.tipHeight) },
  }));
  node.setRoute('GET', `/v2/data_var/${DEPLOYER}/other/n`, () => ({
    status: 200,
    body: JSON.stringify({ data: `0x${serializeCV(Cl.uint(7))}` }),
    headers: { 'content-type': 'application/json', 'x-canonical-stacks-tip-height': String(node.tipHeight) },
  }));
  node.setRoute('GET', `/v2/data_var/${signer}/fresh/n`, {
    status: 404,
    body: 'Data var not found',
    headers: { 'content-type': 'text/plain' },
  });
  proxy = await startProxy(node);
  const upstream = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}${PREFIX}?apikey=${API_KEY}`;
  // No contractSource: the observer reads sources through the gateway's own node route.
  gw = await startGateway(
    testEnv(upstream, {
      EVENT_OBSERVER_PORT: '0',
      EVENT_OBSERVER_NETWORK: 'testnet',
      CHAIN_TIP_MAX_AGE_MS: '60000',
      NODE_MAX_BLOCKS: '0',
    }),
  );
  // As at start-up: one /v2/info per upstream; its tip is held by the observer.
  await gw.gateway.startupRound?.();
  dispatcher = new EventDispatcher({ urls: [`http://${gw.gateway.observer!.address}`], attempts: 1 });
}, 30_000);

afterAll(async () => {
  await gw?.close();
  await new Promise((resolve) => proxy?.close(resolve));
  await node?.close();
});

async function callTx(contract: string, name: string, nonce: number): Promise<string> {
  return serializeTransaction(
    await makeContractCall({
      senderKey: key,
      network: 'testnet',
      fee: 0,
      nonce,
      contractAddress: DEPLOYER,
      contractName: contract,
      functionName: name,
      functionArgs: [],
    }),
  );
}

/** The node makes its next block with these transactions and posts it to the observer. */
async function block(txs: string[] = []): Promise<number> {
  const follower = gw.gateway.observer!.follower;
  const before = follower.handled;
  const parent = node.block(node.tipHeight);
  const made = node.mine();
  await dispatcher.dispatch({
    block: made,
    parent,
    transactions: txs.map((rawTx, i) => ({
      rawTx,
      txid: `0x${String(made.height * 100 + i).padStart(64, '0')}`,
    })),
    events: [],
  });
  await follower.untilHandled(before + 1);
  return made.height;
}

const W = [DEPLOYER, signer];
const vault = (): Promise<JsonResponse> =>
  request(`${gw.url}/contract-calls/read-only/${DEPLOYER}/vault/get-vault`, {
    body: {
      functionArgs: [{ type: 'list', value: W.map((w) => ({ type: 'principal', value: w })) }],
      cacheControl: { maxBlocks: 0 },
    },
  });
const tipOf = (res: { headers: Headers }) => Number(res.headers.get('x-canonical-stacks-tip-height'));
const cacheOf = (res: { headers: Headers }) => res.headers.get('cache-status') ?? '';

/** Waits until the analysis of what `contract::function` depends on is known to the proofs. */
async function analysed(contract: string, functionName: string): Promise<void> {
  await gw.gateway.observer!.dependsOn(id(contract), functionName);
}

describe('answers kept current by the observer', () => {
  it('continue from the start-up tip, and every answer, replayed ones included, tells the present tip', async () => {
    const first = await vault();
    expect(first.status).toBe(200);
    expect(cacheOf(first)).toContain('fwd=miss');
    expect(tipOf(first)).toBe(100);
    await analysed('vault', 'get-vault');

    // Block 101, the child of the tip /v2/info described: it runs another contract only.
    expect(await block([await callTx('other', 'bump', 0)])).toBe(101);
    const kept = await vault();
    expect(cacheOf(kept)).toMatch(/^clarity-cache; hit/);
    expect(kept.body).toEqual(first.body);
    expect(tipOf(kept)).toBe(101);

    // Replayed by the fast lane from here on: the tip it tells still moves with the chain.
    const servedBefore = gw.gateway.lane.served;
    await block();
    const replayed = await vault();
    expect(gw.gateway.lane.served).toBeGreaterThan(servedBefore);
    expect(cacheOf(replayed)).toMatch(/^clarity-cache; hit/);
    expect(tipOf(replayed)).toBe(102);
    await block();
    const again = await vault();
    expect(gw.gateway.lane.served).toBeGreaterThan(servedBefore + 1);
    expect(tipOf(again)).toBe(103);
    // A batch item's meta tells the same tip.
    const batch = await request(`${gw.url}/contract-calls/batch`, {
      body: {
        calls: [
          {
            contractAddress: DEPLOYER,
            contractName: 'vault',
            functionName: 'get-vault',
            functionArgs: [{ type: 'list', value: W.map((w) => ({ type: 'principal', value: w })) }],
            cacheControl: { maxBlocks: 0 },
          },
        ],
      },
    });
    expect(batch.status).toBe(200);
    expect(batch.body.data.results[0].meta).toMatchObject({ tipHeight: 103 });
    expect(batch.body.data.results[0].meta.cacheStatus).toMatch(/^clarity-cache; hit/);

    // A block that runs the token, which the vault reads through a helper handed to `map`.
    vaultValue = 2;
    const touched = await block([await callTx('token', 'mint', 1)]);
    const fresh = await vault();
    expect(cacheOf(fresh)).toMatch(/fwd=(stale|miss)/);
    expect(fresh.body.data).toBe('2');
    expect(tipOf(fresh)).toBe(touched);
  });

  it('read contract sources through the gateway: the upstream prefix and key, and the cache', async () => {
    const sourceRequests = proxied.filter((u) => u.includes('/v2/contracts/source/'));
    // Each contract once, as the hosted node wants them: those read, and those blocks ran.
    expect(sourceRequests.sort()).toEqual([
      `${PREFIX}/v2/contracts/source/${DEPLOYER}/other?proof=0&apikey=${API_KEY}`,
      `${PREFIX}/v2/contracts/source/${DEPLOYER}/token?proof=0&apikey=${API_KEY}`,
      `${PREFIX}/v2/contracts/source/${DEPLOYER}/vault?proof=0&apikey=${API_KEY}`,
    ]);
    const res = await fetch(`${gw.url}/v2/contracts/source/${DEPLOYER}/vault?proof=0`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { source: string }).source).toBe(SOURCES.vault);
    expect(res.headers.get('cache-status')).toMatch(/^clarity-cache; hit/);
  });

  it('node routes tell the tip they are current at; fast-call-read follows its function', async () => {
    const path = `${gw.url}/v2/data_var/${DEPLOYER}/other/n`;
    const fast = () =>
      request(`${gw.url}/v3/contracts/fast-call-read/${DEPLOYER}/vault/get-fee`, {
        body: { sender: DEPLOYER, arguments: [] },
      });
    const v1 = await fetch(path);
    await v1.text();
    const f1 = await fast();
    expect(f1.status).toBe(200);
    expect(cacheOf(f1)).toContain('fwd=miss');
    await analysed('vault', 'get-fee');
    const height = await block([await callTx('token', 'mint', 2)]);
    // The token ran: neither the data var of `other` nor the vault's fee depends on it.
    const v2 = await fetch(path);
    await v2.text();
    expect(cacheOf(v2)).toMatch(/^clarity-cache; hit/);
    expect(tipOf(v2)).toBe(height);
    const f2 = await fast();
    expect(cacheOf(f2)).toMatch(/^clarity-cache; hit/);
    expect(tipOf(f2)).toBe(height);
    // `other` runs: its data var is read again, at the new tip.
    const next = await block([await callTx('other', 'bump', 3)]);
    const v3 = await fetch(path);
    await v3.text();
    expect(cacheOf(v3)).not.toMatch(/^clarity-cache; hit/);
    expect(tipOf(v3)).toBe(next);
  });

  it('an answer whose node reported no tip height starts no proof', async () => {
    node.tipHeader(false);
    try {
      const read = () =>
        request(`${gw.url}/contract-calls/read-only/${DEPLOYER}/vault/get-fee`, {
          body: { functionArgs: [], cacheControl: { maxBlocks: 0 } },
        });
      const first = await read();
      expect(cacheOf(first)).toContain('fwd=');
      await analysed('vault', 'get-fee');
      await block();
      const second = await read();
      // Nothing touched the vault, but the height it was stored at was the gateway's guess.
      expect(cacheOf(second)).not.toMatch(/^clarity-cache; hit/);
    } finally {
      node.tipHeader(true);
    }
  });

  it('remembers a node route 404 until the contract is deployed', async () => {
    const path = `${gw.url}/v2/data_var/${signer}/fresh/n`;
    const count = () => node.requests.filter((r) => r.path === `/v2/data_var/${signer}/fresh/n`).length;
    const a = await fetch(path);
    expect(a.status).toBe(404);
    expect(await a.text()).toBe('Data var not found');
    const b = await fetch(path);
    expect(b.status).toBe(404);
    expect(b.headers.get('cache-status')).toMatch(/^clarity-cache; hit/);
    await b.text();
    expect(count()).toBe(1);
    const deploy = await makeContractDeploy({
      senderKey: key,
      network: 'testnet',
      fee: 0,
      nonce: 4,
      contractName: 'fresh',
      codeBody: '(define-data-var n uint u3)',
    });
    await block([serializeTransaction(deploy)]);
    await (await fetch(path)).text();
    expect(count()).toBe(2);
  });
});
