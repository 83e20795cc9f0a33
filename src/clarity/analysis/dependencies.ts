/**
 * Transitive dependencies of contract functions (docs/events.md): every contract a function
 * reaches by literal `contract-call?`, through its own private functions and into the called
 * contracts' functions, and whether anything on the way reads the chain's context or calls a
 * contract it cannot name (then the function is volatile: no block can be proven not to
 * change it). Boot contracts are volatile whatever their code: the node writes their state. Sources come through an injected port; each contract's analysis is memoised
 * (a contract's code never changes once deployed), and a source that could not be fetched is
 * asked again next time.
 */
import { LRUCache } from 'lru-cache';
import {
  analyzeContract,
  type ContractAnalysis,
  type LocalFunction,
  TOP_LEVEL,
} from './contract-analysis.js';

/** The source of a deployed contract (GET /v2/contracts/source behind the cache). */
export type ContractSourcePort = (contractId: string) => Promise<string>;

export interface Dependencies {
  /** Every contract reached, the function's own included. */
  readonly contracts: ReadonlySet<string>;
  /** Something reached reads the chain's context (heights, balances, block info). */
  readonly readsContext: boolean;
  /** Something reached calls a contract not nameable statically, or could not be analysed. */
  readonly dynamicCall: boolean;
  /** readsContext || dynamicCall: only the plain block rule applies. */
  readonly volatile: boolean;
}

/** The addresses of the boot contracts (pox-4, signers, ...), mainnet and testnet. */
const BOOT_ADDRESSES: ReadonlySet<string> = new Set([
  'SP000000000000000000002Q6VF78',
  'ST000000000000000000002AMW42H',
]);

export function isBootContract(contractId: string): boolean {
  return BOOT_ADDRESSES.has(contractId.slice(0, contractId.indexOf('.')));
}

/** Deploys remembered by learnedSince: more than one block's worth of deploys on any chain. */
const LEARNED_REMEMBERED = 4096;

export interface DependencyAnalyzerOptions {
  readonly source: ContractSourcePort;
  /** Contracts whose analysis is kept (default 10,000). */
  readonly maxContracts?: number;
}

interface Acc {
  contracts: Set<string>;
  readsContext: boolean;
  dynamicCall: boolean;
  incomplete: boolean;
}

export class DependencyAnalyzer {
  readonly #source: ContractSourcePort;
  readonly #analyses: LRUCache<string, Promise<ContractAnalysis>>;
  /** Complete answers per `contract::function` (none of whose sources failed to come). */
  readonly #answers: LRUCache<string, Dependencies>;
  #version = 0;
  /** The contracts learned, in order, the last LEARNED_REMEMBERED (learnedSince). */
  readonly #learned: string[] = [];

  constructor(options: DependencyAnalyzerOptions) {
    this.#source = options.source;
    this.#analyses = new LRUCache({ max: options.maxContracts ?? 10_000 });
    this.#answers = new LRUCache({ max: (options.maxContracts ?? 10_000) * 4 });
  }

  /** A contract's own analysis (fetched once; a failed fetch or unreadable source is not kept). */
  analysis(contractId: string): Promise<ContractAnalysis> {
    let pending = this.#analyses.get(contractId);
    if (pending === undefined) {
      pending = this.#source(contractId).then((src) => analyzeContract(contractId, src));
      this.#analyses.set(contractId, pending);
      pending.catch(() => {
        if (this.#analyses.get(contractId) === pending) this.#analyses.delete(contractId);
      });
    }
    return pending;
  }

  /**
   * Moves each time a deploy is learned: an answer given before may no longer hold (a function
   * that found its contract missing, or a contract deployed again under a name whose first
   * deploy failed). Whoever keeps answers of its own drops them when it moves.
   */
  get version(): number {
    return this.#version;
  }

  /**
   * The contracts learned after `version` (each deploy moves the version by one), or undefined
   * when that is further back than is remembered: then anything may have changed.
   */
  learnedSince(version: number): readonly string[] | undefined {
    const behind = this.#version - version;
    if (behind <= 0) return [];
    if (behind > this.#learned.length) return undefined;
    return this.#learned.slice(this.#learned.length - behind);
  }

  /** Learns a contract from source already at hand (a successful deploy transaction's code). */
  learn(contractId: string, source: string): ContractAnalysis {
    const analysis = analyzeContract(contractId, source);
    // Answers that found it missing (before its deployment) no longer hold.
    this.#version++;
    this.#learned.push(contractId);
    if (this.#learned.length > LEARNED_REMEMBERED)
      this.#learned.splice(0, this.#learned.length - LEARNED_REMEMBERED);
    this.#answers.clear();
    this.#analyses.set(contractId, Promise.resolve(analysis));
    return analysis;
  }

  /**
   * A contract was deployed whose source is not at hand (another instance's observer saw the
   * deploy): what is known of it is dropped, and answers that depended on it no longer hold.
   */
  forget(contractId: string): void {
    this.#version++;
    this.#learned.push(contractId);
    if (this.#learned.length > LEARNED_REMEMBERED)
      this.#learned.splice(0, this.#learned.length - LEARNED_REMEMBERED);
    this.#answers.clear();
    this.#analyses.delete(contractId);
  }

  /**
   * What function `functionName` of `contractId` depends on. A function the contract does not
   * define, or a contract that cannot be fetched or read, counts as a call not nameable
   * statically (volatile): nothing can be proven about it.
   */
  async dependencies(contractId: string, functionName: string): Promise<Dependencies> {
    const key = `${contractId}::${functionName}`;
    const known = this.#answers.get(key);
    if (known !== undefined) return known;
    const acc: Acc = {
      contracts: new Set<string>(),
      readsContext: false,
      dynamicCall: false,
      incomplete: false,
    };
    await this.#reach(contractId, functionName, acc, new Set());
    const answer: Dependencies = {
      contracts: acc.contracts,
      readsContext: acc.readsContext,
      dynamicCall: acc.dynamicCall,
      volatile: acc.readsContext || acc.dynamicCall,
    };
    // A source that could not be had is asked again next time: such an answer is not kept.
    if (!acc.incomplete) this.#answers.set(key, answer);
    return answer;
  }

  /** Dependencies of a deployment's own code (its constants, initial values, top-level calls). */
  deployment(contractId: string): Promise<Dependencies> {
    return this.dependencies(contractId, TOP_LEVEL);
  }

  async #reach(contractId: string, functionName: string, acc: Acc, seen: Set<string>): Promise<void> {
    const key = `${contractId}::${functionName}`;
    if (seen.has(key)) return;
    seen.add(key);
    acc.contracts.add(contractId);
    // The node writes boot contracts' state itself at reward-cycle boundaries (unlocks, signer
    // sets), with no transaction: whatever reaches one is volatile, whatever its code says.
    if (isBootContract(contractId)) {
      acc.readsContext = true;
      return;
    }
    let analysis: ContractAnalysis;
    try {
      analysis = await this.analysis(contractId);
    } catch {
      acc.dynamicCall = true;
      acc.incomplete = true;
      return;
    }
    const fn: LocalFunction | undefined = analysis.functions.get(functionName);
    if (fn === undefined) {
      acc.dynamicCall = true;
      return;
    }
    if (fn.readsContext) acc.readsContext = true;
    if (fn.dynamicCall) acc.dynamicCall = true;
    for (const name of fn.internal) await this.#reach(contractId, name, acc, seen);
    for (const call of fn.external) await this.#reach(call.contractId, call.functionName, acc, seen);
  }
}
