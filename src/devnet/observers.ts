/**
 * Connects the local chain to its event observers: every block it makes is posted as
 * /new_block (event-dispatcher.ts), with a transaction describing what made it. A public call
 * is described by an unsigned contract-call transaction (signatures are not checked by
 * anyone here), so an observer sees exactly which contract and function it called. A deploy
 * made through the chain's own API has no transaction of its sender at hand: it is described
 * by an undecodable one, which an observer must take as touching everything. A transaction
 * broadcast to POST /v2/transactions is posted as it was sent, with its own txid.
 *
 * The transaction carries its status and result as a node reports them (`success` for
 * `(ok ...)`, `abort_by_response` for `(err ...)`, and for a runtime abort with `(err none)`),
 * and the block its events in the node's shape: those of a committed transaction (prints as
 * `contract_event`, STX, FT and NFT transfers, mints and burns), without the decoded `value`
 * (the serialized `raw_value` is kept); a transaction that did not commit has none.
 */
import { makeUnsignedContractCall, privateKeyToPublic, serializeTransaction } from '@stacks/transactions';
import type { BlockIdentity } from './blocks.js';
import type { BlockOutcome, DevnetChain, MadeBy } from './chain.js';
import type { EventDispatcher, MadeTransaction } from './event-dispatcher.js';

/** Any key: the observer reads the payload, not the signer. */
const DESCRIBING_KEY = '0000000000000000000000000000000000000000000000000000000000000001';

/** Posts every block `chain` makes to the dispatcher's observers, in order. Returns the unsubscribe. */
export function postBlocksTo(chain: DevnetChain, dispatcher: EventDispatcher): () => void {
  let queue: Promise<void> = Promise.resolve();
  const listener = (
    block: BlockIdentity,
    parent: BlockIdentity | undefined,
    madeBy: MadeBy,
    outcome: BlockOutcome | undefined,
  ): void => {
    queue = queue
      .then(async () => {
        const described = await describe(madeBy, block.height);
        const transactions = described.map((tx) => ({ ...tx, ...statusOf(outcome) }));
        const events = described.length === 1 ? nodeEvents(outcome, described[0]!.txid) : [];
        await dispatcher.dispatch({ block, parent, transactions, events });
      })
      .catch(() => {});
  };
  chain.blockMade.add(listener);
  return () => chain.blockMade.delete(listener);
}

async function describe(madeBy: MadeBy, height: number): Promise<MadeTransaction[]> {
  const txid = `0x${height.toString(16).padStart(64, '0')}`;
  if (madeBy.kind === 'mine') return [];
  // A broadcast transaction is posted as it was sent.
  if (madeBy.tx) return [{ rawTx: madeBy.tx.rawTx, txid: madeBy.tx.txid }];
  if (madeBy.kind !== 'call') return [{ rawTx: '00', txid }];
  const [contractAddress, contractName] = madeBy.contract.split('.') as [string, string];
  const tx = await makeUnsignedContractCall({
    publicKey: privateKeyToPublic(DESCRIBING_KEY) as string,
    network: 'testnet',
    fee: 0,
    nonce: 0,
    contractAddress,
    contractName,
    functionName: madeBy.fn,
    functionArgs: [...madeBy.args],
  });
  return [{ rawTx: serializeTransaction(tx), txid }];
}

/** A transaction's status and result as a node reports them. */
function statusOf(outcome: BlockOutcome | undefined): Pick<MadeTransaction, 'status' | 'rawResult'> {
  if (outcome === undefined) return {};
  if (outcome.committed) return { status: 'success', rawResult: outcome.result };
  // A runtime error aborts the transaction; a node mines it with the result (err none).
  return { status: 'abort_by_response', rawResult: outcome.result ?? '0x0809' };
}

/** Simnet's event names that differ from a node's. */
const NODE_EVENT_TYPE: Record<string, string> = { print_event: 'contract_event' };

/** The events of a committed transaction in the node's shape: `{txid, event_index, committed, type, [type]: data}`. */
function nodeEvents(outcome: BlockOutcome | undefined, txid: string): unknown[] {
  if (outcome === undefined || !outcome.committed) return [];
  return outcome.events.map(({ event, data }, event_index) => {
    const type = NODE_EVENT_TYPE[event] ?? event;
    // `value` is simnet's decoded twin of `raw_value` (and may hold bigints): keep the hex.
    const { value: _value, ...rest } = data;
    return { txid, event_index, committed: true, type, [type]: rest };
  });
}
