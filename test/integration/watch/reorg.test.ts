/**
 * Watched reads across a reorg, over real HTTP: this test plays the Stacks node's event
 * dispatcher (src/devnet/event-dispatcher.ts) against the gateway's event observer, in front of
 * the fake node, whose reads answer per block (a handler of the height and of the fork). A block
 * whose parent is not the previous tip makes every watched read be evaluated at it, and each
 * stream is sent the reads whose answer differs from the last one it was sent, no others. A
 * reconnecting client's Last-Event-ID is judged against the chain the gateway holds now: a
 * replaced block is `reset` not-canonical, a block never seen `reset` unknown (every value
 * follows either), a canonical one gets only the reads that changed since.
 */
import {
  Cl,
  type ClarityValue,
  makeContractCall,
  makeRandomPrivKey,
  serializeTransaction,
} from '@stacks/transactions';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { BlockIdentity } from '../../../src/devnet/blocks.js';
import { EventDispatcher } from '../../../src/devnet/event-dispatcher.js';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { hex, TESTNET_ADDR } from '../../support/fixtures.js';
import { type RunningGateway, request, startGateway, testEnv } from '../../support/gateway.js';
import { metricValue, parseMetrics } from '../../support/prom.js';
import { openSse, type SseConnection, type SseEvent } from '../../support/sse.js';

const fn = (name: string) => ({ name, access: 'read_only', args: [], outputs: { type: 'uint128' } });
const ABI = {
  functions: [
    fn('steady'),
    fn('fork-mark'),
    fn('height'),
    fn('mark'),
    {
      name: 'bump',
      access: 'public',
      args: [],
      outputs: { type: { response: { ok: 'bool', error: 'none' } } },
    },
  ],
  variables: [],
  maps: [],
  fungible_tokens: [],
  non_fungible_tokens: [],
  epoch: 'Epoch31',
  clarity_version: 'Clarity3',
};

const read = (contractName: string, functionName: string) => ({
  contractAddress: TESTNET_ADDR,
  contractName,
  functionName,
  functionArgs: [],
});

/** Which fork a block is on, as a number a read can answer. */
const forkNumber = (branch: string): number => (branch === '' ? 0 : branch.charCodeAt(0));
const raw = (cv: ClarityValue) => hex(cv);

interface Harness {
  node: FakeNode;
  gw: RunningGateway;
  dispatcher: EventDispatcher;
  streams: SseConnection[];
}

async function startHarness(contractSource: (contractId: string) => Promise<string>): Promise<Harness> {
  const node = await startFakeNode({ tipHeight: 100 });
  const gw = await startGateway(
    testEnv(node.url, {
      EVENT_OBSERVER_PORT: '0',
      EVENT_OBSERVER_NETWORK: 'testnet',
      // A read that times out is a transient failure: nothing is sent until the next block. The
      // fake node answers in this process, slowly on a loaded machine: never let that be one.
      UPSTREAM_TIMEOUT_MS: '15000',
      // Several streams of one client address are open at once here.
      WATCH_MAX_STREAMS_ANONYMOUS: '20',
    }),
    { contractSource },
  );
  const dispatcher = new EventDispatcher({ urls: [`http://${gw.gateway.observer!.address}`], attempts: 1 });
  return { node, gw, dispatcher, streams: [] };
}

/** Posts `block` as the node's event dispatcher does, and waits until the gateway applied it. */
async function post(
  h: Harness,
  block: BlockIdentity,
  parent: BlockIdentity,
  rawTxs: readonly string[] = [],
): Promise<void> {
  const follower = h.gw.gateway.observer!.follower;
  const before = follower.handled;
  await h.dispatcher.dispatch({
    block,
    parent,
    transactions: rawTxs.map((rawTx, i) => ({
      rawTx,
      txid: `0x${(block.height * 100 + i).toString(16).padStart(64, '0')}`,
    })),
    events: [],
  });
  await follower.untilHandled(before + 1);
}

/** The node mines the next block of its chain, and the gateway is told of it. */
async function mineAndPost(h: Harness, rawTxs: readonly string[] = []): Promise<BlockIdentity> {
  const parent = h.node.block(h.node.tipHeight);
  const block = h.node.mine();
  await post(h, block, parent, rawTxs);
  return block;
}

async function subscribe(h: Harness, reads: unknown[]): Promise<string> {
  const res = await request(`${h.gw.url}/subscriptions`, { body: { reads } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data.events as string;
}

async function open(h: Harness, events: string, lastEventId?: string): Promise<SseConnection> {
  const sse = await openSse(
    `${h.gw.url}${events}`,
    lastEventId === undefined ? {} : { 'last-event-id': lastEventId },
  );
  h.streams.push(sse);
  expect(sse.status).toBe(200);
  return sse;
}

const idOf = (b: BlockIdentity) => `${b.height}:${b.indexBlockHash}`;
/** An event as compared here: its kind, its id, and each value sent (raw hex, or the error's code). */
function seen(e: SseEvent): { event: string; id: string | undefined; values?: Record<number, string> } {
  if (e.event !== 'values') return { event: e.event, id: e.id, ...e.json };
  const values: Record<number, string> = {};
  for (const v of e.json.values as { index: number; raw?: string; error?: { code: string } }[])
    values[v.index] = v.raw ?? `error ${v.error?.code}`;
  expect(e.json).toMatchObject({
    tipHeight: Number(e.id?.split(':')[0]),
    indexBlockHash: e.id?.split(':')[1],
  });
  return { event: 'values', id: e.id, values };
}
/** A values event as expected: at `block`, these reads' answers. */
const valuesAt = (block: BlockIdentity, values: Record<number, ClarityValue>) => ({
  event: 'values',
  id: idOf(block),
  values: Object.fromEntries(Object.entries(values).map(([i, cv]) => [i, raw(cv)])),
});

/** Call-reads the node answered pinned to `block`, by function name. */
function pinnedCalls(node: FakeNode, block: BlockIdentity): string[] {
  return node.requests
    .filter((r) => r.kind === 'call-read' && r.query['tip']?.replace(/^0x/, '') === block.indexBlockHash)
    .map((r) => r.functionName!)
    .sort();
}

async function metrics(h: Harness) {
  const res = await fetch(`${h.gw.url}/metrics`);
  return parseMetrics(await res.text());
}

describe('watched reads across a reorg (every read volatile: evaluated at each block)', () => {
  let h: Harness;
  // Each read's answer, per block: one never changes, one tells the fork, one the height.
  const READS = [read('watched', 'steady'), read('watched', 'fork-mark'), read('watched', 'height')];
  const STEADY = 0;
  const FORK = 1;
  const HEIGHT = 2;

  beforeAll(async () => {
    // No source to analyse: nothing proves a read unchanged, every block evaluates every read.
    h = await startHarness(async (id) => {
      throw new Error(`no source for ${id}`);
    });
    h.node.setAbi(TESTNET_ADDR, 'watched', ABI);
    h.node.setReadOnly(TESTNET_ADDR, 'watched', 'steady', { okay: true, result: raw(Cl.uint(7)) });
    h.node.setReadOnly(TESTNET_ADDR, 'watched', 'fork-mark', ({ branch }) => ({
      okay: true,
      result: raw(Cl.uint(forkNumber(branch))),
    }));
    h.node.setReadOnly(TESTNET_ADDR, 'watched', 'height', ({ height }) => ({
      okay: true,
      result: raw(Cl.uint(height)),
    }));
  });
  afterEach(() => {
    for (const s of h.streams.splice(0)) s.close();
  });
  afterAll(async () => {
    await h?.gw.close();
    await h?.node.close();
  });

  // Shared by the tests below, in order: the chain they build.
  let events: string;
  const main: BlockIdentity[] = [];
  let forkB: BlockIdentity;
  let forkB2: BlockIdentity;

  it('after a sibling of the tip, sends again only the reads whose answer differs from what was sent', async () => {
    main.push(h.node.block(100), await mineAndPost(h)); // 101
    events = await subscribe(h, READS);
    const a = await open(h, events);
    expect(seen(await a.next())).toEqual(
      valuesAt(main[1]!, { [STEADY]: Cl.uint(7), [FORK]: Cl.uint(0), [HEIGHT]: Cl.uint(101) }),
    );
    expect(a.retry).toBe(2000);

    main.push(await mineAndPost(h)); // 102
    expect(seen(await a.next())).toEqual(valuesAt(main[2]!, { [HEIGHT]: Cl.uint(102) }));
    main.push(await mineAndPost(h)); // 103
    expect(seen(await a.next())).toEqual(valuesAt(main[3]!, { [HEIGHT]: Cl.uint(103) }));

    // The reorg: another block at 103, child of 102 (its parent is not the tip the gateway holds).
    forkB = h.node.fork(103, 'b');
    expect(forkB.indexBlockHash).not.toBe(main[3]!.indexBlockHash);
    await post(h, forkB, main[2]!);
    // The fork's answer differs; the height is 103 again and the steady read 7 again: not sent.
    expect(seen(await a.next())).toEqual(valuesAt(forkB, { [FORK]: Cl.uint(forkNumber('b')) }));
    // ...yet every read was evaluated at the new block, the unchanged ones included.
    expect(pinnedCalls(h.node, forkB)).toEqual(['fork-mark', 'height', 'steady']);

    // The new branch goes on: only the height changes.
    forkB2 = await mineAndPost(h); // 104 on b
    expect(seen(await a.next())).toEqual(valuesAt(forkB2, { [HEIGHT]: Cl.uint(104) }));
    expect(a.events).toHaveLength(5);
  });

  it('a Last-Event-ID naming a replaced block gets reset not-canonical, then every value', async () => {
    const b = await open(h, events, idOf(main[3]!));
    // A reset has no id: the client's last event id stays the block it named.
    expect(seen(await b.next())).toEqual({ event: 'reset', id: undefined, reason: 'not-canonical' });
    expect(seen(await b.next())).toEqual(
      valuesAt(forkB2, { [STEADY]: Cl.uint(7), [FORK]: Cl.uint(forkNumber('b')), [HEIGHT]: Cl.uint(104) }),
    );
  });

  it.each([
    ['a block the gateway never saw', `77:${'ab'.repeat(32)}`],
    ['a block above any known', `1000:${'cd'.repeat(32)}`],
    ['no block id at all', 'not-an-event-id'],
  ])('a Last-Event-ID naming %s gets reset unknown, then every value', async (_what, lastEventId) => {
    const c = await open(h, events, lastEventId);
    expect(seen(await c.next())).toEqual({ event: 'reset', id: undefined, reason: 'unknown' });
    expect(seen(await c.next())).toEqual(
      valuesAt(forkB2, { [STEADY]: Cl.uint(7), [FORK]: Cl.uint(forkNumber('b')), [HEIGHT]: Cl.uint(104) }),
    );
  });

  it('a canonical Last-Event-ID below the fork gets only the reads that differ since', async () => {
    // 102 is the parent of the fork: still on the chain. From there, the fork and the height differ.
    const d = await open(h, events, idOf(main[2]!));
    expect(seen(await d.next())).toEqual(
      valuesAt(forkB2, { [FORK]: Cl.uint(forkNumber('b')), [HEIGHT]: Cl.uint(104) }),
    );
  });

  it('the tip itself as Last-Event-ID is sent nothing until a read changes', async () => {
    const e = await open(h, events, idOf(forkB2));
    const next = await mineAndPost(h); // 105 on b
    // The first event is the next block's: nothing was sent on connecting.
    expect(seen(await e.next())).toEqual(valuesAt(next, { [HEIGHT]: Cl.uint(105) }));
  });

  it('a deeper reorg, from below the tip: the old branch’s blocks are not canonical, its parent is', async () => {
    const b105 = h.node.block(105);
    const a = await open(h, events);
    expect(seen(await a.next())).toEqual(
      valuesAt(b105, { [STEADY]: Cl.uint(7), [FORK]: Cl.uint(forkNumber('b')), [HEIGHT]: Cl.uint(105) }),
    );
    // Branch c replaces b from 104 on: its first block is lower than the tip the gateway holds.
    const c104 = h.node.fork(104, 'c');
    await post(h, c104, forkB);
    expect(seen(await a.next())).toEqual(
      valuesAt(c104, { [FORK]: Cl.uint(forkNumber('c')), [HEIGHT]: Cl.uint(104) }),
    );
    const c105 = await mineAndPost(h);
    expect(seen(await a.next())).toEqual(valuesAt(c105, { [HEIGHT]: Cl.uint(105) }));

    for (const replaced of [forkB2, b105]) {
      const r = await open(h, events, idOf(replaced));
      expect(seen(await r.next())).toEqual({ event: 'reset', id: undefined, reason: 'not-canonical' });
      expect(seen(await r.next())).toEqual(
        valuesAt(c105, { [STEADY]: Cl.uint(7), [FORK]: Cl.uint(forkNumber('c')), [HEIGHT]: Cl.uint(105) }),
      );
    }
    // 103 of branch b is c's parent: canonical, and only the fork and the height differ from it.
    const kept = await open(h, events, idOf(forkB));
    expect(seen(await kept.next())).toEqual(
      valuesAt(c105, { [FORK]: Cl.uint(forkNumber('c')), [HEIGHT]: Cl.uint(105) }),
    );
    const samples = await metrics(h);
    expect(
      metricValue(samples, 'clarity_cache_watch_events_total', { network: 'testnet', event: 'reset' }),
    ).toBe(6);
  });
});

describe('watched reads across a reorg (a read the observer proves unchanged by blocks that do not touch it)', () => {
  let h: Harness;
  const key = makeRandomPrivKey();
  // One data var, bumped by a public function: `mark` depends on its own contract alone.
  const SOURCE =
    '(define-data-var n uint u0) (define-public (bump) (ok (var-set n (+ u1 (var-get n))))) (define-read-only (mark) (var-get n))';

  /** The height of the block that ran `bump` (on the original chain), once posted. */
  let bumpedAt: number | undefined;

  beforeAll(async () => {
    h = await startHarness(async (id) => {
      if (id === `${TESTNET_ADDR}.proven`) return SOURCE;
      throw new Error(`no source for ${id}`);
    });
    h.node.setAbi(TESTNET_ADDR, 'proven', ABI);
    // Bumped once on the original chain; a fork from that height on never ran the transaction.
    h.node.setReadOnly(TESTNET_ADDR, 'proven', 'mark', ({ height, branch }) => ({
      okay: true,
      result: raw(Cl.uint(branch === '' && bumpedAt !== undefined && height >= bumpedAt ? 1 : 0)),
    }));
  });
  afterEach(() => {
    for (const s of h.streams.splice(0)) s.close();
  });
  afterAll(async () => {
    await h?.gw.close();
    await h?.node.close();
  });

  const evaluations = async (result: string) =>
    metricValue(await metrics(h), 'clarity_cache_watch_evaluations_total', { network: 'testnet', result });

  /** Mines an empty block and waits until the watch dealt with it: proven unchanged, or evaluated. */
  async function emptyBlockProven(): Promise<boolean> {
    const before = await evaluations('proven');
    const block = await mineAndPost(h);
    let proven = false;
    await vi.waitFor(
      async () => {
        proven = (await evaluations('proven')) > before;
        expect(proven || pinnedCalls(h.node, block).length > 0).toBe(true);
      },
      { timeout: 15_000, interval: 20 },
    );
    return proven && pinnedCalls(h.node, block).length === 0;
  }

  it('evaluates the read again at the reorg block, though that block touches nothing', async () => {
    await mineAndPost(h); // 101
    const events = await subscribe(h, [read('proven', 'mark')]);
    const a = await open(h, events);
    const first = await a.next();
    expect(seen(first)).toEqual(valuesAt(h.node.block(101), { 0: Cl.uint(0) }));

    // The first block after connecting starts the dependency analysis (it is evaluated); once
    // the analysis is known, an empty block is proven unchanged and not read at all.
    let blocks = 0;
    while (!(await emptyBlockProven())) {
      blocks++;
      expect(blocks, 'no empty block was ever proven unchanged').toBeLessThan(5);
    }
    expect(await emptyBlockProven()).toBe(true);

    // The next block runs `bump`: the read is evaluated there and its new answer sent.
    const bump = serializeTransaction(
      await makeContractCall({
        senderKey: key,
        network: 'testnet',
        fee: 0,
        nonce: 0,
        contractAddress: TESTNET_ADDR,
        contractName: 'proven',
        functionName: 'bump',
        functionArgs: [],
      }),
    );
    const parent = h.node.block(h.node.tipHeight);
    bumpedAt = h.node.tipHeight + 1;
    const bumpedBlock = await mineAndPost(h, [bump]);
    expect(seen(await a.next())).toEqual(valuesAt(bumpedBlock, { 0: Cl.uint(1) }));

    // The reorg: an empty sibling of that block. Had the proof run from the answer read at the
    // bumped block (same height, no contract touched since), the read would not be evaluated
    // and the client would keep 1.
    const sibling = h.node.fork(bumpedAt, 'x');
    await post(h, sibling, parent);
    expect(seen(await a.next())).toEqual(valuesAt(sibling, { 0: Cl.uint(0) }));
    expect(pinnedCalls(h.node, sibling)).toEqual(['mark']);
  });
});
