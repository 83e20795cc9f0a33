/**
 * What one transaction of a block can change, from its bytes alone (docs/events.md): a call of
 * a named contract function, a deploy, nothing any contract's state depends on, or anything at
 * all. Pure and synchronous, so that it can run wherever a payload is read.
 *
 * - STX transfers, coinbases (all three kinds) and tenure changes write balances and block
 *   data only; those are read only by entries the analysis already calls volatile, which every
 *   block refetches. On a real chain nearly every block carries one of them: were they to touch
 *   everything, almost no proof would survive a block.
 * - A transaction the node reports as failed (`status` other than `success`: aborted by its
 *   response or by a post-condition) changed nothing but its fee and nonce: balances again. A
 *   failed deploy created no contract: its code is not learned (a failed deploy of a name
 *   that exists must not replace what the contract is known to do).
 * - A burnchain operation (stacking or a transfer through Bitcoin) reaches the observer as a
 *   transaction whose `raw_tx` is `0x00`, as does anything that cannot be decoded: their reach
 *   is unknown, so they touch everything. So does a poison-microblock report (it moves miner
 *   rewards; rare enough that precision buys nothing).
 */
import {
  addressFromVersionHash,
  addressHashModeToVersion,
  addressToString,
  deserializeTransaction,
  PayloadType,
  type StacksTransactionWire,
} from '@stacks/transactions';

export type TransactionEffect =
  | { readonly kind: 'call'; readonly contractId: string; readonly functionName: string }
  | { readonly kind: 'deploy'; readonly contractId: string; readonly source: string }
  | { readonly kind: 'none' }
  | { readonly kind: 'all'; readonly why: 'burnchain-operation' | 'undecodable' | 'other' };

/** The transaction version byte of mainnet (testnet is 0x80). */
const MAINNET_TX_VERSION = 0x00;

const NONE: TransactionEffect = { kind: 'none' };

/**
 * @param status the node's `status` of the transaction in the block, when the payload has one
 *   (`success`, `abort_by_response`, `abort_by_post_condition`).
 */
export function classifyTransaction(rawTx: string, status?: unknown): TransactionEffect {
  const hex = rawTx.startsWith('0x') || rawTx.startsWith('0X') ? rawTx.slice(2) : rawTx;
  if (hex === '00') return { kind: 'all', why: 'burnchain-operation' };
  if (typeof status === 'string' && status !== 'success') return NONE;
  let tx: StacksTransactionWire;
  try {
    tx = deserializeTransaction(hex);
  } catch {
    return { kind: 'all', why: 'undecodable' };
  }
  const payload = tx.payload;
  switch (payload.payloadType) {
    case PayloadType.ContractCall:
      return {
        kind: 'call',
        contractId: `${addressToString(payload.contractAddress)}.${payload.contractName.content}`,
        functionName: payload.functionName.content,
      };
    case PayloadType.SmartContract:
    case PayloadType.VersionedSmartContract:
      return {
        kind: 'deploy',
        contractId: `${deployerOf(tx)}.${payload.contractName.content}`,
        source: payload.codeBody.content,
      };
    case PayloadType.TokenTransfer:
    case PayloadType.Coinbase:
    case PayloadType.CoinbaseToAltRecipient:
    case PayloadType.NakamotoCoinbase:
    case PayloadType.TenureChange:
      return NONE;
    default:
      return { kind: 'all', why: 'other' };
  }
}

/** The address that signed (and so deployed) a transaction. */
function deployerOf(tx: StacksTransactionWire): string {
  const condition = tx.auth.spendingCondition;
  const network = tx.transactionVersion === MAINNET_TX_VERSION ? 'mainnet' : 'testnet';
  const version = addressHashModeToVersion(condition.hashMode, network);
  return addressToString(addressFromVersionHash(version, condition.signer));
}
