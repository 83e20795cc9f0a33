/**
 * The devnet chain: the real Clarity VM of @stacks/clarinet-sdk (simnet) plus what a node
 * adds on top of it — block identities, the read-only call semantics of the node RPC, and
 * answers "as of" an earlier block.
 *
 * Two simnet sessions live in this process:
 * - the main session holds the chain tip; every state change (deployments, public calls,
 *   mined blocks) is applied to it and recorded in a journal;
 * - a scratch session, created on first need, replays the journal up to a given height. It
 *   answers `?tip=` for earlier blocks exactly (sender and all), and runs read-only calls to
 *   public functions, which a node allows as long as they write nothing: simnet can only run
 *   them as transactions, so they run on the scratch session, which is then rebuilt.
 *
 * GPL-3.0: @stacks/clarinet-sdk is a devDependency and only src/devnet imports it.
 */
import type { Simnet } from '@stacks/clarinet-sdk';
import type { ClarityValue } from '@stacks/transactions';
import { DEPLOYER } from './accounts.js';
import { type BlockIdentity, blockIdentity } from './blocks.js';
import { causes, isVmPanic, nodeCauseFromSimnetError } from './causes.js';
import { loadContractSource, SAMPLE_CONTRACTS } from './contracts.js';
import {
  applyOp,
  bootstrap,
  type ContractInterface,
  clarityVersionFor,
  constantsOf,
  DEFAULT_CLARITY_VERSION,
  DEVNET_EPOCH,
  type DevnetEpoch,
  interfaceOf,
  newSession,
  type Op,
  quietly,
  type SignedTransaction,
  toHex,
} from './session.js';

export type { ContractInterface, DevnetEpoch, SignedTransaction } from './session.js';

export type CallReadResult =
  | { readonly okay: true; readonly result: string }
  | { readonly okay: false; readonly cause: string };

export interface PublicCallOutcome {
  /** The transaction's result, `0x` + serialized Clarity value. */
  readonly result: string;
  /** True when the result is `(ok ...)`, i.e. the transaction's writes were committed. */
  readonly committed: boolean;
  readonly events: ReadonlyArray<{ readonly event: string; readonly data: Record<string, unknown> }>;
  readonly tip: BlockIdentity;
}

/** A Clarity failure of a state-changing request (bad arguments and the like). */
export class DevnetCallError extends Error {
  /** The cause a node would report, e.g. `RuntimeCheck(IncorrectArgumentCount(4, 3))`. */
  readonly nodeCause: string;

  constructor(nodeCause: string) {
    super(nodeCause);
    this.name = 'DevnetCallError';
    this.nodeCause = nodeCause;
  }
}

/** What made a block: a deploy, a public call, an STX transfer, or mining (empty blocks). */
export type MadeBy = Op;

/** What a transaction's block carries besides the transaction: its result and events. */
export interface BlockOutcome {
  /** `0x` + the serialized result; absent when the VM aborted the transaction (a runtime error). */
  readonly result?: string;
  /** `(ok ...)`: its writes were committed. False for an `(err ...)` and for an abort. */
  readonly committed: boolean;
  /** As simnet reports them (`print_event`, `ft_mint_event`, `stx_transfer_event`, ...); none when not committed. */
  readonly events: ReadonlyArray<{ readonly event: string; readonly data: Record<string, unknown> }>;
}

interface Scratch {
  readonly simnet: Simnet;
  /** Journal entries replayed so far. */
  index: number;
  /** Ran something that may have changed its state: rebuild before the next use. */
  dirty: boolean;
  /** Its VM panicked: replace the session. */
  poisoned: boolean;
}

interface JournalEntry {
  readonly op: Op;
  /** Stacks height before and after the op. */
  readonly before: number;
  readonly after: number;
}

function withoutValues(
  events: ReadonlyArray<{ event: string; data: Record<string, unknown> }>,
): PublicCallOutcome['events'] {
  // `value` is the decoded twin of `raw_value` (hex) and holds bigints: keep the hex only.
  return events.map(({ event, data }) => {
    const { value: _value, ...rest } = data;
    return { event, data: rest };
  });
}

function isOkResponse(value: ClarityValue): boolean {
  return value.type === 'ok';
}

export class DevnetChain {
  private readonly main: Simnet;
  private readonly journal: JournalEntry[] = [];
  /** Block identities by Stacks height. */
  private readonly blocks: BlockIdentity[] = [];
  private readonly heightByIndexHash = new Map<string, number>();
  /** Contract interfaces, refreshed after each deployment, and the height each was deployed at. */
  private readonly interfaces = new Map<string, ContractInterface>();
  private readonly deployedAt = new Map<string, number>();
  /** Sources as deployed (simnet does not keep every one; see derivedInterface). */
  private readonly sources = new Map<string, string>();
  /** Account nonces: transactions of each sender that made a block (simnet keeps none we can read). */
  private readonly nonces = new Map<string, number>();
  /** Constant values by contract, computed once (constants never change). */
  private readonly constants = new Map<string, Promise<Map<string, string>>>();
  private scratch: Scratch | undefined;
  private scratchQueue: Promise<unknown> = Promise.resolve();
  private broken: string | undefined;

  /** The epoch it runs in (session.ts, DevnetEpoch). */
  readonly epoch: DevnetEpoch;

  private constructor(main: Simnet, epoch: DevnetEpoch) {
    this.main = main;
    this.epoch = epoch;
  }

  /** Starts an empty chain and deploys the sample contracts from the devnet deployer. */
  static async create(options: { readonly epoch?: DevnetEpoch } = {}): Promise<DevnetChain> {
    const epoch = options.epoch ?? DEVNET_EPOCH;
    const main = await newSession();
    await bootstrap(main, epoch);
    const chain = new DevnetChain(main, epoch);
    for (let height = 0; height <= main.stacksBlockHeight; height++) {
      chain.recordBlock(height, Math.min(height, main.burnBlockHeight));
    }
    for (const contract of SAMPLE_CONTRACTS) {
      await chain.deployContract(contract.name, await loadContractSource(contract), DEPLOYER);
    }
    return chain;
  }

  get tipHeight(): number {
    return this.main.stacksBlockHeight;
  }

  get burnBlockHeight(): number {
    return this.main.burnBlockHeight;
  }

  get tip(): BlockIdentity {
    return this.block(this.tipHeight)!;
  }

  block(height: number): BlockIdentity | undefined {
    return this.blocks[height];
  }

  /** Height of the block with this index block hash (hex, with or without 0x), if any. */
  heightOf(indexBlockHash: string): number | undefined {
    return this.heightByIndexHash.get(indexBlockHash.replace(/^0x/i, '').toLowerCase());
  }

  /** Deployed contract ids, in deployment order. */
  get contracts(): string[] {
    return [...this.deployedAt.keys()];
  }

  /** The interface of a contract as of a block height (default: the tip), if deployed by then. */
  contractInterface(contractId: string, height = this.tipHeight): ContractInterface | undefined {
    const deployedAt = this.deployedAt.get(contractId);
    if (deployedAt === undefined || deployedAt > height) return undefined;
    return this.interfaces.get(contractId);
  }

  /**
   * POST /v2/contracts/call-read, as a node answers it: runs `fn` as `sender` as of block
   * `height` (default: the tip). Clarity failures are `okay: false` with the node's cause.
   */
  async callReadOnly(
    contractId: string,
    fn: string,
    args: readonly ClarityValue[],
    sender: string,
    height = this.tipHeight,
  ): Promise<CallReadResult> {
    this.assertUsable();
    const iface = this.contractInterface(contractId, height);
    if (!iface) return { okay: false, cause: causes.noSuchContract(contractId) };
    const func = iface.functions.find((f) => f.name === fn);
    if (!func) return { okay: false, cause: causes.undefinedFunction(fn) };
    if (func.access === 'private') return { okay: false, cause: causes.noSuchPublicFunction(contractId, fn) };
    if (func.access === 'read_only' && height === this.tipHeight) {
      return this.guard(
        () => quietly(() => this.main.callReadOnlyFn(contractId, fn, args as never, sender)),
        (error) => {
          this.broken = `the Clarity VM panicked: ${String(error)}`;
        },
      );
    }
    return this.withScratch(height, (scratch) => {
      const poison = () => {
        scratch.poisoned = true;
        scratch.dirty = true;
      };
      if (func.access === 'read_only') {
        return this.guard(
          () => quietly(() => scratch.simnet.callReadOnlyFn(contractId, fn, args as never, sender)),
          poison,
        );
      }
      // A node runs public functions too, with a write budget of zero: the first write
      // aborts the call with "NotReadOnly". Simnet runs them as a transaction, so this one
      // runs on the scratch session, which is rebuilt before its next use.
      scratch.dirty = true;
      let writes = 0;
      const outcome = this.guard(
        () =>
          quietly(() => {
            const response = scratch.simnet.callPublicFn(contractId, fn, args as never, sender);
            writes = response.costs?.total.writeCount ?? 0;
            return response;
          }),
        poison,
      );
      if (writes > 0) return { okay: false, cause: causes.notReadOnly };
      return outcome;
    });
  }

  /** Executes a public function as a transaction from `sender` in a new block. */
  callPublic(
    contractId: string,
    fn: string,
    args: readonly ClarityValue[],
    sender: string,
    tx?: SignedTransaction,
  ): PublicCallOutcome {
    this.assertUsable();
    const iface = this.contractInterface(contractId);
    if (!iface) throw new DevnetCallError(causes.noSuchContract(contractId));
    const func = iface.functions.find((f) => f.name === fn);
    if (!func) throw new DevnetCallError(causes.undefinedFunction(fn));
    if (func.access !== 'public') throw new DevnetCallError(causes.noSuchPublicFunction(contractId, fn));
    if (func.args.length !== args.length) {
      throw new DevnetCallError(causes.incorrectArgumentCount(func.args.length, args.length));
    }
    const response = this.apply({ kind: 'call', contract: contractId, fn, args: [...args], sender, tx });
    return this.outcome(response);
  }

  /** Transfers uSTX from `sender` to `recipient` in a new block (err u1: balance too low, as stx-transfer? says). */
  transferStx(amount: bigint, recipient: string, sender: string, tx?: SignedTransaction): PublicCallOutcome {
    this.assertUsable();
    return this.outcome(this.apply({ kind: 'transfer', amount, recipient, sender, tx }));
  }

  /**
   * Deploys a contract from `sender` in a new block. A contract that fails analysis still
   * makes its block (and takes its sender's nonce), as a node mines a failing deployment.
   * `clarityVersion` is the version a transaction's payload names: epoch 3.1 deploys every
   * contract as Clarity 3, epoch 3.3 as the version named (session.ts, clarityVersionFor);
   * without a transaction, as Clarity 3.
   */
  async deployContract(
    name: string,
    source: string,
    sender: string,
    tx?: SignedTransaction,
    clarityVersion?: number,
  ): Promise<PublicCallOutcome> {
    this.assertUsable();
    const contractId = `${sender}.${name}`;
    // Deploying over an existing contract panics simnet's VM: refuse it first, as a node does.
    if (this.deployedAt.has(contractId)) throw new DevnetCallError(`ContractAlreadyExists(${contractId})`);
    const version =
      tx === undefined ? DEFAULT_CLARITY_VERSION : clarityVersionFor(this.epoch, clarityVersion);
    const response = this.apply({ kind: 'deploy', name, source, sender, tx, clarityVersion: version });
    const height = this.tipHeight;
    // Recorded at once, so that a second deployment of it is refused while its ABI is derived.
    this.sources.set(contractId, source);
    this.deployedAt.set(contractId, height);
    const listed = this.main.getContractsInterfaces() as unknown as Map<string, ContractInterface>;
    for (const [id, iface] of listed) this.interfaces.set(id, iface);
    if (!this.interfaces.has(contractId)) {
      const derived = await this.derivedInterface({ name, source, sender, clarityVersion: version }, height);
      if (!derived) throw new Error(`deploying ${contractId}: no contract interface`);
      this.interfaces.set(contractId, derived);
    }
    return this.outcome(response);
  }

  /**
   * Simnet lists no interface (nor source) for a contract whose last top-level form evaluates
   * to none, such as one ending in a define-data-var, though the VM deployed it. Its interface
   * is derived on the scratch session as of the block before (session.ts, interfaceOf).
   */
  private derivedInterface(
    deployment: { name: string; source: string; sender: string; clarityVersion: number },
    height: number,
  ): Promise<ContractInterface | undefined> {
    return this.probe(height - 1, (simnet) => interfaceOf(simnet, deployment));
  }

  /** Runs a probe (session.ts) on the scratch session as of `height`; the session is rebuilt after. */
  private probe<T>(height: number, fn: (simnet: Simnet) => T): Promise<T> {
    return this.withScratch(height, (scratch) => {
      scratch.dirty = true;
      try {
        return fn(scratch.simnet);
      } catch (error) {
        if (isVmPanic(error)) scratch.poisoned = true;
        throw error;
      }
    });
  }

  /** The nonce the next transaction of `address` must carry. */
  nonceOf(address: string): number {
    return this.nonces.get(address) ?? 0;
  }

  /** The uSTX balance of a principal at the tip. */
  stxBalance(principal: string): bigint {
    return this.main.getAssetsMap().get('STX')?.get(principal) ?? 0n;
  }

  /** A deployed contract's source and the height of the block that published it. */
  contractSource(contractId: string): { source: string; publishHeight: number } | undefined {
    const publishHeight = this.deployedAt.get(contractId);
    const source = this.sources.get(contractId);
    return source === undefined || publishHeight === undefined ? undefined : { source, publishHeight };
  }

  /** A data var's value at the tip (0x + serialized), or undefined if the contract has no such var. */
  dataVar(contractId: string, name: string): string | undefined {
    if (!this.hasVariable(contractId, name, 'variable')) return undefined;
    return toHex(quietly(() => this.main.getDataVar(contractId, name)) as ClarityValue);
  }

  /**
   * A map entry at the tip as a node answers it: `(some value)` or `none` (0x09), serialized;
   * undefined if the contract has no such map.
   */
  mapEntry(contractId: string, map: string, key: ClarityValue): string | undefined {
    const maps = this.contractInterface(contractId)?.maps as ReadonlyArray<{ name: string }> | undefined;
    if (!maps?.some((m) => m.name === map)) return undefined;
    try {
      // Simnet answers the (some ...) a node serializes, and throws for an absent key.
      return toHex(quietly(() => this.main.getMapEntry(contractId, map, key as never)) as ClarityValue);
    } catch {
      return '0x09';
    }
  }

  /** A constant's value (0x + serialized), or undefined if the contract defines no such constant. */
  async constantValue(contractId: string, name: string): Promise<string | undefined> {
    if (!this.hasVariable(contractId, name, 'constant')) return undefined;
    let values = this.constants.get(contractId);
    if (!values) {
      values = this.evaluateConstants(contractId);
      this.constants.set(contractId, values);
      values.catch(() => this.constants.delete(contractId));
    }
    return (await values).get(name);
  }

  private hasVariable(contractId: string, name: string, access: 'constant' | 'variable'): boolean {
    const variables = this.contractInterface(contractId)?.variables as
      | ReadonlyArray<{ name: string; access: string }>
      | undefined;
    return variables?.some((v) => v.name === name && v.access === access) ?? false;
  }

  /**
   * Simnet reads data vars but not constants. A constant may depend on its deployment (its
   * tx-sender, its block height), so it is evaluated where it was defined: on the scratch
   * session as of the block before the deployment (session.ts, constantsOf).
   */
  private evaluateConstants(contractId: string): Promise<Map<string, string>> {
    // The last one: a deployment that failed analysis may precede the one that succeeded.
    const entry = [...this.journal]
      .reverse()
      .find(
        (e) => e.op.kind === 'deploy' && `${e.op.sender}.${e.op.name}` === contractId && e.after > e.before,
      );
    if (entry?.op.kind !== 'deploy') return Promise.resolve(new Map());
    const { name, source, sender, clarityVersion } = entry.op;
    const variables = (this.contractInterface(contractId)?.variables ?? []) as ReadonlyArray<{
      name: string;
      access: string;
    }>;
    const names = variables.filter((v) => v.access === 'constant').map((v) => v.name);
    return this.probe(entry.before, (simnet) =>
      constantsOf(simnet, { name, source, sender, clarityVersion }, names),
    );
  }

  private outcome(response: ReturnType<typeof applyOp>): PublicCallOutcome {
    if (!response) throw new Error('simnet returned no transaction result');
    return {
      result: toHex(response.result as ClarityValue),
      committed: isOkResponse(response.result as ClarityValue),
      events: withoutValues(response.events),
      tip: this.tip,
    };
  }

  /** Mines `blocks` empty blocks (each a new tenure: a burn block and a Stacks block). */
  mine(blocks = 1): BlockIdentity {
    this.assertUsable();
    this.apply({ kind: 'mine', blocks });
    return this.tip;
  }

  /** Refuses further calls and releases the wasm sessions. */
  async close(): Promise<void> {
    this.broken ??= 'the devnet is closed';
    await this.scratchQueue;
    for (const simnet of [this.main, this.scratch?.simnet]) {
      try {
        simnet?.free();
      } catch {
        // already released or poisoned
      }
    }
    this.scratch = undefined;
  }

  /** Applies a state-changing op to the main session and journals it, even if it failed. */
  private apply(op: Op) {
    const before = this.main.stacksBlockHeight;
    const burnBefore = this.main.burnBlockHeight;
    // An aborted transaction (simnet throws) made its block with no result and no events.
    let made: BlockOutcome | undefined = op.kind === 'mine' ? undefined : { committed: false, events: [] };
    try {
      const response = quietly(() => applyOp(this.main, op));
      if (response && op.kind === 'deploy') {
        // A deployment that ran is committed, whatever its last expression's value; a node
        // reports it as (ok true).
        made = { result: '0x0703', committed: true, events: response.events };
      } else if (response) {
        const result = response.result as ClarityValue;
        const committed = isOkResponse(result);
        made = { result: toHex(result), committed, events: committed ? response.events : [] };
      }
      return response;
    } catch (error) {
      if (isVmPanic(error)) this.broken = `the Clarity VM panicked: ${String(error)}`;
      if (op.kind !== 'mine') throw new DevnetCallError(nodeCauseFromSimnetError(error));
      throw new Error(`devnet ${op.kind} failed: ${nodeCauseFromSimnetError(error)}`);
    } finally {
      const after = this.main.stacksBlockHeight;
      const burnAfter = this.main.burnBlockHeight;
      this.journal.push({ op, before, after });
      // A transaction that made a block took its sender's nonce, whatever its result.
      if (op.kind !== 'mine' && after > before) this.nonces.set(op.sender, this.nonceOf(op.sender) + 1);
      // Mined empty blocks are one tenure each (a burn block with its Stacks block); blocks
      // of transactions join the current tenure.
      for (let height = before + 1; height <= after; height++) {
        const burn = op.kind === 'mine' ? Math.min(burnBefore + (height - before), burnAfter) : burnAfter;
        if (height === after) this.recordBlock(height, burn, op, made);
        else this.recordBlock(height, burn, { kind: 'mine', blocks: 1 });
      }
    }
  }

  /**
   * Told of every block made after start-up, with its parent, what made it and, for a
   * transaction's block, its result and events (src/devnet/observers.ts).
   */
  readonly blockMade = new Set<
    (
      block: BlockIdentity,
      parent: BlockIdentity | undefined,
      madeBy: MadeBy,
      outcome: BlockOutcome | undefined,
    ) => void
  >();

  private recordBlock(
    height: number,
    burnBlockHeight: number,
    madeBy?: MadeBy,
    outcome?: BlockOutcome,
  ): void {
    const identity = blockIdentity(height, burnBlockHeight);
    this.blocks[height] = identity;
    this.heightByIndexHash.set(identity.indexBlockHash, height);
    if (madeBy !== undefined)
      for (const listener of this.blockMade) listener(identity, this.blocks[height - 1], madeBy, outcome);
  }

  /** Wraps a read-only call: success → hex result; Clarity failure → the node's cause. */
  private guard(call: () => { result: unknown }, onPanic: (error: unknown) => void): CallReadResult {
    try {
      return { okay: true, result: toHex(call().result as ClarityValue) };
    } catch (error) {
      if (isVmPanic(error)) {
        onPanic(error);
        throw error;
      }
      return { okay: false, cause: nodeCauseFromSimnetError(error) };
    }
  }

  private assertUsable(): void {
    if (this.broken) throw new Error(`devnet unavailable: ${this.broken}`);
  }

  /** Runs `fn` on the scratch session once it holds the chain as of `height`; one at a time. */
  private withScratch<T>(height: number, fn: (scratch: Scratch) => T): Promise<T> {
    const run = this.scratchQueue.then(async () => {
      const scratch = await this.scratchAt(height);
      return fn(scratch);
    });
    this.scratchQueue = run.catch(() => undefined);
    return run;
  }

  private async scratchAt(height: number) {
    this.assertUsable();
    let scratch = this.scratch;
    if (!scratch || scratch.dirty || scratch.simnet.stacksBlockHeight > height) {
      // Re-initialising the same session keeps the wasm memory flat; a session whose VM
      // panicked is replaced.
      let simnet = scratch && !scratch.poisoned ? scratch.simnet : undefined;
      if (!simnet) {
        try {
          scratch?.simnet.free();
        } catch {
          // poisoned sessions may refuse even this
        }
        simnet = await newSession();
      }
      this.scratch = undefined;
      await bootstrap(simnet, this.epoch);
      scratch = { simnet, index: 0, dirty: false, poisoned: false };
      this.scratch = scratch;
    }
    const { simnet } = scratch;
    while (scratch.index < this.journal.length) {
      const entry = this.journal[scratch.index]!;
      if (entry.op.kind === 'mine') {
        const target = Math.min(entry.after, height);
        const current = simnet.stacksBlockHeight;
        if (target > current) quietly(() => simnet.mineEmptyBlocks(target - current));
        if (entry.after > height) break;
      } else {
        if (entry.after > height) break;
        try {
          quietly(() => applyOp(simnet, entry.op));
        } catch (error) {
          // A failed call failed on the main session as well: replaying it keeps the blocks.
          if (isVmPanic(error)) {
            scratch.poisoned = true;
            scratch.dirty = true;
            throw error;
          }
        }
      }
      scratch.index++;
    }
    if (simnet.stacksBlockHeight !== height) {
      scratch.dirty = true;
      throw new Error(`devnet replay reached height ${simnet.stacksBlockHeight}, not ${height}`);
    }
    return scratch;
  }
}
