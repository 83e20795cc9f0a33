/**
 * The local chain's event dispatcher (docs/events.md): every block it makes is posted as
 * POST /new_block, in the Stacks node's payload shape, to each URL of EVENT_OBSERVER_URLS,
 * as a node does for its `[[events_observer]]` entries. Posts to one observer go in block
 * order; a failed post is retried a few times, then given up (logged by the caller).
 */
import { request } from 'undici';
import type { BlockIdentity } from './blocks.js';
import { burnBlockHashOf } from './blocks.js';

export interface MadeTransaction {
  /** Serialized transaction, hex (with or without 0x). */
  readonly rawTx: string;
  /** 0x-prefixed txid; derived by the caller from the transaction. */
  readonly txid: string;
  readonly status?: 'success' | 'abort_by_response' | 'abort_by_post_condition';
  /** Hex of the serialized Clarity result. */
  readonly rawResult?: string;
}

export interface MadeBlock {
  readonly block: BlockIdentity;
  readonly parent: BlockIdentity | undefined;
  readonly transactions: readonly MadeTransaction[];
  /** Events in the node's shape (`{ txid, event_index, committed, type, contract_event: {...} }`). */
  readonly events: readonly unknown[];
}

const hex0x = (h: string) => (h.startsWith('0x') ? h : `0x${h}`);
const ZERO_HASH = `0x${'0'.repeat(64)}`;

/** The /new_block body a Stacks node would post for this block. */
export function newBlockPayload(made: MadeBlock): Record<string, unknown> {
  const { block, parent } = made;
  return {
    block_hash: hex0x(block.blockHash),
    block_height: block.height,
    burn_block_hash: hex0x(burnBlockHashOf(block.burnBlockHeight)),
    burn_block_height: block.burnBlockHeight,
    burn_block_time: Math.floor(Date.now() / 1000),
    index_block_hash: hex0x(block.indexBlockHash),
    parent_block_hash: parent === undefined ? ZERO_HASH : hex0x(parent.blockHash),
    parent_index_block_hash: parent === undefined ? ZERO_HASH : hex0x(parent.indexBlockHash),
    parent_burn_block_hash: parent === undefined ? ZERO_HASH : hex0x(burnBlockHashOf(parent.burnBlockHeight)),
    parent_burn_block_height: parent?.burnBlockHeight ?? 0,
    parent_microblock: ZERO_HASH,
    parent_microblock_sequence: 0,
    miner_txid: ZERO_HASH,
    consensus_hash: hex0x(block.consensusHash),
    transactions: made.transactions.map((tx, tx_index) => ({
      txid: tx.txid,
      tx_index,
      status: tx.status ?? 'success',
      raw_result: tx.rawResult ?? '0x0703',
      raw_tx: hex0x(tx.rawTx),
      microblock_sequence: null,
      microblock_hash: null,
      microblock_parent_hash: null,
      contract_abi: null,
      execution_cost: { read_count: 0, read_length: 0, runtime: 0, write_count: 0, write_length: 0 },
    })),
    events: made.events,
    matured_miner_rewards: [],
    anchored_cost: { read_count: 0, read_length: 0, runtime: 0, write_count: 0, write_length: 0 },
    confirmed_microblocks_cost: {
      read_count: 0,
      read_length: 0,
      runtime: 0,
      write_count: 0,
      write_length: 0,
    },
  };
}

/** EVENT_OBSERVER_URLS: comma-separated base URLs (http://host:port). */
export function observerUrls(env: Record<string, string | undefined> = process.env): string[] {
  return (env.EVENT_OBSERVER_URLS ?? '')
    .split(',')
    .map((u) => u.trim())
    .filter((u) => u !== '');
}

export interface EventDispatcherOptions {
  readonly urls: readonly string[];
  /** Attempts per post (default 3). */
  readonly attempts?: number;
  readonly onError?: (url: string, err: unknown) => void;
}

export class EventDispatcher {
  readonly #urls: readonly string[];
  readonly #attempts: number;
  readonly #onError: (url: string, err: unknown) => void;
  /** Per observer, the chain of posts (block order). */
  readonly #queues = new Map<string, Promise<void>>();

  constructor(options: EventDispatcherOptions) {
    this.#urls = options.urls;
    this.#attempts = Math.max(1, options.attempts ?? 3);
    this.#onError = options.onError ?? (() => {});
  }

  /** Posts the block to every observer; resolves once each has answered or been given up. */
  dispatch(made: MadeBlock): Promise<void> {
    const body = JSON.stringify(newBlockPayload(made));
    return Promise.all(
      this.#urls.map((url) => {
        const next = (this.#queues.get(url) ?? Promise.resolve()).then(() => this.#post(url, body));
        this.#queues.set(url, next);
        return next;
      }),
    ).then(() => undefined);
  }

  async #post(url: string, body: string): Promise<void> {
    const target = new URL('/new_block', url);
    for (let attempt = 1; ; attempt++) {
      try {
        const res = await request(target, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        });
        await res.body.dump();
        if (res.statusCode === 200) return;
        throw new Error(`HTTP ${res.statusCode}`);
      } catch (err) {
        if (attempt >= this.#attempts) {
          this.#onError(url, err);
          return;
        }
      }
    }
  }
}
