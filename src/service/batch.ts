/**
 * POST /contract-calls/batch (docs/batch.md): many read-only calls in one request,
 * each answered exactly as the single endpoint would answer it (ReadOnlyService.answer, the
 * same code path), plus its `meta`, in order.
 *
 * - One call's failure never fails another: each call is validated and answered on its own,
 *   and a failure becomes that item's error envelope.
 * - Every call is answered concurrently, so a hit is ready as soon as the cache answers and
 *   the batch takes as long as its slowest miss. Identical calls (in this batch or in
 *   concurrent requests) share one upstream call: the read-through cache coalesces identical
 *   keys.
 * - A top-level `tip` pins every call without a tip of its own: an index block hash as given,
 *   or "consistent": the current tip's hash, learned once for the batch (TipSource), so that
 *   every result describes one block.
 */
import { okJson } from '../api/envelope.js';
import { parseTip } from '../chain/block-id.js';
import { parseContractAddress } from '../clarity/index.js';
import { GatewayError, isGatewayError } from '../errors.js';
import type { Network } from '../network.js';
import type { RequestContext } from '../upstream/node-api.js';
import type { RenderedAnswer } from './answer.js';
import type { ReadOnlyRequest, ReadOnlyService } from './read-only.js';

/** One call's outcome as values: the single endpoint's answer, or what it threw. */
export type ItemOutcome = { readonly answer: RenderedAnswer } | { readonly error: unknown };

export interface BatchRequest {
  readonly calls: readonly unknown[];
  /** An index block hash, or "consistent"; "latest" or absent: every call as it says. */
  readonly tip?: string | undefined;
}

/** A block of the chain, as `data.tip` reports it. */
export interface Block {
  readonly height: number;
  /** 64 lowercase hex digits. */
  readonly indexBlockHash: string;
}

/** Where "consistent" learns the current tip: one shared GET /v2/info within CHAIN_TIP_MAX_AGE_MS. */
export interface TipSource {
  /** renew: ask /v2/info again (the block pinned to is unknown to the node: a reset, a reorg). */
  currentBlock(network: Network, opts?: { renew?: boolean }): Promise<Block>;
}

/** What the HTTP shell provides for each call: the single endpoint's validation and rendering. */
export interface CallShell {
  /**
   * The call checked as the single endpoint checks its path parameters and body, with the
   * same error texts; throws the GatewayError the single endpoint would answer.
   */
  validate(call: unknown): ReadOnlyRequest;
  /**
   * The item's JSON text: the single endpoint's envelope (an error's under a fresh, logged id)
   * with its meta, the status, Cache-Status and tip height it would have answered with.
   */
  item(outcome: ItemOutcome): string;
  /** Who the batch is for: every call waits for upstream budget as that client (fair use). */
  readonly context?: RequestContext;
}

/**
 * Deepest JSON a batch item may have: a Clarity value nests at most 32 levels, each two or three
 * JSON levels in the simplified and typed forms, inside the call object.
 */
const MAX_ITEM_DEPTH = 100;

/** Whether a parsed JSON value nests deeper than `max` (iteratively: no recursion to overflow). */
function nestedDeeperThan(value: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (depth >= max) return true;
    for (const child of Object.values(v))
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
  }
  return false;
}

/** The "URL" of a batch call's text in the prepared-call memo (the call's JSON names everything else). */
const BATCH_CALL = 'batch-call';

/** A call after validation: the request to answer, or why it cannot be answered. */
type Checked = { readonly req: ReadOnlyRequest } | { readonly error: unknown };

export class BatchService {
  constructor(
    private readonly readOnly: ReadOnlyService,
    private readonly tips: TipSource,
  ) {}

  /** The batch's answer. Whole-batch refusals (the body's shape) are the route schema's job. */
  async answer(batch: BatchRequest, shell: CallShell): Promise<RenderedAnswer> {
    const consistent = batch.tip === 'consistent';
    const given = consistent ? undefined : batchTip(batch.tip);
    const checked = batch.calls.map((call): Checked => {
      try {
        if (nestedDeeperThan(call, MAX_ITEM_DEPTH))
          throw new GatewayError(
            'VALIDATION_ERROR',
            `this call is nested deeper than any Clarity value can be (at most 32 levels); it was not read`,
            { maxDepth: 32 },
          );
        return { req: shell.validate(withContractName(call)) };
      } catch (error) {
        return { error };
      }
    });
    // Identical calls of one batch (bustCache included) share one answer: one upstream call.
    const shared = new Map<string, Promise<RenderedAnswer>>();
    // Calls with a tip of their own (and refused calls) start at once; the others when the
    // block they are pinned to is known. A batch that cannot be pinned is refused before any.
    const network = consistent ? consistentNetwork(checked) : undefined;
    const blockPromise = network === undefined ? Promise.resolve(undefined) : this.tips.currentBlock(network);
    const pinPromise = blockPromise.then((block) => block?.indexBlockHash ?? given);
    const items = checked.map((c) =>
      'error' in c || hasOwnTip(c.req)
        ? this.#item(c, undefined, shell, shared)
        : pinPromise.then((pin) => this.#item(c, pin, shell, shared)),
    );
    let block: Block | undefined;
    try {
      block = await blockPromise;
    } catch (err) {
      // No block to pin to: the batch cannot be answered as asked (the started calls finish unseen).
      void Promise.allSettled(items);
      throw err;
    }
    let results = await Promise.all(items);
    // The node no longer knows the block /v2/info named (a reset, a reorg): learn the tip once
    // more and read the affected calls again at the block it names now, even a lower one. If
    // that block is unknown too, those calls keep their 404.
    if (network !== undefined && block !== undefined && results.some((r) => r.unknownPin)) {
      let renewed: Block | undefined;
      try {
        renewed = await this.tips.currentBlock(network, { renew: true });
      } catch {
        renewed = undefined;
      }
      if (renewed !== undefined && renewed.indexBlockHash !== block.indexBlockHash) {
        const again = new Map<string, Promise<RenderedAnswer>>();
        const pin = renewed.indexBlockHash;
        results = await Promise.all(
          results.map((r, i) => (r.unknownPin ? this.#item(checked[i]!, pin, shell, again) : r)),
        );
        block = renewed;
      }
    }
    const tip = consistent ? `,"tip":${block === undefined ? 'null' : JSON.stringify(block)}` : '';
    return { body: okJson(`{"results":[${results.map((r) => r.text).join(',')}]${tip}}`) };
  }

  /** One item: the single endpoint's envelope with its meta; never throws. */
  async #item(
    checked: Checked,
    pin: string | undefined,
    shell: CallShell,
    shared: Map<string, Promise<RenderedAnswer>>,
  ): Promise<{ text: string; unknownPin: boolean }> {
    let outcome: ItemOutcome;
    let unknownPin = false;
    try {
      if ('error' in checked) throw checked.error;
      const req = pin === undefined ? checked.req : { ...checked.req, tip: pin };
      // The call's JSON text stands for the request text of the single endpoint, so a repeated
      // call skips preparation (argument parsing, serialization, hashing) like a repeated request.
      const text = JSON.stringify(req);
      let pending = shared.get(text);
      if (pending === undefined) {
        pending = this.readOnly.answer(req, { url: BATCH_CALL, body: text }, shell.context);
        shared.set(text, pending);
      }
      outcome = { answer: await pending };
    } catch (err) {
      unknownPin = pin !== undefined && isUnknownBlock(err, pin);
      outcome = { error: err };
    }
    return { text: shell.item(outcome), unknownPin };
  }
}

/**
 * The network whose current block "consistent" pins to: that of every call that passes
 * validation and carries no tip of its own. They must all be on one network (one block
 * cannot describe two chains); undefined when no call needs a block.
 */
function consistentNetwork(checked: readonly Checked[]): Network | undefined {
  const networks = new Set<Network>();
  for (const c of checked) {
    if ('error' in c || hasOwnTip(c.req)) continue;
    try {
      networks.add(parseContractAddress(c.req.contractAddress).network);
    } catch {
      // An invalid address fails its own item; it needs no block.
    }
  }
  if (networks.size > 1) {
    throw new GatewayError(
      'VALIDATION_ERROR',
      'tip "consistent" pins every call to one block of one chain, but the calls are on mainnet and testnet; send one batch per network',
      { tip: 'consistent', networks: [...networks].sort() },
    );
  }
  const [network] = networks;
  return network;
}

/** `contractName` may be given as `addr.name` in `contractAddress` (a standard address has no dot). */
export function withContractName(call: unknown): unknown {
  if (typeof call !== 'object' || call === null || Array.isArray(call)) return call;
  const { contractAddress, contractName } = call as Record<string, unknown>;
  if (contractName !== undefined || typeof contractAddress !== 'string') return call;
  const dot = contractAddress.indexOf('.');
  if (dot < 0) return call;
  return {
    ...call,
    contractAddress: contractAddress.slice(0, dot),
    contractName: contractAddress.slice(dot + 1),
  };
}

/**
 * A top-level tip other than "consistent", strictly checked before anything goes upstream: an
 * index block hash (as 64 lowercase hex digits), or undefined for "latest" or none.
 */
function batchTip(tip: unknown): string | undefined {
  try {
    return parseTip(tip);
  } catch (err) {
    throw new GatewayError(
      'VALIDATION_ERROR',
      'tip must be an index block hash (64 hex digits, optionally 0x-prefixed), "latest" or "consistent"',
      { field: 'tip', tip },
      { cause: err },
    );
  }
}

/** The node's answer that it does not know block `pin` (UPSTREAM_API_ERROR unknown-block naming the tip). */
function isUnknownBlock(err: unknown, pin: string): boolean {
  return (
    isGatewayError(err) &&
    err.code === 'UPSTREAM_API_ERROR' &&
    err.variant === 'unknown-block' &&
    err.details?.['tip'] === pin
  );
}

function hasOwnTip(req: ReadOnlyRequest): boolean {
  return req.tip !== undefined;
}
