/**
 * What upstreams report is believed only as far as it proves (docs/freshness.md), over real
 * HTTP with real stores: "consistent" batches tolerate a tip header ahead of the pinned block
 * and retry once when the pinned block is unknown; entries of another chain (another genesis
 * hash: a reset, a local chain started afresh, a store shared with another gateway) are never
 * served from a real SQLite file, and the log says so once.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createGateway } from '../../../src/app.js';
import { loadConfig } from '../../../src/config/index.js';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { MAINNET_ADDR } from '../../support/fixtures.js';
import { request, startGateway, testEnv } from '../../support/gateway.js';
import { CONTRACT, heightUrl, installChainContract } from './helpers.js';

let node: FakeNode;

beforeAll(async () => {
  node = await startFakeNode({ tipHeight: 200 });
  installChainContract(node);
});

afterAll(async () => {
  await node?.close();
});

afterEach(() => {
  node.clearFaults();
  node.resetStats();
});

/** A /v2/info body as a node writes it, for the block at `height`. */
function info(height: number, extra: Record<string, unknown> = {}): string {
  const block = node.block(height);
  return JSON.stringify({
    stacks_tip_height: height,
    stacks_tip: block.blockHash,
    stacks_tip_consensus_hash: block.consensusHash,
    network_id: 1,
    ...extra,
  });
}

const call = {
  contractAddress: MAINNET_ADDR,
  contractName: CONTRACT,
  functionName: 'height',
  functionArgs: [],
};

describe('"consistent" batches', () => {
  it('pin to the block /v2/info named even when its header is a block ahead, and say that block’s height', async () => {
    const gw = await startGateway(testEnv(node.url, { CHAIN_TIP_MAX_AGE_MS: '0' }));
    try {
      const tip = node.tipHeight;
      node.httpError(200, info(tip - 1), {
        kind: 'info',
        times: 1,
        contentType: 'application/json',
        headers: { 'x-canonical-stacks-tip-height': String(tip) },
      });
      const res = await request(`${gw.url}/contract-calls/batch`, {
        body: { calls: [call], tip: 'consistent' },
      });
      expect(res.status).toBe(200);
      expect(res.body.data.tip.height).toBe(tip - 1);
      expect(res.body.data.results[0].data).toBe(String(tip - 1));
      expect(res.body.data.results[0].meta.tipHeight).toBe(tip - 1);
      expect(node.lastRequest('call-read')?.query['tip']).toBe(node.block(tip - 1).indexBlockHash);
    } finally {
      await gw.close();
    }
  });

  it('learn the tip once more when the pinned block is unknown, and read there, even lower', async () => {
    const gw = await startGateway(testEnv(node.url, { CHAIN_TIP_MAX_AGE_MS: '0' }));
    try {
      const tip = node.tipHeight;
      // The first /v2/info names a block the node does not know (it was reset meanwhile).
      node.httpError(200, info(tip, { stacks_tip: 'ee'.repeat(32) }), {
        kind: 'info',
        times: 1,
        contentType: 'application/json',
      });
      const res = await request(`${gw.url}/contract-calls/batch`, {
        body: { calls: [call], tip: 'consistent' },
      });
      expect(res.status).toBe(200);
      expect(res.body.data.results[0].data).toBe(String(tip));
      expect(res.body.data.tip).toEqual({ height: tip, indexBlockHash: node.block(tip).indexBlockHash });
      expect(node.count('info')).toBe(2);
      const tips = node.requests.filter((r) => r.kind === 'call-read').map((r) => r.query['tip']);
      expect(tips.at(-1)).toBe(node.block(tip).indexBlockHash);
    } finally {
      await gw.close();
    }
  });

  it('answer the items 404 when the renewed block is unknown too, never a 500', async () => {
    const gw = await startGateway(testEnv(node.url, { CHAIN_TIP_MAX_AGE_MS: '0' }));
    try {
      const unknown = (byte: string) =>
        node.httpError(200, info(node.tipHeight, { stacks_tip: byte.repeat(32) }), {
          kind: 'info',
          times: 1,
          contentType: 'application/json',
        });
      unknown('ee');
      unknown('dd');
      const res = await request(`${gw.url}/contract-calls/batch`, {
        body: { calls: [call], tip: 'consistent' },
      });
      expect(res.status).toBe(200);
      expect(res.body.data.results[0].error.code).toBe('UPSTREAM_API_ERROR');
      expect(res.body.data.results[0].meta.status).toBe(404);
      expect(node.count('info')).toBe(2);
    } finally {
      await gw.close();
    }
  });
});

describe('chain identity', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'clarity-cache-identity-'));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** A gateway on the SQLite file of `dir`, whose log lines the test reads. */
  async function gatewayOnFile(): Promise<{ url: string; lines: string[]; close(): Promise<void> }> {
    const lines: string[] = [];
    const config = loadConfig(testEnv(node.url, { CACHE_STORE: 'sqlite', DATA_DIR: dir }));
    const gateway = await createGateway(config);
    // The warnings the gateway logs, as the test reads them.
    const log = gateway.app.log as unknown as { warn: (...args: unknown[]) => void };
    log.warn = (...args: unknown[]) => {
      lines.push(JSON.stringify(args));
    };
    const url = await gateway.app.listen({ port: 0, host: '127.0.0.1' });
    // As at start-up: one /v2/info (main.ts's start-up check), which names the chain.
    await gateway.chain.currentBlock('mainnet');
    return { url, lines, close: () => gateway.close() };
  }

  it('never serves entries of another chain from the store, and says so once', async () => {
    const genesis = (byte: string) => ({ genesis_chainstate_hash: byte.repeat(32) });
    node.httpError(200, info(node.tipHeight, genesis('aa')), {
      kind: 'info',
      contentType: 'application/json',
    });
    const first = await gatewayOnFile();
    const url = heightUrl(first.url);
    const read = await request(url, { body: { functionArgs: [] } });
    expect(read.headers.get('cache-status')).toMatch(/stored/);
    expect((await request(url, { body: { functionArgs: [] } })).headers.get('cache-status')).toMatch(/hit/);
    await first.close();

    // The same file, the same chain: the entry serves.
    const again = await gatewayOnFile();
    expect(
      (await request(heightUrl(again.url), { body: { functionArgs: [] } })).headers.get('cache-status'),
    ).toMatch(/hit/);
    await again.close();

    // The chain was reset (a new genesis): the stored entry is never answered.
    node.clearFaults();
    node.httpError(200, info(node.tipHeight, genesis('bb')), {
      kind: 'info',
      contentType: 'application/json',
    });
    node.resetStats();
    const reset = await gatewayOnFile();
    try {
      for (let i = 0; i < 2; i++) {
        const res = await request(heightUrl(reset.url), { body: { functionArgs: [] } });
        expect(res.status).toBe(200);
      }
      expect(node.count('call-read')).toBe(1);
      const said = reset.lines.filter((l) => l.includes('entries of another chain'));
      expect(said).toHaveLength(1);
    } finally {
      await reset.close();
    }
  });
});
