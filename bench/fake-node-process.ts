/**
 * The fake Stacks node (test/support/fake-node.ts) in a process of its own, controlled by
 * bench/run.ts over the child-process IPC channel. It serves one contract, `demo` at
 * MAINNET_ADDR, whose ABI is the test fixture plus `get-entry (id uint)`; both `get-info` and
 * `get-entry` answer the fixture's tuple (INFO_VALUE).
 *
 * Messages in: {id, cmd, args}; out: {id, result} or {id, error}; first out: {ready: url}.
 */

import { Cl } from '@stacks/transactions';
import { type FakeEndpoint, startFakeNode } from '../test/support/fake-node.js';
import { hex, INFO_VALUE, MAINNET_ADDR, SAMPLE_ABI, TESTNET_ADDR } from '../test/support/fixtures.js';

export const CONTRACT = 'demo';
export const RESULT_HEX = hex(INFO_VALUE);
export const BALANCE_HEX = hex(Cl.ok(Cl.uint(1_000_000)));
export const BENCH_ABI = {
  ...SAMPLE_ABI,
  functions: [
    ...SAMPLE_ABI.functions,
    {
      name: 'get-entry',
      access: 'read_only',
      args: [{ name: 'id', type: 'uint128' }],
      outputs: { type: { tuple: [] } },
    },
  ],
};

export type FakeNodeCommand =
  | { cmd: 'delay'; ms: number; kind?: FakeEndpoint }
  | { cmd: 'gate'; kind?: FakeEndpoint }
  | { cmd: 'release' }
  | { cmd: 'clearFaults' }
  | { cmd: 'count'; kind?: FakeEndpoint }
  /** Call-reads that named a block (`?tip=`), as an attested vote's requests do. */
  | { cmd: 'countPinned' }
  | { cmd: 'resetStats' };

async function main(): Promise<void> {
  const node = await startFakeNode();
  node.setAbi(MAINNET_ADDR, CONTRACT, BENCH_ABI);
  node.setReadOnly(MAINNET_ADDR, CONTRACT, 'get-info', { okay: true, result: RESULT_HEX });
  node.setReadOnly(MAINNET_ADDR, CONTRACT, 'get-entry', { okay: true, result: RESULT_HEX });
  // The same contract on testnet, with a balance by principal (the hit-independent case).
  node.setAbi(TESTNET_ADDR, CONTRACT, BENCH_ABI);
  node.setReadOnly(TESTNET_ADDR, CONTRACT, 'get-balance', { okay: true, result: BALANCE_HEX });

  const handle = (c: FakeNodeCommand): unknown => {
    switch (c.cmd) {
      case 'delay':
        node.delay(c.ms, c.kind === undefined ? {} : { kind: c.kind });
        return null;
      case 'gate':
        node.gate(c.kind === undefined ? {} : { kind: c.kind });
        return null;
      case 'release':
        return node.release();
      case 'clearFaults':
        node.clearFaults();
        return null;
      case 'count':
        return node.count(c.kind);
      case 'countPinned':
        return node.requests.filter((r) => r.kind === 'call-read' && r.query.tip !== undefined).length;
      case 'resetStats':
        node.resetStats();
        return null;
    }
  };
  process.on('message', (msg: { id: number } & FakeNodeCommand) => {
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
    process.stderr.write(`fake node: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  });
}
