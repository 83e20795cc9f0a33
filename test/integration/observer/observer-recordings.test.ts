/**
 * The event observer against real recorded traffic of Stacks nodes
 * (test/fixtures/observer-recordings/, README.md there): every payload of each recording is
 * posted over HTTP to the gateway's observer listener, in order, as the node posted it. Every
 * post must be answered 200 and none rejected; after the replay the gateway's tip is the
 * recording's last block; and a read of a contract on the fake node that no recorded block
 * touches, asked with `maxBlocks: 0` after every block, stays a cache hit across every block
 * except where the recorded chain itself breaks. Where it breaks is computed here from the
 * recording's own data (chainBreaks in test/support/observer-recordings.ts), not from the
 * gateway's code: a height gap, a parent that is not the previous block, an unusable payload,
 * a burnchain operation, an undecodable transaction, a call into a contract whose source this
 * replay does not have.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { MAINNET_ADDR, TESTNET_ADDR } from '../../support/fixtures.js';
import { type RunningGateway, request, startGateway, testEnv } from '../../support/gateway.js';
import {
  type BreakCause,
  chainBreaks,
  loadRecording,
  type RecordedBlock,
  recordingNames,
  recordingNetwork,
  replay,
  UNTOUCHED_READ,
} from '../../support/observer-recordings.js';
import { freePort } from '../../support/process.js';
import { metricValue, parseMetrics } from '../../support/prom.js';

const { name: READ_NAME, fn: READ_FN, source: READ_SOURCE, abi: READ_ABI } = UNTOUCHED_READ;
const READ_RESULT = UNTOUCHED_READ.result;

const NAMES = recordingNames();

let node: FakeNode;
beforeAll(async () => {
  node = await startFakeNode();
});
afterAll(async () => {
  await node?.close();
  const all = Object.values(tally);
  const hits = all.reduce((n, t) => n + t.hits, 0);
  const blocks = all.reduce((n, t) => n + t.blocks, 0);
  if (blocks > 0)
    console.log(
      `observer recordings, all: ${hits}/${blocks} blocks kept the read a hit (${pct(hits, blocks)})`,
    );
});

const tally: Record<string, { hits: number; blocks: number; causes: Partial<Record<BreakCause, number>> }> =
  {};
const pct = (a: number, b: number) => `${((a / b) * 100).toFixed(1)} %`;
const sha512_256 = (hex: string) =>
  createHash('sha512-256')
    .update(Buffer.from(hex.replace(/^0x/, ''), 'hex'))
    .digest('hex');

describe('recorded event-observer traffic (fixtures)', () => {
  it('are present, and every line is an event-observer post', () => {
    expect(NAMES.length).toBeGreaterThanOrEqual(4);
    for (const name of NAMES) {
      const recording = loadRecording(name);
      expect(recording.posts.length, name).toBeGreaterThan(0);
      expect(recording.skipped, name).toEqual({});
    }
  });

  it('decode: every /new_block is JSON whose transactions hash to their txid', () => {
    for (const name of NAMES) {
      let txs = 0;
      for (const post of loadRecording(name).posts) {
        const body = JSON.parse(post.body) as unknown;
        if (post.path !== '/new_block' && post.path !== '/new_microblocks') continue;
        for (const tx of (body as { transactions: { txid: string; raw_tx: string }[] }).transactions) {
          if (tx.raw_tx === '0x00') continue;
          expect(`0x${sha512_256(tx.raw_tx)}`, `${name} line ${post.line}`).toBe(tx.txid);
          txs++;
        }
      }
      expect(txs, name).toBeGreaterThan(0);
    }
  });
});

describe.each(NAMES)('replay of %s', (name) => {
  const recording = loadRecording(name);
  const network = recordingNetwork(recording);
  const address = network === 'mainnet' ? MAINNET_ADDR : TESTNET_ADDR;
  const readContract = `${address}.${READ_NAME}`;
  const blocks = chainBreaks(recording, { readContract, knownSources: new Set([readContract]) });
  const fresh = blocks.filter((b) => !b.duplicate);

  let gw: RunningGateway;
  let observerUrl: string;
  beforeAll(async () => {
    node.setAbi(address, READ_NAME, READ_ABI);
    node.setReadOnly(address, READ_NAME, READ_FN, { okay: true, result: READ_RESULT });
    node.setTipHeight(fresh[0]!.height);
    const observerPort = await freePort();
    // Contract sources come from here: the read contract's; any other is not to be had.
    const contractSource = async (contractId: string) => {
      if (contractId === readContract) return READ_SOURCE;
      throw new Error(`no source for ${contractId} in this replay`);
    };
    gw = await startGateway(
      testEnv(node.url, {
        EVENT_OBSERVER_PORT: String(observerPort),
        EVENT_OBSERVER_NETWORK: network,
        CHAIN_TIP_MAX_AGE_MS: '600000',
      }),
      { contractSource },
    );
    observerUrl = `http://127.0.0.1:${observerPort}`;
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('every post answered 200, none rejected, the tip is the last block, untouched reads stay hits but at breaks', async () => {
    expect(fresh.length).toBeGreaterThan(0);
    // The read contract is not one any block touches (else it would not be "untouched").
    expect(fresh.filter((b) => b.causes.includes('touches-read'))).toEqual([]);
    const observer = gw.gateway.observer!;
    const seen: { height: number; block: string; causes: BreakCause[]; hit: boolean; tip: number }[] = [];
    const values = new Set<string>();
    const answers = await replay(recording, blocks, {
      observerUrl,
      untilHandled: (count) => observer.follower.untilHandled(count),
      afterBlock: async (block: RecordedBlock) => {
        if (block.duplicate) return;
        // The node answers at the block just applied, as a node following that chain would.
        node.setTipHeight(block.height);
        const res = await request(`${gw.url}/contract-calls/read-only/${address}/${READ_NAME}/${READ_FN}`, {
          body: { functionArgs: [], cacheControl: { maxBlocks: 0 } },
        });
        expect(res.status, `read after block ${block.height}`).toBe(200);
        values.add(JSON.stringify(res.body.data));
        const hit = (res.headers.get('cache-status') ?? '').includes('hit');
        seen.push({
          height: block.height,
          block: block.indexBlockHash.slice(0, 12),
          causes: [...block.causes],
          hit,
          tip: Number(res.headers.get('x-canonical-stacks-tip-height')),
        });
        // What the read depends on is analysed in the background once it is stored: let it
        // be known before the next block, as it is in service long before then.
        if (!hit) await observer.dependsOn(readContract, READ_FN);
      },
    });

    // Every post answered 200 (the node retries anything else forever).
    expect(answers.filter((a) => a.status !== 200)).toEqual([]);
    expect(answers).toHaveLength(recording.posts.length);
    // No real payload rejected.
    const metrics = parseMetrics(await (await fetch(`${gw.url}/metrics`)).text());
    const rejected = metrics
      .filter((s) => s.name === 'clarity_cache_observer_rejected_total')
      .reduce((n, s) => n + s.value, 0);
    expect(rejected).toBe(0);

    // The gateway's tip is the recording's last block (by the observer, not /v2/info).
    const last = fresh[fresh.length - 1]!;
    expect(observer.follower.lastBlock).toMatchObject({
      height: last.height,
      indexBlockHash: last.indexBlockHash,
    });
    expect(observer.ledger.tip).toMatchObject({ height: last.height, indexBlockHash: last.indexBlockHash });
    const ready = await request(`${gw.url}/ready`);
    expect(ready.body.data.checks.observer).toMatchObject({
      network,
      lastBlock: { height: last.height, indexBlockHash: last.indexBlockHash },
    });

    // The untouched read: a hit after every block but where the recorded chain breaks, and
    // every answer tells the height of the block just applied.
    const expected = seen.map((s) => ({ ...s, hit: s.causes.length === 0, tip: s.height }));
    expect(seen).toEqual(expected);
    expect(values.size).toBe(1);
    const hits = seen.filter((s) => s.hit).length;
    if (hits > 0) {
      expect(
        metricValue(metrics, 'clarity_cache_observer_kept_current_total', { network }),
      ).toBeGreaterThanOrEqual(hits);
    }

    const causes: Partial<Record<BreakCause, number>> = {};
    for (const s of seen) for (const c of s.causes) causes[c] = (causes[c] ?? 0) + 1;
    tally[name] = { hits, blocks: seen.length, causes };
    console.log(
      `observer recording ${name} (${network}, heights ${fresh[0]!.height}..${last.height}): ` +
        `${hits}/${seen.length} blocks kept the read a hit (${pct(hits, seen.length)}); breaks: ${JSON.stringify(causes)}`,
    );
  }, 60_000);
});
