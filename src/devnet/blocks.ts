/**
 * Block identities for the devnet. Simnet numbers blocks but does not expose the hashes a
 * node reports in /v2/info, so they are derived deterministically here: the block hash from
 * the Stacks height, the consensus hash from the burn height (all Stacks blocks of one tenure
 * share it, as on a real Nakamoto chain), and the index block hash from both exactly as a
 * node computes a StacksBlockId: SHA-512/256(block hash ‖ consensus hash). The same height
 * always gets the same hashes, across restarts too.
 */
import { createHash } from 'node:crypto';

export interface BlockIdentity {
  /** Stacks block height. */
  readonly height: number;
  readonly burnBlockHeight: number;
  /** 32-byte block header hash, hex without 0x (as /v2/info's `stacks_tip`). */
  readonly blockHash: string;
  /** 20-byte consensus hash, hex without 0x (as `stacks_tip_consensus_hash`). */
  readonly consensusHash: string;
  /** 32-byte index block hash (StacksBlockId), hex without 0x: what `?tip=` takes. */
  readonly indexBlockHash: string;
}

function sha256(label: string): Buffer {
  return createHash('sha256').update(label).digest();
}

export function consensusHashOf(burnBlockHeight: number): Buffer {
  return sha256(`clarity-cache-devnet/consensus/${burnBlockHeight}`).subarray(0, 20);
}

export function blockIdentity(height: number, burnBlockHeight: number): BlockIdentity {
  const blockHash = sha256(`clarity-cache-devnet/stacks-block/${height}`);
  const consensusHash = consensusHashOf(burnBlockHeight);
  const indexBlockHash = createHash('sha512-256').update(blockHash).update(consensusHash).digest();
  return {
    height,
    burnBlockHeight,
    blockHash: blockHash.toString('hex'),
    consensusHash: consensusHash.toString('hex'),
    indexBlockHash: indexBlockHash.toString('hex'),
  };
}

/** The burn block header hash reported for a burn height (hex without 0x). */
export function burnBlockHashOf(burnBlockHeight: number): string {
  return sha256(`clarity-cache-devnet/burn-block/${burnBlockHeight}`).toString('hex');
}
