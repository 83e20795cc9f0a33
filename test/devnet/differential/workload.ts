/**
 * The workload of the differential test (differential.test.ts, bench/cases/differential.ts): a
 * seeded sequence of steps on the local chain (src/devnet), each making at least one block.
 *
 * - contract calls: public functions of the contract family (contracts/*.clar) with random
 *   arguments, some failing (`(err ...)`, runtime aborts), signed by deployer, wallet_1 or
 *   wallet_2 and broadcast (POST /v2/transactions, nonces tracked here), or, for wallets without
 *   a key here, run through the devnet's POST /devnet/call-public;
 * - STX transfers between wallets and to contracts (broadcast);
 * - deployments of fresh contracts whose top-level code calls other contracts' public
 *   functions (broadcast), some of which fail;
 * - empty blocks (POST /devnet/mine, 1 to 3 at once).
 *
 * Randomness comes from one seeded generator (sfc32): the same seed gives the same steps, so a
 * wrong answer found by a run can be replayed.
 */
import { readFileSync } from 'node:fs';
import {
  Cl,
  type ClarityValue,
  ClarityVersion,
  cvToHex,
  cvToString,
  makeContractCall,
  makeContractDeploy,
  makeSTXTokenTransfer,
  PostConditionMode,
  type StacksTransactionWire,
  serializeTransaction,
} from '@stacks/transactions';
import { DEVNET_ACCOUNTS, DEVNET_PRIVATE_KEYS } from '../../../src/devnet/index.js';

// --- randomness ---

/** sfc32, seeded through splitmix32: small, fast and good enough to pick steps. */
export class Prng {
  #a: number;
  #b: number;
  #c: number;
  #d: number;

  constructor(seed: number) {
    let s = seed >>> 0;
    const split = (): number => {
      s = (s + 0x9e3779b9) >>> 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.#a = split();
    this.#b = split();
    this.#c = split();
    this.#d = split();
    for (let i = 0; i < 12; i++) this.next();
  }

  /** A uint32. */
  next(): number {
    const t = (((this.#a + this.#b) >>> 0) + this.#d) >>> 0;
    this.#d = (this.#d + 1) >>> 0;
    this.#a = this.#b ^ (this.#b >>> 9);
    this.#b = (this.#c + (this.#c << 3)) >>> 0;
    this.#c = ((this.#c << 21) | (this.#c >>> 11)) >>> 0;
    this.#c = (this.#c + t) >>> 0;
    return t;
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor((this.next() / 0x1_0000_0000) * n);
  }

  chance(p: number): boolean {
    return this.next() / 0x1_0000_0000 < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }

  /** One of `choices`, each with its weight. */
  weighted<T>(choices: ReadonlyArray<readonly [T, number]>): T {
    const total = choices.reduce((sum, [, w]) => sum + w, 0);
    let x = (this.next() / 0x1_0000_0000) * total;
    for (const [item, w] of choices) {
      x -= w;
      if (x < 0) return item;
    }
    return choices[choices.length - 1]![0];
  }

  /** A generator of its own, seeded from this one (so that its use does not shift this one's). */
  fork(): Prng {
    return new Prng(this.next());
  }
}

// --- the contracts ---

export const D = DEVNET_ACCOUNTS.deployer;
export const W1 = DEVNET_ACCOUNTS.wallet_1;
export const W2 = DEVNET_ACCOUNTS.wallet_2;
export const W3 = DEVNET_ACCOUNTS.wallet_3;

/** The wallets this side can sign for. */
export type Signer = keyof typeof DEVNET_PRIVATE_KEYS;
export const SIGNERS: readonly Signer[] = ['deployer', 'wallet_1', 'wallet_2'];
/** Wallets without a key here: their calls go through /devnet/call-public. */
const UNSIGNED_SENDERS = [
  DEVNET_ACCOUNTS.wallet_3,
  DEVNET_ACCOUNTS.wallet_4,
  DEVNET_ACCOUNTS.wallet_5,
  DEVNET_ACCOUNTS.wallet_6,
] as const;

const CONTRACTS_DIR = new URL('./contracts/', import.meta.url);
export const contractFile = (file: string): string =>
  readFileSync(new URL(`${file}.clar`, CONTRACTS_DIR), 'utf8');

export interface ContractSpec {
  /** The contract's name on chain. */
  readonly name: string;
  /** contracts/<file>.clar */
  readonly file: string;
  readonly deployer: Signer;
  readonly clarity: 3 | 4;
}

export const addressOf = (signer: Signer): string => DEVNET_ACCOUNTS[signer];
export const contractId = (spec: Pick<ContractSpec, 'name' | 'deployer'>): string =>
  `${addressOf(spec.deployer)}.${spec.name}`;

/** The family, deployed in this order at the start of a run, one block each. */
export const FAMILY: readonly ContractSpec[] = [
  { name: 'dt-trait', file: 'dt-trait', deployer: 'deployer', clarity: 3 },
  { name: 'dt-registry', file: 'dt-registry', deployer: 'deployer', clarity: 3 },
  { name: 'dt-ledger', file: 'dt-ledger', deployer: 'deployer', clarity: 3 },
  { name: 'dt-token', file: 'dt-token', deployer: 'deployer', clarity: 3 },
  { name: 'dt-vault', file: 'dt-vault', deployer: 'deployer', clarity: 3 },
  { name: 'dt-context', file: 'dt-context', deployer: 'deployer', clarity: 3 },
  { name: 'dt-reader', file: 'dt-reader', deployer: 'deployer', clarity: 3 },
  { name: 'dt-clock', file: 'dt-clock', deployer: 'deployer', clarity: 4 },
  { name: 'dt-token-b', file: 'dt-token', deployer: 'wallet_1', clarity: 3 },
  { name: 'dt-mirror', file: 'dt-mirror', deployer: 'wallet_1', clarity: 3 },
  { name: 'dt-quirks', file: 'dt-quirks', deployer: 'deployer', clarity: 3 },
];

/**
 * Templates of the contracts deployed mid-run (contracts/fresh-*.clar), and who may deploy
 * each, and whether its reads are made before the deployment through every door or one drawn
 * per read. A twin is deployed twice under one name: twin-a.clar, which fails, then, some steps
 * later, twin-b.clar, which succeeds (its reads begin after the first deployment).
 */
export const FRESH: ReadonlyArray<{
  readonly file: string;
  readonly deployers: readonly Signer[];
  readonly preRead: 'all' | 'one';
}> = [
  // `.dt-registry` names the deployer's registry only when the deployer deploys it.
  { file: 'fresh-seed', deployers: ['deployer'], preRead: 'all' },
  { file: 'fresh-notes', deployers: SIGNERS, preRead: 'one' },
  { file: 'fresh-broken', deployers: SIGNERS, preRead: 'one' },
  { file: 'fresh-mint', deployers: SIGNERS, preRead: 'one' },
  { file: 'twin-a', deployers: SIGNERS, preRead: 'one' },
];

const id = (name: string, deployer: Signer = 'deployer'): string => `${addressOf(deployer)}.${name}`;
export const REGISTRY = id('dt-registry');
export const LEDGER = id('dt-ledger');
export const TOKEN = id('dt-token');
export const TOKEN_B = id('dt-token-b', 'wallet_1');
export const VAULT = id('dt-vault');
export const MIRROR = id('dt-mirror', 'wallet_1');
export const QUIRKS = id('dt-quirks');

/** Principals arguments are drawn from. */
const PRINCIPALS = [D, W1, W2, W3, VAULT, MIRROR];

// --- steps ---

export type StepKind = 'call' | 'transfer' | 'deploy' | 'mine';

export interface Step {
  readonly kind: StepKind;
  /** One line: what it does. */
  readonly describe: string;
  /** Signed transaction to broadcast (hex), or a call-public body, or blocks to mine. */
  readonly tx?: string;
  readonly callPublic?: { sender: string; contract: string; function: string; arguments: string[] };
  readonly mine?: number;
  /**
   * For deployments: the contract deployed, the file its tracked reads come from, and when
   * they start being read: `before` the deployment (the gateway first knows it as missing),
   * `after` it, or `already` (the second deployment of a twin, whose reads the first one began).
   */
  readonly deploys?: {
    readonly contractId: string;
    readonly file: string;
    readonly track: 'before' | 'after' | 'already';
    /** Before the deployment (`track: 'before'`): through every door, or one drawn per read. */
    readonly preRead?: 'all' | 'one';
  };
}

export interface StepOutcome {
  readonly step: Step;
  /** Tip height before and after. */
  readonly from: number;
  readonly to: number;
  /**
   * What the chain said: `ok`, `err`, `abort` (a runtime error: made its block, rolled back),
   * `rejected` (no block), `mined`; `accepted` for a broadcast transaction, whose result is in
   * its block (the runner reads it from the /new_block payload).
   */
  readonly result: 'ok' | 'err' | 'abort' | 'rejected' | 'mined' | 'accepted';
  readonly detail?: string;
}

type Call = { contract: string; fn: string; args: ClarityValue[] };

const uintList = (xs: readonly number[]) => Cl.list(xs.map((x) => Cl.uint(x)));

/** What a public call may be: each picks its arguments (some of which make it fail). */
function callMenu(r: Prng, sender: string): ReadonlyArray<readonly [() => Call, number]> {
  const amount = () =>
    r.weighted<number>([
      [0, 1],
      [1 + r.int(999), 8],
      [1500, 1],
      [2_000_000, 1],
    ]);
  const small = () =>
    r.weighted<number>([
      [0, 1],
      [1 + r.int(20), 6],
      [2_000_000, 1],
    ]);
  const list = () => Array.from({ length: 1 + r.int(4) }, small);
  const who = () => Cl.principal(r.pick(PRINCIPALS));
  const token = () => r.pick([TOKEN, TOKEN_B]);
  return [
    [() => ({ contract: token(), fn: 'mint', args: [Cl.uint(amount()), who()] }), 6],
    [
      () => ({ contract: token(), fn: 'transfer', args: [Cl.uint(amount()), Cl.principal(sender), who()] }),
      3,
    ],
    [() => ({ contract: token(), fn: 'burn', args: [Cl.uint(amount())] }), 1],
    [() => ({ contract: REGISTRY, fn: 'record', args: [who(), Cl.uint(r.pick([r.int(999), 1200]))] }), 3],
    [() => ({ contract: REGISTRY, fn: 'bump', args: [] }), 2],
    [() => ({ contract: LEDGER, fn: 'note', args: [Cl.uint(r.pick([r.int(999), 1001]))] }), 3],
    [() => ({ contract: LEDGER, fn: 'tick', args: [] }), 2],
    [() => ({ contract: VAULT, fn: 'deposit', args: [Cl.uint(amount())] }), 4],
    [() => ({ contract: VAULT, fn: 'withdraw', args: [Cl.uint(r.int(3000))] }), 3],
    [() => ({ contract: VAULT, fn: 'bump-many', args: [uintList(list())] }), 5],
    [() => ({ contract: VAULT, fn: 'note-all', args: [uintList(list())] }), 5],
    [() => ({ contract: VAULT, fn: 'mint-some', args: [uintList(list())] }), 4],
    [() => ({ contract: VAULT, fn: 'record-then-fail', args: [Cl.uint(r.int(999))] }), 2],
    [() => ({ contract: VAULT, fn: 'record-then-abort', args: [Cl.uint(r.int(999))] }), 2],
    [
      () => ({
        contract: VAULT,
        fn: 'pay-via',
        args: [Cl.principal(token()), Cl.uint(r.pick([1, 2, 5, 10_000_000])), who()],
      }),
      3,
    ],
    [() => ({ contract: MIRROR, fn: 'copy-counter', args: [] }), 2],
    [() => ({ contract: MIRROR, fn: 'tick-twice', args: [] }), 2],
    [() => ({ contract: QUIRKS, fn: 'quirk-note', args: [Cl.uint(r.pick([r.int(999), 1001]))] }), 2],
  ];
}

export interface WorkloadOptions {
  readonly seed: number;
  /** Relative weights of the step kinds after the family is deployed. */
  readonly weights?: Partial<Record<'call' | 'callPublic' | 'transfer' | 'deploy' | 'mine', number>>;
}

const DEFAULT_WEIGHTS = { call: 46, callPublic: 8, transfer: 14, deploy: 8, mine: 14 };

/**
 * Drives the devnet at `url`: `setup()` steps deploy the family, then `next()` picks one step
 * and `perform()` runs it. Nonces of the signing wallets are tracked from the chain's own.
 */
export class Workload {
  readonly url: string;
  readonly #r: Prng;
  readonly #weights: typeof DEFAULT_WEIGHTS;
  readonly #nonces = new Map<Signer, number>();
  #fresh = 0;
  /** A twin whose first (failing) deployment was made: its name and deployer. */
  #twin: { name: string; signer: Signer } | undefined;
  /** Templates still to deal, shuffled (every template comes once before any comes again). */
  #deck: Array<(typeof FRESH)[number]> = [];

  constructor(url: string, options: WorkloadOptions) {
    this.url = url;
    this.#r = new Prng(options.seed);
    this.#weights = { ...DEFAULT_WEIGHTS, ...options.weights };
  }

  async #nonce(signer: Signer): Promise<number> {
    let nonce = this.#nonces.get(signer);
    if (nonce === undefined) {
      const res = await fetch(`${this.url}/v2/accounts/${addressOf(signer)}?proof=0`);
      nonce = ((await res.json()) as { nonce: number }).nonce;
    }
    this.#nonces.set(signer, nonce + 1);
    return nonce;
  }

  async #deployTx(name: string, file: string, signer: Signer, clarity: 3 | 4): Promise<string> {
    const tx = await makeContractDeploy({
      contractName: name,
      codeBody: contractFile(file),
      clarityVersion: clarity === 4 ? ClarityVersion.Clarity4 : ClarityVersion.Clarity3,
      senderKey: DEVNET_PRIVATE_KEYS[signer],
      network: 'devnet',
      fee: 0,
      nonce: await this.#nonce(signer),
      postConditionMode: PostConditionMode.Allow,
    });
    return hexOf(tx);
  }

  /** The family's deployments, one step each. */
  async setup(): Promise<Step[]> {
    const steps: Step[] = [];
    for (const spec of FAMILY) {
      steps.push({
        kind: 'deploy',
        describe: `deploy ${spec.name} (${spec.file}.clar, Clarity ${spec.clarity}) by ${spec.deployer}`,
        tx: await this.#deployTx(spec.name, spec.file, spec.deployer, spec.clarity),
        deploys: { contractId: contractId(spec), file: spec.file, track: 'after' },
      });
    }
    return steps;
  }

  /** The next step, drawn from the seed. */
  async next(): Promise<Step> {
    const r = this.#r;
    const w = this.#weights;
    const kind = r.weighted<keyof typeof DEFAULT_WEIGHTS>([
      ['call', w.call],
      ['callPublic', w.callPublic],
      ['transfer', w.transfer],
      ['deploy', w.deploy],
      ['mine', w.mine],
    ]);
    switch (kind) {
      case 'mine': {
        const blocks = r.weighted<number>([
          [1, 6],
          [2, 1],
          [3, 1],
        ]);
        return { kind: 'mine', describe: `mine ${blocks} empty block(s)`, mine: blocks };
      }
      case 'transfer': {
        const signer = r.pick(SIGNERS);
        const from = addressOf(signer);
        const to = r.pick(PRINCIPALS.filter((p) => p !== from));
        const amount = r.weighted<number>([
          [1 + r.int(1_000_000), 8],
          [50_000_000_000_000 + r.int(1_000_000), 1],
        ]);
        const tx = await makeSTXTokenTransfer({
          recipient: to,
          amount: BigInt(amount),
          senderKey: DEVNET_PRIVATE_KEYS[signer],
          network: 'devnet',
          fee: 0,
          nonce: await this.#nonce(signer),
        });
        return { kind: 'transfer', describe: `${signer} transfers ${amount} uSTX to ${to}`, tx: hexOf(tx) };
      }
      case 'deploy': {
        const twin = this.#twin;
        if (twin !== undefined && r.chance(0.5)) {
          this.#twin = undefined;
          return {
            kind: 'deploy',
            describe: `deploy ${twin.name} again (twin-b.clar) by ${twin.signer}`,
            tx: await this.#deployTx(twin.name, 'twin-b', twin.signer, 3),
            deploys: {
              contractId: `${addressOf(twin.signer)}.${twin.name}`,
              file: 'twin-b',
              track: 'already',
            },
          };
        }
        if (this.#deck.length === 0) {
          this.#deck = [...FRESH];
          for (let i = this.#deck.length - 1; i > 0; i--) {
            const j = r.int(i + 1);
            [this.#deck[i], this.#deck[j]] = [this.#deck[j]!, this.#deck[i]!];
          }
        }
        // One twin at a time: a second one waits for the first one's second deployment.
        let at = this.#deck.findIndex((t) => t.file !== 'twin-a' || this.#twin === undefined);
        if (at < 0) at = 0;
        const template = this.#deck.splice(at, 1)[0]!;
        if (template.file === 'twin-a' && this.#twin !== undefined) {
          this.#deck.push(template);
          return this.next();
        }
        const signer = r.pick(template.deployers);
        const name = `${template.file === 'twin-a' ? 'twin' : template.file}-${++this.#fresh}`;
        if (template.file === 'twin-a') this.#twin = { name, signer };
        return {
          kind: 'deploy',
          describe: `deploy ${name} (${template.file}.clar) by ${signer}`,
          tx: await this.#deployTx(name, template.file, signer, 3),
          // A twin's reads are those of its second code, begun once the first failed.
          deploys:
            template.file === 'twin-a'
              ? { contractId: `${addressOf(signer)}.${name}`, file: 'twin-b', track: 'after' }
              : {
                  contractId: `${addressOf(signer)}.${name}`,
                  file: template.file,
                  track: 'before',
                  preRead: template.preRead,
                },
        };
      }
      case 'callPublic': {
        const sender = r.pick(UNSIGNED_SENDERS);
        const call = r.weighted(callMenu(r, sender))();
        return {
          kind: 'call',
          describe: `call-public ${describeCall(call)} from ${sender}`,
          callPublic: {
            sender,
            contract: call.contract,
            function: call.fn,
            arguments: call.args.map((a) => cvToHex(a)),
          },
        };
      }
      case 'call': {
        const signer = r.pick(SIGNERS);
        const call = r.weighted(callMenu(r, addressOf(signer)))();
        const [address, name] = call.contract.split('.') as [string, string];
        const tx = await makeContractCall({
          contractAddress: address,
          contractName: name,
          functionName: call.fn,
          functionArgs: call.args,
          senderKey: DEVNET_PRIVATE_KEYS[signer],
          network: 'devnet',
          fee: 0,
          nonce: await this.#nonce(signer),
          postConditionMode: PostConditionMode.Allow,
        });
        return { kind: 'call', describe: `${describeCall(call)} signed by ${signer}`, tx: hexOf(tx) };
      }
    }
  }

  /** Runs a step on the chain; `tipHeight` reads the chain's tip. */
  async perform(step: Step, tipHeight: () => number): Promise<StepOutcome> {
    const from = tipHeight();
    let result: StepOutcome['result'];
    let detail: string | undefined;
    if (step.mine !== undefined) {
      const res = await post(`${this.url}/devnet/mine`, { blocks: step.mine });
      if (res.status !== 200) throw new Error(`mine: ${res.status} ${res.text}`);
      result = 'mined';
    } else if (step.callPublic !== undefined) {
      const res = await post(`${this.url}/devnet/call-public`, step.callPublic);
      if (res.status === 200) {
        const outcome = JSON.parse(res.text) as { result: string; committed: boolean };
        result = outcome.committed ? 'ok' : 'err';
        detail = outcome.result;
      } else {
        // A runtime abort made its block; a refusal (bad arguments) did not.
        result = tipHeight() > from ? 'abort' : 'rejected';
        detail = res.text;
      }
    } else {
      const res = await post(`${this.url}/v2/transactions`, { tx: step.tx });
      if (res.status !== 200) {
        result = 'rejected';
        detail = res.text;
        // The nonce was not taken: learn it again from the chain.
        this.#nonces.clear();
      } else {
        result = 'accepted';
      }
    }
    return { step, from, to: tipHeight(), result, ...(detail === undefined ? {} : { detail }) };
  }
}

function describeCall(call: Call): string {
  return `${call.contract.split('.')[1]}::${call.fn}(${call.args.map((a) => cvToString(a)).join(', ')})`;
}

function hexOf(tx: StacksTransactionWire): string {
  return serializeTransaction(tx);
}

async function post(url: string, body: unknown): Promise<{ status: number; text: string }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}
