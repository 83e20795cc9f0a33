/**
 * What a block touched (docs/events.md): the contracts its transactions call or deploy, the
 * contracts its events name, and every contract those calls reach by literal
 * `contract-call?`. A transaction that cannot be decoded, a call that cannot be named
 * statically, a transfer, a coinbase, a tenure change or a burnchain operation touches
 * everything: they move balances and block data that context-reading entries read, or their
 * reach is unknown.
 */
import {
  addressFromVersionHash,
  addressHashModeToVersion,
  addressToString,
  deserializeTransaction,
  PayloadType,
  type StacksTransactionWire,
} from '@stacks/transactions';
import type { DependencyAnalyzer } from '../../clarity/analysis/index.js';
import { TOUCHES_ALL, type Touched } from '../block-ledger.js';

export interface BlockContent {
  readonly transactions: readonly { readonly raw_tx: string }[];
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

/** The transaction version byte of mainnet (testnet is 0x80). */
const MAINNET_TX_VERSION = 0x00;

const CONTRACT_ID = /^S[0-9A-Z]{27,40}\.[a-zA-Z]([a-zA-Z0-9]|[-_]){0,127}$/;

export async function blockEffects(block: BlockContent, analyzer: DependencyAnalyzer): Promise<BlockEffects> {
  const contracts = new Set<string>();
  const deployed: string[] = [];
  let all = false;
  for (const { raw_tx } of block.transactions) {
    const tx = decode(raw_tx);
    if (tx === undefined) {
      all = true;
      continue;
    }
    const payload = tx.payload;
    if (payload.payloadType === PayloadType.ContractCall) {
      const contractId = `${addressToString(payload.contractAddress)}.${payload.contractName.content}`;
      const deps = await analyzer.dependencies(contractId, payload.functionName.content);
      for (const id of deps.contracts) contracts.add(id);
      if (deps.dynamicCall) all = true;
    } else if (
      payload.payloadType === PayloadType.SmartContract ||
      payload.payloadType === PayloadType.VersionedSmartContract
    ) {
      const contractId = `${deployerOf(tx)}.${payload.contractName.content}`;
      deployed.push(contractId);
      contracts.add(contractId);
      try {
        analyzer.learn(contractId, payload.codeBody.content);
        const deps = await analyzer.deployment(contractId);
        for (const id of deps.contracts) contracts.add(id);
        if (deps.dynamicCall) all = true;
      } catch {
        all = true;
      }
    } else all = true;
  }
  for (const id of eventContracts(block.events)) contracts.add(id);
  return { touched: all ? TOUCHES_ALL : { all: false, contracts }, deployed };
}

function decode(rawTx: string): StacksTransactionWire | undefined {
  try {
    return deserializeTransaction(rawTx.startsWith('0x') ? rawTx.slice(2) : rawTx);
  } catch {
    return undefined;
  }
}

/** The address that signed (and so deployed) a transaction. */
function deployerOf(tx: StacksTransactionWire): string {
  const condition = tx.auth.spendingCondition;
  const network = tx.transactionVersion === MAINNET_TX_VERSION ? 'mainnet' : 'testnet';
  const version = addressHashModeToVersion(condition.hashMode, network);
  return addressToString(addressFromVersionHash(version, condition.signer));
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
