/**
 * Two upstreams of one network naming different chains in their /v2/info (docs/upstreams.md,
 * "Chain identity"), over real HTTP with two fake nodes: the one that differs from the
 * network's identity serves none of its reads, /ready and the state gauge say why, the log
 * says it once; it serves again once it names the network's chain; and when every upstream
 * names another chain, that is a chain change, not an exclusion.
 */
import { Cl } from '@stacks/transactions';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../../src/cache/stores/memory.js';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { hex, MAINNET_ADDR, SAMPLE_ABI } from '../../support/fixtures.js';
import { type RunningGateway, request, startGateway, testEnv } from '../../support/gateway.js';
import { parseMetrics } from '../../support/prom.js';

const MAINNET_GENESIS = 'aa'.repeat(32);
const MAINNET_ID = `1:${MAINNET_GENESIS}`;
/** A testnet node's identity: another network_id and another genesis. */
const TESTNET_INFO = { network_id: 2147483648, genesis_chainstate_hash: 'bb'.repeat(32) };
const TESTNET_ID = `2147483648:${'bb'.repeat(32)}`;

const running: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const r of running.splice(0).reverse()) await r.close();
});

/** A fake node that knows demo::get-balance and whose /v2/info names the chain `chain` gives. */
async function node(chain: Record<string, unknown>): Promise<FakeNode> {
  const n = await startFakeNode();
  n.setAbi(MAINNET_ADDR, 'demo', SAMPLE_ABI);
  n.setReadOnly(MAINNET_ADDR, 'demo', 'get-balance', { okay: true, result: hex(Cl.ok(Cl.uint(77))) });
  names(n, chain);
  running.push(n);
  return n;
}

/** Make n's /v2/info name this chain (at its current tip), replacing what it named before. */
function names(n: FakeNode, chain: Record<string, unknown>): void {
  const block = n.block(n.tipHeight);
  n.clearFaults();
  n.httpError(
    200,
    JSON.stringify({
      stacks_tip_height: block.height,
      stacks_tip: block.blockHash,
      stacks_tip_consensus_hash: block.consensusHash,
      ...chain,
    }),
    { kind: 'info', contentType: 'application/json' },
  );
}

/** A gateway whose mainnet upstreams are `nodes` in this order, its warnings and infos kept. */
async function gateway(
  nodes: readonly FakeNode[],
  store: MemoryStore,
): Promise<{ gw: RunningGateway; warnings: string[]; infos: string[] }> {
  // Testnet has a node of its own: nothing it asks counts as a mainnet node's request.
  const testnet = await startFakeNode();
  running.push(testnet);
  const gw = await startGateway(
    testEnv(testnet.url, { STACKS_API_URL_MAINNET: nodes.map((n) => n.url).join(',') }),
    { store },
  );
  running.push(gw);
  const warnings: string[] = [];
  const infos: string[] = [];
  const log = gw.gateway.app.log as unknown as Record<'warn' | 'info', (...args: unknown[]) => void>;
  log.warn = (...args) => warnings.push(JSON.stringify(args));
  log.info = (...args) => infos.push(JSON.stringify(args));
  return { gw, warnings, infos };
}

/** A distinct read of get-balance per sender (each a cache miss). */
const SENDERS = [
  'SP2J6ZY48GV1EZ5V2V5RB9MP66SW86PYKKNRV9EJ7',
  'SP000000000000000000002Q6VF78',
  'SP3FBR2AGK5H9QBDH3EEN6DF8EK8JY7RX8QJ5SVTE',
];
function read(gw: RunningGateway, sender: string) {
  return request(`${gw.url}/contract-calls/read-only/${MAINNET_ADDR}/demo/get-balance`, {
    body: { functionArgs: [{ type: 'principal', value: sender }] },
  });
}

interface Listed {
  id: string;
  url: string;
  state: string;
  excluded?: { reason: string; reportedChain: string; expectedChain: string };
}
async function listed(gw: RunningGateway): Promise<Listed[]> {
  const ready = await request(`${gw.url}/ready`);
  expect(ready.status).toBe(200);
  return ready.body.data.checks.upstream.mainnet.upstreams;
}

async function stateGauge(gw: RunningGateway, upstream: string): Promise<string[]> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  return parseMetrics(text)
    .filter(
      (s) =>
        s.name === 'clarity_cache_upstream_state' &&
        s.labels['upstream'] === upstream &&
        s.labels['network'] === 'mainnet' &&
        s.value === 1,
    )
    .map((s) => s.labels['state']!);
}

describe('two mainnet upstreams, one of them a testnet node', () => {
  it('excludes the one that differs from the recorded identity: reads go to the other, /ready and the gauge say why, logged once', async () => {
    // The testnet node is listed first: without the exclusion it would serve every read.
    const wrong = await node(TESTNET_INFO);
    const right = await node({ network_id: 1, genesis_chainstate_hash: MAINNET_GENESIS });
    const store = new MemoryStore({ maxEntries: 1000 });
    // The store belongs to mainnet's chain from before (the key ChainIdentities records it under).
    await store.set('chain:id:mainnet', MAINNET_ID);
    const { gw, warnings } = await gateway([wrong, right], store);

    // Start-up (main.ts): one /v2/info of each upstream, each naming its chain.
    expect(await gw.gateway.startupRound?.()).toEqual([]);
    expect(wrong.count('info')).toBe(1);
    expect(right.count('info')).toBe(1);

    const ups = await listed(gw);
    expect(ups.map((u) => [u.url, u.state])).toEqual([
      [wrong.url, 'wrong-chain'],
      [right.url, 'ok'],
    ]);
    expect(ups[0]!.excluded).toEqual({
      reason: expect.stringContaining(TESTNET_ID),
      reportedChain: TESTNET_ID,
      expectedChain: MAINNET_ID,
    });
    expect(ups[1]!.excluded).toBeUndefined();
    expect(await stateGauge(gw, ups[0]!.id)).toEqual(['wrong-chain']);
    expect(await stateGauge(gw, ups[1]!.id)).toEqual(['ok']);

    for (const sender of SENDERS) {
      const res = await read(gw, sender);
      expect(res.status).toBe(200);
      expect(res.body.data).toBe('77');
    }
    expect(wrong.count('call-read')).toBe(0);
    expect(wrong.count('interface')).toBe(0);
    expect(right.count('call-read')).toBe(SENDERS.length);

    // Asked again (another start-up round): still excluded, still said once.
    await gw.gateway.startupRound?.();
    expect((await listed(gw))[0]!.state).toBe('wrong-chain');
    const said = warnings.filter((l) => l.includes('reports another chain'));
    expect(said).toHaveLength(1);
    expect(said[0]).toContain(TESTNET_ID);
    // The network's identity did not move: the store's record is still mainnet's.
    expect((await store.get('chain:id:mainnet'))?.value).toBe(MAINNET_ID);
    expect(warnings.filter((l) => l.includes('another chain: entries of the old one'))).toEqual([]);
  });

  it('serves the excluded upstream again once it names the network chain', async () => {
    const wrong = await node(TESTNET_INFO);
    const right = await node({ network_id: 1, genesis_chainstate_hash: MAINNET_GENESIS });
    const store = new MemoryStore({ maxEntries: 1000 });
    await store.set('chain:id:mainnet', MAINNET_ID);
    const { gw, infos } = await gateway([wrong, right], store);
    await gw.gateway.startupRound?.();
    expect((await listed(gw)).map((u) => u.state)).toEqual(['wrong-chain', 'ok']);

    // Its operator points it at mainnet.
    names(wrong, { network_id: 1, genesis_chainstate_hash: MAINNET_GENESIS });
    await gw.gateway.startupRound?.();
    expect((await listed(gw)).map((u) => u.state)).toEqual(['ok', 'ok']);
    expect(infos.filter((l) => l.includes("serves the network's chain again"))).toHaveLength(1);
    // Listed first, it serves again.
    expect((await read(gw, SENDERS[0]!)).status).toBe(200);
    expect(wrong.count('call-read')).toBe(1);
  });

  it('without a record, the first identity believed stays: a later dissenting upstream is excluded', async () => {
    const right = await node({ network_id: 1, genesis_chainstate_hash: MAINNET_GENESIS });
    const wrong = await node(TESTNET_INFO);
    const store = new MemoryStore({ maxEntries: 1000 });
    const { gw } = await gateway([right, wrong], store);
    // The first /v2/info round (the first tip) reaches only the right one: its chain is believed.
    await wrong.down();
    await gw.gateway.chain.currentBlock('mainnet');
    expect(right.count('info')).toBe(1);
    await wrong.up();
    expect((await store.get('chain:id:mainnet'))?.value).toBe(MAINNET_ID);
    await gw.gateway.startupRound?.();
    expect((await listed(gw)).map((u) => u.state)).toEqual(['ok', 'wrong-chain']);
    expect((await store.get('chain:id:mainnet'))?.value).toBe(MAINNET_ID);
    expect((await read(gw, SENDERS[0]!)).status).toBe(200);
    expect(wrong.count('call-read')).toBe(0);
  });

  it('every upstream naming another chain is a chain change: the new identity is recorded, nobody is excluded', async () => {
    const a = await node(TESTNET_INFO);
    const b = await node(TESTNET_INFO);
    const store = new MemoryStore({ maxEntries: 1000 });
    await store.set('chain:id:mainnet', MAINNET_ID);
    const { gw, warnings } = await gateway([a, b], store);
    await gw.gateway.startupRound?.();
    expect((await listed(gw)).map((u) => u.state)).toEqual(['ok', 'ok']);
    expect((await store.get('chain:id:mainnet'))?.value).toBe(TESTNET_ID);
    expect(warnings.filter((l) => l.includes('now serve another chain'))).toHaveLength(1);
    // Both serve it.
    for (const sender of SENDERS) expect((await read(gw, sender)).status).toBe(200);
    expect(a.count('call-read') + b.count('call-read')).toBe(SENDERS.length);
    expect(a.count('call-read')).toBeGreaterThan(0);
  });
});
