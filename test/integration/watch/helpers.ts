/**
 * The watched-reads tests' chain, on the fake node: a `counter` contract whose reads answer the
 * value the test set for the block they are read at (a test changes a value at the block it
 * means to change it), and an `other` contract no watched read reaches. Blocks are the fake
 * node's own (its hashes answer `?tip=`), posted to a gateway's event observer as the node's
 * event dispatcher would, with a transaction calling the contract the block is meant to touch.
 */
import { Cl, makeContractCall, makeRandomPrivKey, serializeTransaction } from '@stacks/transactions';
import { expect } from 'vitest';
import { EventDispatcher } from '../../../src/devnet/event-dispatcher.js';
import type { FakeNode } from '../../support/fake-node.js';
import { hex, TESTNET_ADDR } from '../../support/fixtures.js';
import { request } from '../../support/gateway.js';
import type { SseConnection, SseEvent } from '../../support/sse.js';

export const DEPLOYER = TESTNET_ADDR;
export const COUNTER = 'counter';
export const OTHER = 'other';

/** Sources for the observer's dependency analysis: `other` never reaches `counter`. */
const SOURCES = new Map<string, string>([
  [
    `${DEPLOYER}.${COUNTER}`,
    '(define-data-var n uint u1) (define-map seen uint uint) (define-read-only (get-n) (var-get n)) (define-read-only (get-seen (k uint)) (default-to u0 (map-get? seen k))) (define-public (bump) (ok (var-set n (+ u1 (var-get n)))))',
  ],
  [
    `${DEPLOYER}.${OTHER}`,
    '(define-data-var m uint u0) (define-read-only (get-m) (var-get m)) (define-public (bump) (ok (var-set m (+ u1 (var-get m)))))',
  ],
]);

export const contractSource = async (contractId: string): Promise<string> => {
  const source = SOURCES.get(contractId);
  if (source === undefined) throw new Error(`unknown contract ${contractId}`);
  return source;
};

const ABI = (functions: unknown[]) => ({
  functions,
  variables: [],
  maps: [],
  fungible_tokens: [],
  non_fungible_tokens: [],
  epoch: 'Epoch31',
  clarity_version: 'Clarity3',
});

/**
 * The value of each watched function by height: what the node answers for a read at a block is
 * the value set at the highest height at or below it.
 */
export class ChainValues {
  readonly #changes = new Map<string, [height: number, value: number][]>();

  set(fn: string, fromHeight: number, value: number): void {
    const list = this.#changes.get(fn) ?? [];
    list.push([fromHeight, value]);
    list.sort((a, b) => a[0] - b[0]);
    this.#changes.set(fn, list);
  }

  at(fn: string, height: number): number {
    let value = 0;
    for (const [h, v] of this.#changes.get(fn) ?? []) if (h <= height) value = v;
    return value;
  }
}

/**
 * Registers `counter` (get-n, get-seen) and `other` (get-m) on the fake node, answering from
 * `values`; get-seen answers `values.at('get-seen:<k>')`.
 */
export function installContracts(node: FakeNode, values: ChainValues): void {
  node.setAbi(
    DEPLOYER,
    COUNTER,
    ABI([
      { name: 'get-n', access: 'read_only', args: [], outputs: { type: 'uint128' } },
      {
        name: 'get-seen',
        access: 'read_only',
        args: [{ name: 'k', type: 'uint128' }],
        outputs: { type: 'uint128' },
      },
      {
        name: 'bump',
        access: 'public',
        args: [],
        outputs: { type: { response: { ok: 'bool', error: 'none' } } },
      },
    ]),
  );
  node.setAbi(
    DEPLOYER,
    OTHER,
    ABI([
      { name: 'get-m', access: 'read_only', args: [], outputs: { type: 'uint128' } },
      {
        name: 'bump',
        access: 'public',
        args: [],
        outputs: { type: { response: { ok: 'bool', error: 'none' } } },
      },
    ]),
  );
  node.setReadOnly(DEPLOYER, COUNTER, 'get-n', ({ height }) => ({
    okay: true,
    result: hex(Cl.uint(values.at('get-n', height))),
  }));
  node.setReadOnly(DEPLOYER, COUNTER, 'get-seen', ({ height, arguments: args }) => ({
    okay: true,
    result: hex(Cl.uint(values.at(`get-seen:${(args[0] ?? '').replace(/^0x/, '')}`, height))),
  }));
  node.setReadOnly(DEPLOYER, OTHER, 'get-m', ({ height }) => ({
    okay: true,
    result: hex(Cl.uint(values.at('get-m', height))),
  }));
}

/** The raw answer the node gives for `n`. */
export const rawUint = (n: number): string => hex(Cl.uint(n));

/** A watched read of `counter` (a batch call's shape). */
export function counterRead(fn: 'get-n' | 'get-seen' = 'get-n', k?: number): Record<string, unknown> {
  return {
    contractAddress: DEPLOYER,
    contractName: COUNTER,
    functionName: fn,
    functionArgs: k === undefined ? [] : [{ type: 'uint', value: String(k) }],
  };
}

/** The key get-seen's answers are set under for argument `k` (as the node receives it). */
export const seenKey = (k: number): string => `get-seen:${hex(Cl.uint(k)).slice(2)}`;

const senderKey = makeRandomPrivKey();
let nonce = 0;

/** A transaction calling `contract`'s `bump`: the block that carries it touches that contract. */
export async function bumpTx(contract: string): Promise<string> {
  const tx = await makeContractCall({
    senderKey,
    network: 'testnet',
    fee: 0,
    nonce: nonce++,
    contractAddress: DEPLOYER,
    contractName: contract,
    functionName: 'bump',
    functionArgs: [],
  });
  return serializeTransaction(tx);
}

/**
 * Mines the fake node's next block and posts it to `observer` with a call of `touch`'s bump
 * (none: an empty block); resolves once the observer applied it.
 */
export async function postNextBlock(
  node: FakeNode,
  observer: { address: string; follower: { handled: number; untilHandled(n: number): Promise<void> } },
  touch: string | undefined,
): Promise<{ height: number; indexBlockHash: string }> {
  const parent = node.block(node.tipHeight);
  const block = node.mine();
  const before = observer.follower.handled;
  const txs = touch === undefined ? [] : [await bumpTx(touch)];
  await new EventDispatcher({ urls: [`http://${observer.address}`], attempts: 1 }).dispatch({
    block,
    parent,
    transactions: txs.map((rawTx, i) => ({
      rawTx,
      txid: `0x${(block.height * 100 + i).toString(16).padStart(64, '0')}`,
    })),
    events: [],
  });
  await observer.follower.untilHandled(before + 1);
  return { height: block.height, indexBlockHash: block.indexBlockHash };
}

/** Call-reads the node answered pinned to `indexBlockHash` (of one function, when given). */
export function callReadsAt(node: FakeNode, indexBlockHash: string, fn?: string): number {
  return node.requests.filter(
    (r) =>
      r.kind === 'call-read' &&
      r.query['tip']?.replace(/^0x/, '').toLowerCase() === indexBlockHash &&
      (fn === undefined || r.functionName === fn),
  ).length;
}

/** One sample of the gateway's /metrics (0 when absent). */
export async function metricValue(base: string, line: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  for (const l of text.split('\n')) {
    if (l.startsWith(`${line} `)) return Number(l.slice(line.length + 1));
  }
  return 0;
}

/** Blocks the hub finished (every stream written): the delivery histogram's count. */
export const DELIVERED = 'clarity_cache_watch_delivery_seconds_count{network="testnet"}';
export const evaluations = (result: 'value' | 'error' | 'no-answer' | 'proven'): string =>
  `clarity_cache_watch_evaluations_total{network="testnet",result="${result}"}`;

/** Creates a subscription; asserts 201. */
export async function subscribe(
  base: string,
  reads: unknown[],
  headers: Record<string, string> = {},
): Promise<{ id: string; events: string; reads: { index: number; key: string }[] }> {
  const res = await request(`${base}/subscriptions`, { body: { reads }, headers });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  expect(res.body.success).toBe(true);
  return res.body.data;
}

/** The next `values` event of a stream. */
export function nextValues(sse: SseConnection, timeoutMs?: number): Promise<SseEvent> {
  return sse.next((e) => e.event === 'values', timeoutMs);
}

/** Every event of a stream so far, of one kind. */
export const valuesEvents = (sse: SseConnection): SseEvent[] =>
  sse.events.filter((e) => e.event === 'values');
