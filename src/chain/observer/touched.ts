/**
 * What a block touched (docs/events.md): the contracts its transactions call or deploy, the
 * contracts its events name, and every contract those calls reach by literal
 * `contract-call?`. What each transaction can change is decided from its bytes
 * (transactions.ts): transfers, coinbases and tenure changes touch no contract; a
 * transaction that cannot be decoded, a burnchain operation, or a call whose reach cannot be
 * named statically touches everything.
 */
import type { DependencyAnalyzer } from '../../clarity/analysis/index.js';
import { TOUCHES_ALL, type Touched } from '../block-ledger.js';
import { classifyTransaction, type TransactionEffect } from './transactions.js';

export interface BlockContent {
  readonly transactions: readonly { readonly raw_tx: string; readonly status?: unknown }[];
  readonly events: readonly unknown[];
}

export interface BlockEffects {
  readonly touched: Touched;
  readonly deployed: readonly string[];
}

/** Event fields that name a contract (`contract_identifier`) or an asset of one (`asset_identifier`). */
const EVENT_KEYS = [
  'contract_event',
  'ft_transfer_event',
  'ft_mint_event',
  'ft_burn_event',
  'nft_transfer_event',
  'nft_mint_event',
  'nft_burn_event',
] as const;

const CONTRACT_ID = /^S[0-9A-Z]{27,40}\.[a-zA-Z]([a-zA-Z0-9]|[-_]){0,127}$/;

export function blockEffects(block: BlockContent, analyzer: DependencyAnalyzer): Promise<BlockEffects> {
  return effectsOf(
    block.transactions.map((tx) => classifyTransaction(tx.raw_tx, tx.status)),
    eventContracts(block.events),
    analyzer,
  );
}

/**
 * A block's effects from its transactions, already classified, and the contracts its events
 * name: the transactions' reach comes from the dependency analysis, in block order (a contract
 * deployed earlier in the block is known to the calls after it).
 */
export async function effectsOf(
  transactions: readonly TransactionEffect[],
  named: Iterable<string>,
  analyzer: DependencyAnalyzer,
): Promise<BlockEffects> {
  const contracts = new Set<string>(named);
  const deployed: string[] = [];
  let all = false;
  for (const tx of transactions) {
    switch (tx.kind) {
      case 'none':
        break;
      case 'all':
        all = true;
        break;
      case 'call': {
        const deps = await analyzer.dependencies(tx.contractId, tx.functionName);
        for (const id of deps.contracts) contracts.add(id);
        if (deps.dynamicCall) all = true;
        break;
      }
      case 'deploy': {
        deployed.push(tx.contractId);
        contracts.add(tx.contractId);
        try {
          analyzer.learn(tx.contractId, tx.source);
          const deps = await analyzer.deployment(tx.contractId);
          for (const id of deps.contracts) contracts.add(id);
          if (deps.dynamicCall) all = true;
        } catch {
          all = true;
        }
        break;
      }
    }
  }
  return { touched: all ? TOUCHES_ALL : { all: false, contracts }, deployed };
}

/** Contract ids named by events (`contract_identifier`, the contract part of `asset_identifier`). */
export function eventContracts(events: readonly unknown[]): Set<string> {
  const out = new Set<string>();
  for (const event of events) {
    if (typeof event !== 'object' || event === null) continue;
    for (const key of EVENT_KEYS) {
      const body = (event as Record<string, unknown>)[key];
      if (typeof body !== 'object' || body === null) continue;
      const b = body as Record<string, unknown>;
      for (const named of [b.contract_identifier, b.asset_identifier]) {
        if (typeof named !== 'string') continue;
        const id = named.split('::')[0]!;
        if (CONTRACT_ID.test(id)) out.add(id);
      }
    }
  }
  return out;
}
