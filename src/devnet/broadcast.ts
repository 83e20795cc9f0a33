/**
 * POST /v2/transactions on the devnet: a signed transaction, as raw bytes
 * (application/octet-stream) or as {"tx": "<hex>"} (application/json, what stacks.js 7's
 * broadcastTransaction sends), runs at once in a new block of its own; observers get that
 * block with the transaction as sent.
 *
 * Answers as a node's: 200 with the txid as a JSON string (hex without 0x); 400 with
 * {"error": "transaction rejected", "reason", "reason_data"?, "txid"} for what a node's
 * mempool refuses. A transaction the VM runs and fails (a runtime error, a deployment that
 * fails analysis) still made its block and took its nonce: it is accepted, as a node mines it.
 *
 * Not checked, unlike a node: fees (none are charged) and post-conditions; a nonce ahead of
 * the account's is refused (BadNonce) rather than held in a mempool.
 */

import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import {
  AddressHashMode,
  AddressVersion,
  addressFromVersionHash,
  addressToString,
  cvToString,
  deserializeTransaction,
  PayloadType,
  type StacksTransactionWire,
  serializeTransaction,
} from '@stacks/transactions';
import {
  DevnetCallError,
  type DevnetChain,
  type PublicCallOutcome,
  type SignedTransaction,
} from './chain.js';
import { type HttpAnswer, isJsonContentType, json, readBody, text } from './http.js';

/** The devnet's chain id, as /v2/info's network_id, and transaction version: a testnet's. */
const CHAIN_ID = 0x80000000;
const TESTNET_VERSION = 0x80;

function rejected(txid: string, reason: string, reasonData?: Record<string, unknown>): HttpAnswer {
  return json(400, {
    error: 'transaction rejected',
    reason,
    ...(reasonData ? { reason_data: reasonData } : {}),
    txid,
  });
}

/** The transaction's bytes, from either body a node takes. */
async function transactionBytes(req: IncomingMessage): Promise<Buffer> {
  const body = await readBody(req);
  if (!isJsonContentType(req)) return body;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    throw text(400, 'Failed to parse JSON body');
  }
  const tx = (parsed as { tx?: unknown } | null)?.tx;
  if (typeof tx !== 'string' || !/^(?:0x)?(?:[0-9a-fA-F]{2})+$/.test(tx)) {
    throw text(400, 'Failed to parse JSON body: "tx" must be a hex-encoded transaction');
  }
  return Buffer.from(tx.replace(/^0x/i, ''), 'hex');
}

/** The origin's address; the devnet is a testnet, so testnet address versions. */
function originAddress(tx: StacksTransactionWire): string {
  const { hashMode, signer } = tx.auth.spendingCondition;
  const singleSig = hashMode === AddressHashMode.P2PKH || hashMode === AddressHashMode.P2WPKH;
  const version = singleSig ? AddressVersion.TestnetSingleSig : AddressVersion.TestnetMultiSig;
  return addressToString(addressFromVersionHash(version, signer));
}

/** A node's mempool reason for a Clarity refusal that made no block. */
function reasonOf(cause: string): string {
  if (cause.includes('NoSuchContract')) return 'NoSuchContract';
  if (cause.includes('UndefinedFunction') || cause.includes('NoSuchPublicFunction'))
    return 'NoSuchPublicFunction';
  if (cause.includes('IncorrectArgumentCount') || cause.includes('TypeError')) return 'BadFunctionArgument';
  if (cause.includes('ContractAlreadyExists')) return 'ContractAlreadyExists';
  if (cause === 'TransferRecipientIsSender') return cause;
  return 'Other';
}

export async function broadcast(
  chain: DevnetChain,
  req: IncomingMessage,
  log: (line: string) => void,
): Promise<HttpAnswer> {
  const bytes = await transactionBytes(req);
  // A txid is the SHA-512/256 of the serialized transaction, so even a malformed one has one.
  let txid = createHash('sha512-256').update(bytes).digest('hex');
  let tx: StacksTransactionWire;
  try {
    tx = deserializeTransaction(bytes);
    if (serializeTransaction(tx) !== bytes.toString('hex'))
      throw new Error('trailing bytes after the transaction');
  } catch (error) {
    return rejected(txid, 'Deserialization', { message: String(error) });
  }
  txid = tx.txid();
  if (Number(tx.transactionVersion) !== TESTNET_VERSION || tx.chainId !== CHAIN_ID) {
    return rejected(txid, 'BadTransactionVersion');
  }
  try {
    tx.verifyOrigin();
  } catch (error) {
    return rejected(txid, 'SignatureValidation', { message: String(error) });
  }
  const sender = originAddress(tx);
  const nonce = tx.auth.spendingCondition.nonce;
  const expected = chain.nonceOf(sender);
  if (nonce !== BigInt(expected)) {
    return rejected(txid, 'BadNonce', {
      expected,
      actual: Number(nonce),
      principal: sender,
      is_origin: true,
    });
  }

  const signed: SignedTransaction = { rawTx: bytes.toString('hex'), txid: `0x${txid}` };
  const heightBefore = chain.tipHeight;
  let outcome: PublicCallOutcome | undefined;
  try {
    outcome = await run(chain, tx, sender, signed);
    if (outcome === undefined)
      return rejected(txid, 'Other', { message: 'the devnet runs no such transaction' });
  } catch (error) {
    if (!(error instanceof DevnetCallError)) throw error;
    // Refused before it made a block: a node's mempool refusal.
    if (chain.tipHeight === heightBefore)
      return rejected(txid, reasonOf(error.nodeCause), { message: error.nodeCause });
    log(`devnet: transaction ${txid} from ${sender} failed at height ${chain.tipHeight}: ${error.nodeCause}`);
    return json(200, txid);
  }
  log(`devnet: transaction ${txid} from ${sender} → ${outcome.result} at height ${outcome.tip.height}`);
  return json(200, txid);
}

/** Runs the payload on the chain; undefined for kinds a mempool does not take from clients. */
async function run(
  chain: DevnetChain,
  tx: StacksTransactionWire,
  sender: string,
  signed: SignedTransaction,
): Promise<PublicCallOutcome | undefined> {
  const { payload } = tx;
  switch (payload.payloadType) {
    case PayloadType.ContractCall: {
      const contractId = `${addressToString(payload.contractAddress)}.${payload.contractName.content}`;
      return chain.callPublic(contractId, payload.functionName.content, payload.functionArgs, sender, signed);
    }
    case PayloadType.SmartContract:
      return chain.deployContract(payload.contractName.content, payload.codeBody.content, sender, signed);
    case PayloadType.VersionedSmartContract:
      return chain.deployContract(
        payload.contractName.content,
        payload.codeBody.content,
        sender,
        signed,
        payload.clarityVersion,
      );
    case PayloadType.TokenTransfer: {
      const recipient = cvToString(payload.recipient);
      if (recipient === sender) throw new DevnetCallError('TransferRecipientIsSender');
      return chain.transferStx(payload.amount, recipient, sender, signed);
    }
    default:
      return undefined;
  }
}
