/**
 * Another instance's event observer, followed through Redis (docs/watch.md): the blocks it
 * applied, announced with what they touched, their parent and their deploys (tip-channel.ts),
 * recorded in a block ledger of this instance's own, with a dependency analysis of its own
 * (sources through the same cached node route). An instance without an observer can then prove
 * what a block left unchanged exactly as the observer's instance does, instead of reading every
 * watched read again at every block.
 *
 * The ledger's own rules keep it safe: a lost announcement is a gap (the next block's parent is
 * not the last one recorded), which ends every proof until reads are made again.
 */
import { type ContractSourcePort, DependencyAnalyzer } from '../../clarity/analysis/index.js';
import type { Network } from '../../network.js';
import { type AppendOutcome, BlockLedger, type EntryDependencies } from '../block-ledger.js';
import type { AppliedAnnouncement } from '../tip-channel.js';

export class LedgerMirror {
  readonly ledger = new BlockLedger();
  readonly analyzer: DependencyAnalyzer;
  /** When the last block was recorded (epoch ms): an observer that went quiet is not relied on. */
  lastAppliedAt: number | undefined;

  constructor(
    readonly network: Network,
    source: ContractSourcePort,
  ) {
    this.analyzer = new DependencyAnalyzer({ source });
  }

  apply(block: AppliedAnnouncement, now: number): AppendOutcome {
    // A deploy's source is not in the announcement: what was known of the name is asked again.
    for (const id of block.deployed) this.analyzer.forget(id);
    this.lastAppliedAt = now;
    return this.ledger.append(
      {
        height: block.height,
        indexBlockHash: block.indexBlockHash,
        parentIndexBlockHash: block.parentIndexBlockHash,
        touched: block.touched,
        deployed: block.deployed,
      },
      now,
    );
  }

  /** As EventObserver.dependsOn: what a function's answers depend on. */
  async dependsOn(contractId: string, functionName?: string): Promise<EntryDependencies> {
    if (functionName === undefined) return new Set([contractId]);
    const deps = await this.analyzer.dependencies(contractId, functionName);
    return deps.volatile ? 'volatile' : deps.contracts;
  }
}
