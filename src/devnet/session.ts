/**
 * One simnet session of the devnet chain (chain.ts): how it is created and bootstrapped, the
 * state-changing ops the chain journals and how one is applied, with the VM's console output
 * muted; and the probes that learn what simnet does not tell about a deployed contract by
 * deploying an augmented copy of it on a scratch session.
 *
 * GPL-3.0: @stacks/clarinet-sdk is a devDependency and only src/devnet imports it.
 */
import { getSDK, type Simnet } from '@stacks/clarinet-sdk';
import { type ClarityValue, serializeCV } from '@stacks/transactions';
import { DEPLOYER, DEVNET_ACCOUNTS, INITIAL_USTX_BALANCE } from './accounts.js';

/**
 * The epochs the devnet can run in: 3.1 (the default) deploys every contract as Clarity 3;
 * 3.3 deploys a broadcast deployment as the Clarity version its payload names (Clarity 4 when
 * it names none; 4 at most), and the sample contracts as Clarity 3.
 */
export type DevnetEpoch = '3.1' | '3.3';
export const DEVNET_EPOCH: DevnetEpoch = '3.1';
/** The Clarity version of the sample contracts and of every deployment in epoch 3.1. */
export const DEFAULT_CLARITY_VERSION = 3;

/** The Clarity version a deployment runs as in `epoch`, given the one its payload names (if any). */
export function clarityVersionFor(epoch: DevnetEpoch, requested: number | undefined): number {
  if (epoch === '3.1') return DEFAULT_CLARITY_VERSION;
  return requested === undefined ? 4 : Math.min(Math.max(requested, 1), 4);
}

/** The contract interface as simnet (and a node's /v2/contracts/interface) renders it. */
export interface ContractInterface {
  readonly functions: ReadonlyArray<{
    readonly name: string;
    readonly access: 'private' | 'public' | 'read_only';
    readonly args: ReadonlyArray<{ readonly name: string; readonly type: unknown }>;
    readonly outputs: { readonly type: unknown };
  }>;
  readonly variables: readonly unknown[];
  readonly maps: readonly unknown[];
  readonly fungible_tokens: readonly unknown[];
  readonly non_fungible_tokens: readonly unknown[];
  readonly epoch: string;
  readonly clarity_version: string;
}

/** A transaction broadcast to POST /v2/transactions, kept so that observers get it as sent. */
export interface SignedTransaction {
  /** Serialized transaction, hex without 0x. */
  readonly rawTx: string;
  /** 0x + 64 hex digits. */
  readonly txid: string;
}

export type Op =
  | {
      readonly kind: 'deploy';
      readonly name: string;
      readonly source: string;
      readonly sender: string;
      readonly tx?: SignedTransaction;
      /** Default DEFAULT_CLARITY_VERSION. */
      readonly clarityVersion?: number;
    }
  | {
      readonly kind: 'call';
      readonly contract: string;
      readonly fn: string;
      readonly args: readonly ClarityValue[];
      readonly sender: string;
      readonly tx?: SignedTransaction;
    }
  | {
      readonly kind: 'transfer';
      readonly amount: bigint;
      readonly recipient: string;
      readonly sender: string;
      readonly tx?: SignedTransaction;
    }
  | { readonly kind: 'mine'; readonly blocks: number };

export function toHex(value: ClarityValue): string {
  return `0x${serializeCV(value)}`;
}

/**
 * Runs a simnet call with console output muted: the wasm VM prints every runtime error (with
 * its stack) to the console, which would drown a server log. Calls are synchronous, so
 * nothing else can log in between.
 */
export function quietly<T>(fn: () => T): T {
  const { log, error, warn } = console;
  const mute = () => {};
  console.log = mute;
  console.error = mute;
  console.warn = mute;
  try {
    return fn();
  } finally {
    console.log = log;
    console.error = error;
    console.warn = warn;
  }
}

export async function newSession(): Promise<Simnet> {
  return getSDK({ trackCosts: true, trackCoverage: false });
}

/** Empty session in `epoch` with the devnet accounts funded; the journal replays on top. */
export async function bootstrap(simnet: Simnet, epoch: DevnetEpoch = DEVNET_EPOCH): Promise<void> {
  const log = console.log;
  console.log = () => {};
  try {
    await simnet.initEmptySession(null);
  } finally {
    console.log = log;
  }
  quietly(() => {
    simnet.setEpoch(epoch);
    simnet.deployer = DEPLOYER;
    const addresses = Object.values(DEVNET_ACCOUNTS);
    simnet.setLocalAccounts(addresses);
    for (const address of addresses) simnet.mintSTX(address, INITIAL_USTX_BALANCE);
  });
}

/** Applies one journalled op; throws what simnet throws. */
export function applyOp(simnet: Simnet, op: Op) {
  switch (op.kind) {
    case 'deploy':
      return simnet.deployContract(
        op.name,
        op.source,
        { clarityVersion: (op.clarityVersion ?? DEFAULT_CLARITY_VERSION) as never },
        op.sender,
      );
    case 'call':
      // The SDK's ClarityValue type comes from its own copy of @stacks/transactions; the
      // runtime shape is the same.
      return simnet.callPublicFn(op.contract, op.fn, op.args as never, op.sender);
    case 'transfer':
      return simnet.transferSTX(op.amount, op.recipient, op.sender);
    case 'mine':
      simnet.mineEmptyBlocks(op.blocks);
      return undefined;
  }
}

/** What a probe deploys: a contract as its journalled deployment has it. */
interface Deployment {
  readonly name: string;
  readonly source: string;
  readonly sender: string;
  readonly clarityVersion?: number;
}

const INTERFACE_MARKER = 'clarity-cache-interface';

/**
 * The interface of `deployment`, deployed on `simnet` (a scratch session as of the block
 * before its deployment) with a read-only function appended, which simnet then lists; the
 * function is left out of the answer.
 */
export function interfaceOf(simnet: Simnet, deployment: Deployment): ContractInterface | undefined {
  const { name, source, sender, clarityVersion } = deployment;
  const listed = quietly(() => {
    applyOp(simnet, {
      kind: 'deploy',
      name,
      source: `${source}\n(define-read-only (${INTERFACE_MARKER}) true)\n`,
      sender,
      clarityVersion,
    });
    return simnet.getContractsInterfaces() as unknown as Map<string, ContractInterface>;
  });
  const iface = listed.get(`${sender}.${name}`);
  return iface && { ...iface, functions: iface.functions.filter((f) => f.name !== INTERFACE_MARKER) };
}

/**
 * The values of the constants `names` of `deployment` (0x + serialized): deployed on `simnet`
 * (a scratch session as of the block before its deployment, so with the same tx-sender and
 * block height) with one read-only function per constant appended, each then called.
 */
export function constantsOf(
  simnet: Simnet,
  deployment: Deployment,
  names: readonly string[],
): Map<string, string> {
  const { name, source, sender, clarityVersion } = deployment;
  const getter = (i: number) => `clarity-cache-constant-${i}`;
  const getters = names.map((constant, i) => `(define-read-only (${getter(i)}) ${constant})`);
  return quietly(() => {
    applyOp(simnet, {
      kind: 'deploy',
      name,
      source: `${source}\n${getters.join('\n')}\n`,
      sender,
      clarityVersion,
    });
    const values = new Map<string, string>();
    for (const [i, constant] of names.entries()) {
      const response = simnet.callReadOnlyFn(`${sender}.${name}`, getter(i), [], sender);
      values.set(constant, toHex(response.result as ClarityValue));
    }
    return values;
  });
}
