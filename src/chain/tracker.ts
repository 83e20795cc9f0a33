/**
 * The gateway's knowledge of each network's chain tip, kept current on demand
 * (docs/freshness.md): what every successful upstream answer reports (observe), and, when a request
 * needs fresher knowledge than CHAIN_TIP_MAX_AGE_MS, one GET /v2/info per network shared by
 * every concurrent request (coalesced; it takes a budget token like any upstream request).
 *
 * - No idle polling: a refresh only ever starts because a request asked for the tip.
 * - Refresh ahead: a request that finds knowledge past REFRESH_AHEAD of the maximum age still
 *   uses it (from memory, no wait) and starts the refresh in the background, so that steady
 *   traffic keeps the tip current without a request ever waiting for /v2/info. Late in the
 *   age rather than early: each refresh takes a budget token (20 a minute by default), and
 *   every answer's header renews the knowledge for free in between.
 * - A failed refresh is not an error for anybody: the tip is then unknown, and block-bounded
 *   requests go upstream as if their entry were stale (whose answer's header teaches the tip).
 *   The refresh makes one attempt only (no retries): a request waiting for it has a cheaper
 *   way out than backing off.
 * - With Redis (SharedTips), what one instance learns is seen by the others, and the refresh
 *   is coalesced across instances.
 */
import { GatewayError } from '../errors.js';
import type { Network } from '../network.js';
import { INFO } from '../upstream/endpoints.js';
import type { NodeApi, UpstreamNodeInfo } from '../upstream/node-api.js';
import { indexBlockHash } from './block-id.js';
import type { SharedTips } from './shared-tips.js';
import { type ChainTip, ChainTips, possibleHeight } from './tips.js';

/** A block the gateway can pin reads to. */
export interface CurrentBlock {
  readonly height: number;
  /** 64 lowercase hex digits. */
  readonly indexBlockHash: string;
}

export type TipRefreshResult = 'ok' | 'shared' | 'failed';

/** What is known of a network's tip at one moment, for judging entries (see ChainTracker.view). */
export interface TipSnapshot {
  readonly height: number | undefined;
  readonly last: { readonly height: number; readonly expiredAt: number } | undefined;
  firstLearnedAt(height: number): number | undefined;
  plausible(height: number): boolean;
}

export interface ChainTrackerOptions {
  /** Where /v2/info goes: the raw node client (its answers are learned here, not observed twice). */
  readonly node: Pick<NodeApi, 'send' | 'infoRound'>;
  /** CHAIN_TIP_MAX_AGE_MS. */
  readonly maxAgeMs: number;
  /** CHAIN_TIP_MAX_ADVANCE: how far above the believed tip a report may be (default 30). */
  readonly maxAdvance?: number;
  readonly tips?: ChainTips;
  /** Tip knowledge shared between instances (CACHE_STORE=redis). */
  readonly shared?: SharedTips | undefined;
  /** Clock in epoch ms. */
  readonly now?: () => number;
  /** Told of every refresh and how it ended (metrics). */
  readonly onRefresh?: ((network: Network, result: TipRefreshResult) => void) | undefined;
  /** A refresh failed (logged at debug: a failure here answers nobody with an error). */
  readonly onRefreshError?: ((network: Network, err: unknown) => void) | undefined;
}

/** Fraction of CHAIN_TIP_MAX_AGE_MS after which a request refreshes the tip in the background. */
const REFRESH_AHEAD = 0.8;

/** How many upstreams the first tip's /v2/info round asks (their median is believed). */
const FIRST_TIP_UPSTREAMS = 3;

/** The /v2/info whose height is the median of those with a possible height (lower middle for two). */
function medianInfo(infos: readonly UpstreamNodeInfo[]): UpstreamNodeInfo | undefined {
  const sorted = infos
    .filter((i) => possibleHeight(i.stacks_tip_height))
    .sort((a, b) => a.stacks_tip_height - b.stacks_tip_height);
  return sorted[Math.floor((sorted.length - 1) / 2)];
}

/** Index block hashes remembered with their heights, for the height of a pinned read. */
const KNOWN_BLOCKS_LIMIT = 1024;

export class ChainTracker {
  readonly tips: ChainTips;
  readonly #node: Pick<NodeApi, 'send' | 'infoRound'>;
  readonly #maxAgeMs: number;
  readonly #shared: SharedTips | undefined;
  readonly #now: () => number;
  readonly #onRefresh: ((network: Network, result: TipRefreshResult) => void) | undefined;
  readonly #onRefreshError: ((network: Network, err: unknown) => void) | undefined;
  readonly #refreshing = new Map<Network, Promise<ChainTip | undefined>>();
  /** Heights of index block hashes learned from /v2/info (insertion order = age). */
  readonly #blocks = new Map<string, number>();
  /** Per network, the block /v2/info last described, and when (for pinning batches). */
  readonly #described = new Map<Network, { block: CurrentBlock; learnedAt: number }>();
  readonly #describedListeners: ((network: Network, block: CurrentBlock) => void)[] = [];

  constructor(options: ChainTrackerOptions) {
    this.#node = options.node;
    this.#maxAgeMs = options.maxAgeMs;
    this.#now = options.now ?? Date.now;
    this.tips = options.tips ?? new ChainTips(this.#now, options.maxAdvance);
    this.#shared = options.shared;
    this.#onRefresh = options.onRefresh;
    this.#onRefreshError = options.onRefreshError;
  }

  /**
   * A successful upstream answer reported this tip height (X-Canonical-Stacks-Tip-Height).
   * Free knowledge: learned, and shared with other instances when it moves the tip forward.
   */
  observe(network: Network, height: number | undefined): void {
    if (height === undefined) return;
    const known = this.tips.current(network);
    // The first tip believed comes from /v2/info (several upstreams' median), never from a
    // header: a header alone could be one hostile upstream's. The round starts when a request
    // first needs the tip (height()), not here: headers alone never spend a budget token.
    if (known === undefined) return;
    if (!this.tips.learn(network, { height })) return;
    if (this.#shared !== undefined && (known === undefined || height > known.height)) {
      this.#shared.publish(network, this.tips.current(network)!);
    }
  }

  /**
   * A tip another instance's event observer learned (through Redis): believed within the usual
   * bound, but never as this process's first tip, which comes from its own /v2/info.
   */
  learnFromPeer(network: Network, tip: { height: number; indexBlockHash?: string | undefined }): void {
    if (this.tips.current(network) === undefined) return;
    this.tips.learn(network, tip);
  }

  /** What is known now, however old (the height a fresh result is recorded at). */
  known(network: Network): ChainTip | undefined {
    return this.tips.current(network);
  }

  /**
   * The tip height for judging a block bound: from memory when the knowledge is at most
   * CHAIN_TIP_MAX_AGE_MS old (starting a background refresh when it is past REFRESH_AHEAD of that),
   * else after one coalesced refresh. Undefined when the tip cannot be learned: the caller
   * goes upstream. Returns a plain number on the fast path (no promise, no wait).
   */
  height(network: Network): number | undefined | Promise<number | undefined> {
    const tip = this.tips.current(network);
    if (tip !== undefined) {
      const age = this.#now() - tip.learnedAt;
      if (age <= this.#maxAgeMs) {
        if (age > this.#maxAgeMs * REFRESH_AHEAD) void this.#refresh(network);
        return tip.height;
      }
    }
    return this.#refresh(network).then((fresh) => fresh?.height);
  }

  /**
   * The current block with its index block hash (for reads that must all describe one block:
   * the batch's `"tip": "consistent"`): knowledge from /v2/info learned within
   * CHAIN_TIP_MAX_AGE_MS, else one coalesced GET /v2/info. A header alone gives no hash, so it
   * does not count. Throws the refresh's error (UPSTREAM_API_ERROR, TIMEOUT, ...) when the
   * node cannot say.
   */
  async currentBlock(network: Network, opts: { renew?: boolean } = {}): Promise<CurrentBlock> {
    // The block /v2/info last described (its body: a header alone names no block), even if a
    // header has since taught a greater height: answers read at a later block are still correct
    // for reads pinned to this one. `renew` asks /v2/info again (the pinned block was unknown).
    const described = this.#described.get(network);
    if (
      opts.renew !== true &&
      described !== undefined &&
      this.#now() - described.learnedAt <= this.#maxAgeMs
    ) {
      return described.block;
    }
    await this.#refresh(network, { needHash: true, throwOnError: true, force: opts.renew === true });
    const fresh = this.#described.get(network);
    if (fresh !== undefined) return fresh.block;
    throw new GatewayError(
      'UPSTREAM_API_ERROR',
      `the ${network} node's /v2/info names no block (no stacks_tip and consensus hash): a consistent batch cannot be pinned`,
      { retryable: true, reason: 'malformed' },
    );
  }

  /**
   * The chain as the cache's judge sees it (src/cache/judge.ts TipView, matched by shape: the
   * chain does not import the cache): the tip believed now (as height() learns it), the last
   * one believed however old with when that knowledge stopped counting, when heights were
   * first learned, and which heights may be believed.
   */
  view(network: Network): TipSnapshot | Promise<TipSnapshot> {
    const height = this.height(network);
    return height instanceof Promise
      ? height.then((h) => this.#snapshot(network, h))
      : this.#snapshot(network, height);
  }

  #snapshot(network: Network, height: number | undefined): TipSnapshot {
    const last = this.tips.current(network);
    return {
      height,
      last:
        last === undefined ? undefined : { height: last.height, expiredAt: last.learnedAt + this.#maxAgeMs },
      firstLearnedAt: (h) => this.tips.firstLearnedAt(network, h),
      plausible: (h) => this.tips.plausible(network, h),
    };
  }

  /** The height of a block named by its index block hash, when /v2/info described it. */
  heightOfBlock(indexBlockHash: string): number | undefined {
    return this.#blocks.get(indexBlockHash);
  }

  /** When this gateway first learned of a tip at or above height (start of a block-bound stale window). */
  firstLearnedAt(network: Network, height: number): number | undefined {
    return this.tips.firstLearnedAt(network, height);
  }

  /** Refreshes under way (tests, diagnostics). */
  get refreshing(): number {
    return this.#refreshing.size;
  }

  /** One refresh per network at a time; every caller shares it. */
  #refresh(
    network: Network,
    opts: { needHash?: boolean; throwOnError?: boolean; force?: boolean } = {},
  ): Promise<ChainTip | undefined> {
    let running = this.#refreshing.get(network);
    if (running === undefined) {
      const started = this.#run(network, opts.needHash === true, opts.force === true).finally(() => {
        this.#refreshing.delete(network);
      });
      running = started;
      this.#refreshing.set(network, running);
      // A background refresh has nobody waiting: its failure is reported, never unhandled.
      started.catch(() => {});
    }
    if (opts.throwOnError === true) return running;
    return running.catch(() => undefined);
  }

  async #run(network: Network, needHash: boolean, force: boolean): Promise<ChainTip | undefined> {
    const startedAt = this.#now();
    try {
      if (this.tips.current(network) === undefined && this.#node.infoRound !== undefined) {
        // The first tip: this process's own round, never another instance's word through Redis.
        const first = await this.#firstTip(network);
        this.#learnInfo(network, first);
        this.#shared?.publish(network, first);
        this.#onRefresh?.(network, 'ok');
      } else if (this.#shared !== undefined) {
        // A forced refresh takes nothing older than itself from the other instances.
        const since = force ? startedAt : startedAt - this.#maxAgeMs;
        const shared = await this.#shared.refresh(network, since, needHash, () => this.#fetchInfo(network));
        if (shared !== undefined) this.#learnShared(network, shared.tip, shared.fetchedHere);
      } else {
        this.#learnInfo(network, await this.#fetchInfo(network));
        this.#onRefresh?.(network, 'ok');
      }
      return this.tips.current(network);
    } catch (err) {
      this.#onRefresh?.(network, 'failed');
      this.#onRefreshError?.(network, err);
      throw err;
    }
  }

  /**
   * The first tip: /v2/info of up to three upstreams at once, and their median (the lower
   * middle for two). A report far above it is the implausible one, and is not learned.
   */
  async #firstTip(network: Network): Promise<ChainTip> {
    const median = medianInfo(await this.#node.infoRound!(network, FIRST_TIP_UPSTREAMS));
    if (median === undefined) {
      // Every upstream asked failed (each had its one attempt): the tip stays unknown for now.
      throw new GatewayError(
        'UPSTREAM_API_ERROR',
        `no ${network} upstream answered GET /v2/info with a chain tip`,
        { retryable: true },
      );
    }
    return this.#tipOfInfo(network, median);
  }

  /**
   * The start-up round's answers (one /v2/info of each upstream, in preference order): the
   * first tip is the median of the first three, unless a tip is already believed.
   */
  believeFirst(network: Network, infos: readonly UpstreamNodeInfo[]): void {
    if (this.tips.current(network) !== undefined) return;
    const median = medianInfo(infos.slice(0, FIRST_TIP_UPSTREAMS));
    if (median === undefined) return;
    const tip = this.#tipOfInfo(network, median);
    this.#learnInfo(network, tip);
    this.#shared?.publish(network, tip);
  }

  /** GET /v2/info as the tip it describes: one attempt, and one more on another upstream if it fails. */
  async #fetchInfo(network: Network): Promise<ChainTip> {
    const { info, tipHeight } = await this.#node.send(INFO, {
      network,
      read: 'info',
      maxAttempts: 2,
      elsewhereOnly: true,
    });
    const tip = this.#tipOfInfo(network, info);
    // The header may already be past the body's tip: that height is learned too, without hash.
    if (
      tipHeight !== undefined &&
      tipHeight > info.stacks_tip_height &&
      this.tips.current(network) !== undefined
    )
      this.tips.learn(network, { height: tipHeight });
    return tip;
  }

  /** The tip a /v2/info body describes; its block is remembered for pinned reads. */
  #tipOfInfo(network: Network, info: UpstreamNodeInfo): ChainTip {
    const hash = indexBlockHash(info.stacks_tip, info.stacks_tip_consensus_hash);
    if (hash !== undefined) {
      this.#rememberBlock(hash, info.stacks_tip_height);
      this.#describe(network, { height: info.stacks_tip_height, indexBlockHash: hash });
    }
    return { height: info.stacks_tip_height, indexBlockHash: hash, learnedAt: this.#now() };
  }

  #learnInfo(network: Network, tip: ChainTip): void {
    this.tips.learn(network, tip);
  }

  #learnShared(network: Network, tip: ChainTip, fetchedHere: boolean): void {
    if (tip.indexBlockHash !== undefined) {
      this.#rememberBlock(tip.indexBlockHash, tip.height);
      if (fetchedHere || this.tips.plausible(network, tip.height)) {
        this.#describe(network, { height: tip.height, indexBlockHash: tip.indexBlockHash });
      }
    }
    this.tips.learn(network, tip);
    this.#onRefresh?.(network, fetchedHere ? 'ok' : 'shared');
  }

  /**
   * Told of every block a node's /v2/info described (the event observer holds it as the tip
   * its first block may follow: docs/events.md).
   */
  onDescribed(listener: (network: Network, block: CurrentBlock) => void): void {
    this.#describedListeners.push(listener);
  }

  /** The block /v2/info described, whatever the tip knowledge (after a reset, a lower one). */
  #describe(network: Network, block: CurrentBlock): void {
    this.#described.set(network, { block, learnedAt: this.#now() });
    for (const listener of this.#describedListeners) listener(network, block);
  }

  #rememberBlock(hash: string, height: number): void {
    this.#blocks.delete(hash);
    this.#blocks.set(hash, height);
    if (this.#blocks.size > KNOWN_BLOCKS_LIMIT) {
      const oldest = this.#blocks.keys().next().value;
      if (oldest !== undefined) this.#blocks.delete(oldest);
    }
  }
}
