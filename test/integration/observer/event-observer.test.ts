/**
 * The event observer over real HTTP (docs/events.md): this test plays the Stacks node's event
 * dispatcher (src/devnet/event-dispatcher.ts, the node's /new_block payload shape) against the
 * gateway's observer listener, in front of the fake node. Valid, duplicate and unusable
 * payloads, gaps and reorgs; and two instances on one real redis-server.
 */
import { readFile } from 'node:fs/promises';
import {
  getAddressFromPrivateKey,
  makeContractCall,
  makeContractDeploy,
  makeRandomPrivKey,
  makeSTXTokenTransfer,
  serializeTransaction,
} from '@stacks/transactions';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { BlockIdentity } from '../../../src/devnet/blocks.js';
import { EventDispatcher, newBlockPayload } from '../../../src/devnet/event-dispatcher.js';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { SAMPLE_ABI } from '../../support/fixtures.js';
import { type RunningGateway, request, startGateway, testEnv } from '../../support/gateway.js';
import { startRedis } from '../../support/redis-server.js';

const DEPLOYER = 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM';
const id = (name: string) => `${DEPLOYER}.${name}`;
const key = makeRandomPrivKey();

const SOURCES = new Map<string, string>([
  [id('demo-token'), await readFile('contracts/demo-token.clar', 'utf8')],
  [id('vault'), '(define-read-only (get-vault) (contract-call? .demo-token get-balance tx-sender))'],
  [id('other'), '(define-data-var n uint u0) (define-public (bump) (ok (var-set n (+ u1 (var-get n)))))'],
]);
const contractSource = async (contractId: string) => {
  const src = SOURCES.get(contractId);
  if (src === undefined) throw new Error(`unknown contract ${contractId}`);
  return src;
};

const hash = (n: number, fork = 0) => (fork * 1_000_000 + n).toString(16).padStart(64, '0');
function identity(height: number, fork = 0): BlockIdentity {
  return {
    height,
    burnBlockHeight: height,
    blockHash: hash(height, fork + 50),
    consensusHash: hash(1).slice(0, 40),
    indexBlockHash: hash(height, fork),
  };
}

async function callTx(contract: string, fn: string): Promise<string> {
  const tx = await makeContractCall({
    senderKey: key,
    network: 'testnet',
    fee: 0,
    nonce: 0,
    contractAddress: DEPLOYER,
    contractName: contract,
    functionName: fn,
    functionArgs: [],
  });
  return serializeTransaction(tx);
}

let node: FakeNode;
let gw: RunningGateway;
let observerUrl: string;
let dispatcher: EventDispatcher;

beforeAll(async () => {
  node = await startFakeNode({ tipHeight: 100 });
  gw = await startGateway(
    testEnv(node.url, { EVENT_OBSERVER_PORT: '0', EVENT_OBSERVER_NETWORK: 'testnet' }),
    { contractSource },
  );
  observerUrl = `http://${gw.gateway.observer!.address}`;
  dispatcher = new EventDispatcher({ urls: [observerUrl], attempts: 1 });
});
afterAll(async () => {
  await gw?.close();
  await node?.close();
});

const follower = () => gw.gateway.observer!.follower;
const ledger = () => gw.gateway.observer!.ledger;

/** Posts a block as the node would, and waits until the gateway applied it. */
async function post(
  height: number,
  opts: {
    fork?: number;
    parentFork?: number;
    txs?: string[];
    events?: unknown[];
    status?: 'success' | 'abort_by_response' | 'abort_by_post_condition';
  } = {},
): Promise<void> {
  const before = follower().handled;
  const parent = height > 0 ? identity(height - 1, opts.parentFork ?? opts.fork ?? 0) : undefined;
  await dispatcher.dispatch({
    block: identity(height, opts.fork ?? 0),
    parent,
    transactions: (opts.txs ?? []).map((rawTx, i) => ({
      rawTx,
      txid: `0x${hash(i)}`,
      ...(opts.status === undefined ? {} : { status: opts.status }),
    })),
    events: opts.events ?? [],
  });
  await follower().untilHandled(before + 1);
}

async function postRaw(path: string, body: string, contentType = 'application/json'): Promise<number> {
  const before = follower().handled;
  const res = await fetch(`${observerUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': contentType },
    body,
  });
  await res.text();
  if (path === '/new_block' || path === '/new_burn_block') await follower().untilHandled(before + 1);
  return res.status;
}

async function metric(name: string): Promise<string> {
  const res = await fetch(`${gw.url}/metrics`);
  return (await res.text())
    .split('\n')
    .filter((l) => l.startsWith(name))
    .join('\n');
}

describe('event observer ingress', () => {
  it('moves the tip at once on /new_block, with no /v2/info, and /ready shows the block', async () => {
    node.resetStats();
    await post(200);
    expect(gw.gateway.chain.known('testnet')).toMatchObject({ height: 200, indexBlockHash: hash(200) });
    expect(node.count('info')).toBe(0);
    const ready = await request(`${gw.url}/ready`);
    expect(ready.body.data.checks.observer).toMatchObject({
      network: 'testnet',
      lastBlock: { height: 200, indexBlockHash: hash(200) },
    });
    expect(ready.body.data.checks.observer.lastBlock.ageMs).toBeGreaterThanOrEqual(0);
    expect(await metric('clarity_cache_observer_blocks_total')).toContain('outcome="started"');
  });

  it('keeps proofs for entries whose contracts no block touched, and ends them for touched ones', async () => {
    await post(201, { txs: [await callTx('other', 'bump')] });
    await post(202, { txs: [await callTx('vault', 'get-vault')] });
    const read = (contracts: string[]) => ({ height: 200, readAt: 0, dependsOn: new Set(contracts) });
    // Read during this run (readAt after it started).
    const at = Date.now();
    const during = (contracts: string[]) => ({ ...read(contracts), readAt: at });
    expect(ledger().current(read([id('demo-nft')]), 202)).toBe(false); // read before the run began
    // Entries read at 200 before the run started cannot be proven; those at 201 after it can.
    expect(ledger().current({ ...during([id('demo-nft')]), height: 201 }, 202)).toBe(true);
    expect(ledger().current({ ...during([id('demo-token')]), height: 201 }, 202)).toBe(false);
    expect(ledger().current({ ...during([id('other')]), height: 201 }, 202)).toBe(true);
    expect(ledger().current({ ...during([id('other')]), height: 200 }, 202)).toBe(false);
    expect(await metric('clarity_cache_observer_invalidations_total')).toContain('scope="contract"');
    // What entries depend on, as the freshness rules will ask it.
    const observer = gw.gateway.observer!;
    expect(await observer.dependsOn(id('vault'), 'get-vault')).toEqual(
      new Set([id('vault'), id('demo-token')]),
    );
    expect(await observer.dependsOn(id('vault'))).toEqual(new Set([id('vault')]));
    expect(await observer.dependsOn(id('nowhere'), 'f')).toBe('volatile');
  });

  it('a transfer touches no contract: what it changes only volatile entries read', async () => {
    const transfer = serializeTransaction(
      await makeSTXTokenTransfer({
        senderKey: key,
        network: 'testnet',
        fee: 0,
        nonce: 0,
        recipient: DEPLOYER,
        amount: 1n,
      }),
    );
    await post(203, { txs: [transfer] });
    expect(
      ledger().current({ height: 202, readAt: Date.now(), dependsOn: new Set([id('demo-nft')]) }, 203),
    ).toBe(true);
    expect(ledger().current({ height: 202, readAt: Date.now(), dependsOn: 'volatile' }, 203)).toBe(false);
    expect(
      ledger().current({ height: 203, readAt: Date.now(), dependsOn: new Set([id('demo-nft')]) }, 203),
    ).toBe(true);
  });

  it('the same block twice changes nothing', async () => {
    const breaks = ledger().breaks;
    await post(203, { txs: [] });
    expect(ledger().tip?.height).toBe(203);
    expect(ledger().breaks).toBe(breaks);
    expect(await metric('clarity_cache_observer_blocks_total')).toContain('outcome="duplicate"');
  });

  it('answers 200 to unusable payloads: no tip moved, every proof ended, counted', async () => {
    await post(204);
    const now = Date.now();
    const entry = { height: 204, readAt: now, dependsOn: new Set([id('demo-nft')]) };
    expect(ledger().current(entry, 204)).toBe(true);
    const tip = gw.gateway.chain.known('testnet');
    expect(await postRaw('/new_block', 'not json {')).toBe(200);
    expect(ledger().current(entry, 204)).toBe(false);
    expect(
      await postRaw('/new_block', JSON.stringify({ block_height: 'x', index_block_hash: hash(999) })),
    ).toBe(200);
    expect(
      await postRaw(
        '/new_block',
        JSON.stringify({
          ...newBlockPayload({ block: identity(205), parent: identity(204), transactions: [], events: [] }),
          transactions: 'no',
        }),
      ),
    ).toBe(200);
    expect(await postRaw('/new_burn_block', '{}')).toBe(200);
    expect(await postRaw('/new_block', '', 'text/plain')).toBe(200);
    expect(gw.gateway.chain.known('testnet')).toEqual(tip);
    expect(ledger().tip).toBeUndefined();
    expect(await metric('clarity_cache_observer_rejected_total')).toMatch(/route="\/new_block"} 4/);
    // The next block starts a new run.
    await post(205);
    expect(ledger().tip?.height).toBe(205);
    expect(ledger().current({ height: 204, readAt: now, dependsOn: new Set([id('demo-nft')]) }, 205)).toBe(
      false,
    );
  });

  it('answers 200 to the node’s other event routes and acts on none', async () => {
    const handled = follower().handled;
    for (const path of [
      '/new_mempool_tx',
      '/drop_mempool_tx',
      '/new_microblocks',
      '/attachments/new',
      '/stackerdb_chunks',
      '/proposal_response',
      '/anything/else',
    ]) {
      expect(await postRaw(path, '[]')).toBe(200);
    }
    expect(
      await postRaw(
        '/new_burn_block',
        JSON.stringify({ burn_block_height: 5, burn_block_hash: `0x${hash(5)}`, reward_recipients: [] }),
      ),
    ).toBe(200);
    expect(follower().handled).toBe(handled + 1);
    expect(ledger().tip?.height).toBe(205);
  });

  it('a gap or a reorg ends proofs for entries read before it', async () => {
    await post(206);
    const entry = { height: 206, readAt: Date.now(), dependsOn: new Set([id('demo-nft')]) };
    await post(208, { fork: 0 }); // 207 missed
    expect(ledger().current(entry, 208)).toBe(false);
    await post(209);
    const later = { height: 209, readAt: Date.now(), dependsOn: new Set([id('demo-nft')]) };
    await post(210);
    expect(ledger().current(later, 210)).toBe(true);
    await post(210, { fork: 3, parentFork: 3 }); // a sibling of 210 on another fork
    expect(ledger().current(later, 210)).toBe(false);
    expect(await metric('clarity_cache_observer_blocks_total')).toContain('outcome="restarted"');
  });
});

describe('node routes kept current by the proof', () => {
  it('a data var read blocks ago serves while no block touched its contract, and is read again after one did', async () => {
    // After the reorg above the run restarted at 210 (fork 3): continue that chain.
    const path = `/v2/data_var/${DEPLOYER}/other/n`;
    let value = 1;
    node.setRoute('GET', path, () => ({
      status: 200,
      body: JSON.stringify({ data: `0x01${value.toString(16).padStart(32, '0')}`, proof: '' }),
      headers: { 'content-type': 'application/json' },
    }));
    await post(211, { fork: 3, parentFork: 3 });
    node.setTipHeight(211);
    const first = await fetch(`${gw.url}${path}`);
    expect(first.headers.get('cache-status')).toMatch(/stored/);
    const answered = node.requests.filter((r) => r.path === path).length;
    // A block that touches another contract: the answer read at 211 is still current at 212.
    await post(212, { fork: 3, parentFork: 3, txs: [await callTx('vault', 'get-vault')] });
    value = 2;
    const kept = await fetch(`${gw.url}${path}`);
    expect(kept.headers.get('cache-status')).toMatch(/hit/);
    expect(await kept.text()).toContain('0x0100000000000000000000000000000001');
    expect(node.requests.filter((r) => r.path === path)).toHaveLength(answered);
    // A block that runs the contract's own code: read again.
    await post(213, { fork: 3, parentFork: 3, txs: [await callTx('other', 'bump')] });
    node.setTipHeight(213);
    const after = await fetch(`${gw.url}${path}`);
    expect(after.headers.get('cache-status')).toMatch(/fwd=stale/);
    expect(await after.text()).toContain('0x0100000000000000000000000000000002');
  });
});

describe('deploys and oversized payloads', () => {
  it('a failed transaction touches nothing, and a failed deploy of an existing name changes nothing known of it', async () => {
    const observer = gw.gateway.observer!;
    const before = await observer.dependsOn(id('vault'), 'get-vault');
    const failed = serializeTransaction(
      await makeContractDeploy({
        senderKey: key,
        network: 'testnet',
        fee: 0,
        nonce: 1,
        contractName: 'vault',
        codeBody: '(define-read-only (get-vault) (contract-call? .other bump))',
      }),
    );
    const call = await callTx('demo-nft', 'mint');
    const version = observer.analyzer.version;
    // The next block of the chain the ledger follows.
    const tip = ledger().tip!;
    const fork = Math.floor(Number.parseInt(tip.indexBlockHash, 16) / 1_000_000);
    await post(tip.height + 1, { fork, parentFork: fork, txs: [failed, call], status: 'abort_by_response' });
    expect(ledger().tip?.height).toBe(tip.height + 1);
    expect(ledger().tip?.touched).toEqual({ all: false, contracts: new Set() });
    expect(ledger().tip?.deployed).toEqual([]);
    expect(observer.analyzer.version).toBe(version);
    expect(await observer.dependsOn(id('vault'), 'get-vault')).toEqual(before);
  });

  it('a deploy forgets the deployed contract’s remembered ABI 404 at once', async () => {
    const sender = getAddressFromPrivateKey(key, 'testnet');
    const abiUrl = `${gw.url}/contract-calls/abi/${sender}/deployed-now`;
    expect((await request(abiUrl)).status).toBe(404);
    node.setAbi(sender, 'deployed-now', SAMPLE_ABI);
    // Remembered: still 404 without asking the node.
    expect((await request(abiUrl)).status).toBe(404);
    const deploy = await makeContractDeploy({
      senderKey: key,
      network: 'testnet',
      fee: 0,
      nonce: 0,
      contractName: 'deployed-now',
      codeBody: '(define-read-only (f) u1)',
    });
    const height = (ledger().tip?.height ?? 300) + 1;
    await post(height, { txs: [serializeTransaction(deploy)] });
    expect(ledger().tip?.deployed).toEqual([`${sender}.deployed-now`]);
    const res = await request(abiUrl);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual(SAMPLE_ABI);
  });

  it('a payload over EVENT_OBSERVER_BODY_LIMIT_MB is answered 200, counted, and ends proofs', async () => {
    const small = await startGateway(
      testEnv(node.url, {
        EVENT_OBSERVER_PORT: '0',
        EVENT_OBSERVER_NETWORK: 'testnet',
        EVENT_OBSERVER_BODY_LIMIT_MB: '1',
      }),
      { contractSource },
    );
    try {
      const obs = small.gateway.observer!;
      await new EventDispatcher({ urls: [`http://${obs.address}`], attempts: 1 }).dispatch({
        block: identity(10),
        parent: identity(9),
        transactions: [],
        events: [],
      });
      await obs.follower.untilHandled(1);
      expect(obs.ledger.tip?.height).toBe(10);
      const big = JSON.stringify({
        ...newBlockPayload({ block: identity(11), parent: identity(10), transactions: [], events: [] }),
        padding: 'x'.repeat(2 * 1024 * 1024),
      });
      const res = await fetch(`http://${obs.address}/new_block`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: big,
      });
      await res.text();
      expect(res.status).toBe(200);
      await obs.follower.untilHandled(2);
      expect(obs.ledger.tip).toBeUndefined();
      expect(small.gateway.chain.known('testnet')?.height).toBe(10);
    } finally {
      await small.close();
    }
  });
});

const redis = await startRedis();
describe.runIf(redis !== undefined)('two instances on one redis-server', () => {
  const started: RunningGateway[] = [];
  afterEach(async () => {
    for (const g of started.splice(0)) await g.close();
  });
  afterAll(async () => redis?.stop());

  it('a block posted to one instance moves the other’s tip at once', async () => {
    const env = { CACHE_STORE: 'redis', REDIS_URL: redis!.url };
    const a = await startGateway(
      testEnv(node.url, { ...env, EVENT_OBSERVER_PORT: '0', EVENT_OBSERVER_NETWORK: 'testnet' }),
      { contractSource },
    );
    started.push(a);
    const b = await startGateway(testEnv(node.url, env));
    started.push(b);
    // B starts as main.ts does: its first tip from its own /v2/info (never from Redis); the
    // observed block is then within CHAIN_TIP_MAX_ADVANCE of it.
    node.setTipHeight(4999);
    await b.gateway.startupRound?.();
    expect(b.gateway.chain.known('testnet')?.height).toBe(4999);
    // Both instances subscribed to the observed-tip channel before the block comes.
    const probe = new Redis(redis!.url);
    try {
      await vi.waitFor(
        async () => {
          const [, subscribers] = (await probe.pubsub('NUMSUB', 'cc:observer:tip')) as [string, number];
          expect(subscribers).toBeGreaterThanOrEqual(2);
        },
        { timeout: 5000, interval: 10 },
      );
    } finally {
      probe.disconnect();
    }
    const d = new EventDispatcher({ urls: [`http://${a.gateway.observer!.address}`], attempts: 1 });
    await d.dispatch({ block: identity(5000), parent: identity(4999), transactions: [], events: [] });
    await a.gateway.observer!.follower.untilHandled(1);
    expect(a.gateway.chain.known('testnet')?.height).toBe(5000);
    await vi.waitFor(
      () =>
        expect(b.gateway.chain.known('testnet')).toMatchObject({ height: 5000, indexBlockHash: hash(5000) }),
      { timeout: 5000, interval: 10 },
    );
    expect(b.gateway.observer).toBeUndefined();
  });
});
