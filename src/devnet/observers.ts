/**
 * Connects the local chain to its event observers: every block it makes is posted as
 * /new_block (event-dispatcher.ts), with a transaction describing what made it. A public call
 * is described by an unsigned contract-call transaction (signatures are not checked by
 * anyone here), so an observer sees exactly which contract and function it called. A deploy
 * made through the chain's own API has no transaction of its sender at hand: it is described
 * by an undecodable one, which an observer must take as touching everything. A transaction
 * broadcast to POST /v2/transactions is posted as it was sent, with its own txid.
 */
import { makeUnsignedContractCall, privateKeyToPublic, serializeTransaction } from '@stacks/transactions';
import type { BlockIdentity } from './blocks.js';
import type { DevnetChain, MadeBy } from './chain.js';
import type { EventDispatcher, MadeTransaction } from './event-dispatcher.js';

/** Any key: the observer reads the payload, not the signer. */
const DESCRIBING_KEY = '0000000000000000000000000000000000000000000000000000000000000001';

/** Posts every block `chain` makes to the dispatcher's observers, in order. Returns the unsubscribe. */
export function postBlocksTo(chain: DevnetChain, dispatcher: EventDispatcher): () => void {
  let queue: Promise<void> = Promise.resolve();
  const listener = (block: BlockIdentity, parent: BlockIdentity | undefined, madeBy: MadeBy): void => {
    queue = queue
      .then(async () => {
        const transactions = await describe(madeBy, block.height);
        await dispatcher.dispatch({ block, parent, transactions, events: [] });
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
