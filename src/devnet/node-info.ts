/**
 * GET /v2/pox and GET /v3/tenures/info for the devnet, in a node's shapes. The devnet has no
 * stacking: its PoX parameters are fixed (those of a small regtest chain), nothing is
 * stacked, and the cycle numbers follow from the burn height. Tenures are derived from the
 * block identities: the blocks of one tenure share a burn height (blocks.ts).
 */
import type { BlockIdentity } from './blocks.js';
import type { DevnetChain } from './chain.js';

const POX_CONTRACT = 'ST000000000000000000002AMW42H.pox-4';
const FIRST_BURN_HEIGHT = 0;
const REWARD_CYCLE_LENGTH = 20;
const PREPARE_PHASE_LENGTH = 5;
const REWARD_SLOTS = 2 * (REWARD_CYCLE_LENGTH - PREPARE_PHASE_LENGTH);

function rewardCycleOf(burnHeight: number): number {
  return Math.floor((burnHeight - FIRST_BURN_HEIGHT) / REWARD_CYCLE_LENGTH);
}

/** GET /v2/pox, with the fields stacks.js (@stacks/stacking) reads. uSTX amounts are numbers, as a node writes them. */
export function poxInfo(chain: DevnetChain, totalLiquidUstx: bigint) {
  const burn = chain.burnBlockHeight;
  const cycle = rewardCycleOf(burn);
  const nextCycleStart = FIRST_BURN_HEIGHT + (cycle + 1) * REWARD_CYCLE_LENGTH;
  const prepareStart = nextCycleStart - PREPARE_PHASE_LENGTH;
  // As a node's minimum: the liquid supply shared among the reward slots, rounded up to 10,000 STX.
  const step = 10_000_000_000n;
  const threshold = Number(((totalLiquidUstx / BigInt(REWARD_SLOTS) + step - 1n) / step) * step);
  return {
    contract_id: POX_CONTRACT,
    pox_activation_threshold_ustx: Number(totalLiquidUstx / 20n),
    first_burnchain_block_height: FIRST_BURN_HEIGHT,
    current_burnchain_block_height: burn,
    prepare_phase_block_length: PREPARE_PHASE_LENGTH,
    reward_phase_block_length: REWARD_CYCLE_LENGTH - PREPARE_PHASE_LENGTH,
    reward_slots: REWARD_SLOTS,
    rejection_fraction: null,
    total_liquid_supply_ustx: Number(totalLiquidUstx),
    current_cycle: { id: cycle, min_threshold_ustx: threshold, stacked_ustx: 0, is_pox_active: false },
    next_cycle: {
      id: cycle + 1,
      min_threshold_ustx: threshold,
      min_increment_ustx: Number(totalLiquidUstx / 2000n),
      stacked_ustx: 0,
      prepare_phase_start_block_height: prepareStart,
      blocks_until_prepare_phase: prepareStart - burn,
      reward_phase_start_block_height: nextCycleStart,
      blocks_until_reward_phase: nextCycleStart - burn,
      ustx_until_pox_rejection: null,
    },
    epochs: [
      chain.epoch === '3.3'
        ? { epoch_id: 'Epoch33', start_height: 0, end_height: Number.MAX_SAFE_INTEGER, network_epoch: 14 }
        : { epoch_id: 'Epoch31', start_height: 0, end_height: Number.MAX_SAFE_INTEGER, network_epoch: 12 },
    ],
    min_amount_ustx: threshold,
    prepare_cycle_length: PREPARE_PHASE_LENGTH,
    reward_cycle_id: cycle,
    reward_cycle_length: REWARD_CYCLE_LENGTH,
    rejection_votes_left_required: null,
    next_reward_cycle_in: nextCycleStart - burn,
    contract_versions: [
      { contract_id: POX_CONTRACT, activation_burnchain_block_height: 0, first_reward_cycle_id: 0 },
    ],
  };
}

/** The first block of the tenure `block` belongs to (the lowest height sharing its burn height). */
function tenureStart(chain: DevnetChain, block: BlockIdentity): BlockIdentity {
  let start = block;
  for (let h = block.height - 1; h >= 0; h--) {
    const previous = chain.block(h);
    if (!previous || previous.burnBlockHeight !== block.burnBlockHeight) break;
    start = previous;
  }
  return start;
}

/** GET /v3/tenures/info: the tip's tenure and its parent tenure; hashes are hex without 0x. */
export function tenureInfo(chain: DevnetChain) {
  const tip = chain.tip;
  const start = tenureStart(chain, tip);
  const beforeStart = chain.block(start.height - 1);
  const parentStart = beforeStart ? tenureStart(chain, beforeStart) : start;
  return {
    consensus_hash: tip.consensusHash,
    tenure_start_block_id: start.indexBlockHash,
    parent_consensus_hash: parentStart.consensusHash,
    parent_tenure_start_block_id: parentStart.indexBlockHash,
    tip_block_id: tip.indexBlockHash,
    tip_height: tip.height,
    reward_cycle: rewardCycleOf(tip.burnBlockHeight),
  };
}
