/**
 * The stand-in Stacks node of the watched-reads case (bench/cases/watch.ts), a process of its
 * own over the child-process IPC channel (as bench/fake-node-process.ts): the fake node
 * (test/support/fake-node.ts) serving `demo` at MAINNET_ADDR (the hit of bench/support.ts's
 * RO_PATH) and WATCH_CONTRACTS contracts `w0`, `w1`, … whose `get-entry (id uint)` answers
 * `u(id * 1000 + n)`, n being how many blocks at or below the height read changed that
 * contract (`change`). The height is the pinned block's (`?tip=`), so an answer at a block is
 * the same whenever it is asked: a block changes exactly the reads of the contracts it is told
 * to. Each contract's source is served too, for the event observer's dependency analysis.
 *
 * Messages in: {id, cmd, …}; out: {id, result} or {id, error}; first out: {ready: url}.
 */
import { Cl, cvToHex, hexToCV } from '@stacks/transactions';
import { startFakeNode } from '../test/support/fake-node.js';
import { MAINNET_ADDR } from '../test/support/fixtures.js';
import { BENCH_ABI, CONTRACT, RESULT_HEX } from './fake-node-process.js';

export const WATCH_CONTRACTS = 100;
export const watchContract = (c: number): string => `w${c}`;

/** The source the dependency analysis reads: `get-entry` depends on its own contract only. */
export const WATCH_SOURCE = [
  '(define-data-var n uint u0)',
  '(define-public (bump (x uint)) (ok (var-set n (+ (var-get n) x))))',
  '(define-read-only (get-entry (id uint)) (+ (* id u1000) (var-get n)))',
  '',
].join('\n');

export const WATCH_ABI = {
  functions: [
    {
      name: 'bump',
      access: 'public',
      args: [{ name: 'x', type: 'uint128' }],
      outputs: { type: { response: { ok: 'bool', error: 'none' } } },
    },
    {
      name: 'get-entry',
      access: 'read_only',
      args: [{ name: 'id', type: 'uint128' }],
      outputs: { type: 'uint128' },
    },
  ],
  variables: [{ name: 'n', type: 'uint128', access: 'variable' }],
  maps: [],
  fungible_tokens: [],
  non_fungible_tokens: [],
  epoch: 'Epoch31',
  clarity_version: 'Clarity3',
};

/** What `get-entry(id)` of contract `c` answers at `height`, given the heights that changed it. */
export function entryValue(id: bigint, changes: readonly number[], height: number): bigint {
  let n = 0n;
  for (const h of changes) if (h <= height) n++;
  return id * 1000n + n;
}

export type WatchNodeCommand =
  /** The node's tip (a pinned read of a block above it is 404, as a node answers). */
  | { cmd: 'tip'; height: number }
  /** The block at `height` changes these contracts' state. */
  | { cmd: 'change'; contracts: number[]; height: number }
  | { cmd: 'count'; kind?: 'call-read' | 'interface' | 'info' | 'other' }
  | { cmd: 'resetStats' };

async function main(): Promise<void> {
  const node = await startFakeNode();
  node.setAbi(MAINNET_ADDR, CONTRACT, BENCH_ABI);
  node.setReadOnly(MAINNET_ADDR, CONTRACT, 'get-info', { okay: true, result: RESULT_HEX });
  const changes: number[][] = [];
  for (let c = 0; c < WATCH_CONTRACTS; c++) {
    const name = watchContract(c);
    const changed: number[] = [];
    changes.push(changed);
    node.setAbi(MAINNET_ADDR, name, WATCH_ABI);
    node.setSource(MAINNET_ADDR, name, WATCH_SOURCE);
    node.setReadOnly(MAINNET_ADDR, name, 'get-entry', (call) => {
      const arg = hexToCV(call.arguments[0] ?? '');
      if (arg.type !== 'uint') return { okay: false, cause: 'RuntimeCheck(TypeError)' };
      return { okay: true, result: cvToHex(Cl.uint(entryValue(BigInt(arg.value), changed, call.height))) };
    });
  }

  const handle = (c: WatchNodeCommand): unknown => {
    switch (c.cmd) {
      case 'tip':
        node.setTipHeight(c.height);
        return null;
      case 'change':
        for (const contract of c.contracts) changes[contract]?.push(c.height);
        return null;
      case 'count':
        return node.count(c.kind);
      case 'resetStats':
        node.resetStats();
        return null;
    }
  };
  process.on('message', (msg: { id: number } & WatchNodeCommand) => {
    try {
      process.send?.({ id: msg.id, result: handle(msg) });
    } catch (err) {
      process.send?.({ id: msg.id, error: err instanceof Error ? err.message : String(err) });
    }
  });
  // The parent going away (or closing the channel) ends this process.
  process.on('disconnect', () => {
    node.close().finally(() => process.exit(0));
  });
  process.send?.({ ready: node.url });
}

if (process.argv[1] !== undefined && import.meta.filename === process.argv[1]) {
  main().catch((err: unknown) => {
    process.stderr.write(`watch node: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  });
}
