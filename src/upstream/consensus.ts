/**
 * Attested answers (docs/consensus.md): under UPSTREAM_CONSENSUS_<NETWORK> = k/n, a request that
 * fills a cache entry is asked of up to n upstreams at one pinned block, and its answer is used
 * only when k of them return the same status and body bytes.
 *
 * - The vote is pinned: the gateway fixes a block first (its newest known index block hash) and
 *   every participant is asked with `?tip=` of it, so honest nodes at different heights agree,
 *   and a disagreement proves a wrong or lagging node. A read with its own `tip` is voted there.
 *   When too few participants know the block, the tip is learned once more and the vote is
 *   held again at the new block.
 * - Participants are chosen as any attempt is (pool.ts, those sitting out left out), each after
 *   its own budget token, one exchange each (no retry, no hedge). One that does not vote (a
 *   transient failure, a timeout, an implausible tip, "Chain tip not found") is replaced by the
 *   next eligible upstream while any is left. The answer is decided as soon as k agree; the
 *   others' answers still count for strikes when they come.
 * - No k agree: UPSTREAM_DISPUTE (502, retryable), with the participants' statuses and the
 *   SHA-256 of their bodies, never a byte of any answer. Fewer than k votes possible:
 *   UPSTREAM_CONSENSUS_LOW says whether that is the same error (reason "low participation")
 *   or the unique most-voted answer, kept with its count.
 * - An upstream on the losing side of a decided vote gets a strike (strikes.ts).
 */
import { createHash } from 'node:crypto';
import { GatewayError } from '../errors.js';
import type { Network } from '../network.js';
import type { Attempts, Exchanged } from './attempts.js';
import type { RequestContext } from './node-api.js';
import { describe, type StatusCheck, type SuccessCheck, type Target } from './outcomes.js';
import type { Upstream, UpstreamPool } from './pool.js';
import type { Strikes } from './strikes.js';
import type { OutgoingBody } from './transport.js';

/** A block a vote is held at. */
export interface PinnedBlock {
  readonly height: number;
  /** 64 lowercase hex digits. */
  readonly indexBlockHash: string;
}

export interface ConsensusRule {
  readonly k: number;
  readonly n: number;
}

export type VoteOutcome = 'agreed' | 'disputed' | 'low';

/** One participant as a dispute, a log line and the metrics show it. */
export interface Participant {
  readonly id: string;
  /** The HTTP status it answered; null when no answer came. */
  readonly status: number | null;
  /** SHA-256 of its body bytes, lowercase hex; null when it did not vote. */
  readonly sha256: string | null;
}

/** What the dispute log records of the read (never its values). */
export interface VotedRead {
  readonly route: string;
  readonly contract?: string | undefined;
  readonly function?: string | undefined;
  readonly argsSha256?: string | undefined;
}

/** One line of UPSTREAM_CONSENSUS_LOG. */
export interface VoteRecord {
  readonly time: string;
  readonly network: Network;
  readonly outcome: VoteOutcome;
  readonly read: VotedRead;
  readonly block: { readonly height: number | null; readonly indexBlockHash: string };
  readonly participants: readonly Participant[];
}

export interface ConsensusOptions {
  readonly pool: UpstreamPool;
  readonly attempts: Attempts;
  readonly rules: Readonly<Record<Network, ConsensusRule>>;
  /** UPSTREAM_CONSENSUS_LOW. */
  readonly low: 'error' | 'accept';
  readonly strikes: Strikes;
  /** Told of every vote held (metrics). */
  readonly onVote?: ((network: Network, outcome: VoteOutcome) => void) | undefined;
  /** Told of every strike given (metrics). */
  readonly onStrike?: ((upstream: Upstream) => void) | undefined;
  /** Told of every vote that was disputed, low, or decided against a dissenter (the log). */
  readonly onRecord?: ((record: VoteRecord) => void) | undefined;
}

/** Where a vote is held and how its participants' answers are read. */
export interface VoteRequest<T> {
  readonly target: Target;
  readonly body: OutgoingBody | undefined;
  readonly onSuccess: SuccessCheck<T>;
  readonly onSpecialStatus: StatusCheck<T> | undefined;
  readonly read: VotedRead;
  /** The read's own block (`?tip=`), when the client named one. */
  readonly tip?: string | undefined;
  readonly context?: RequestContext | undefined;
  readonly budgetWaitMs?: number | undefined;
}

/** A decided vote: the answer k (or, accepted under low participation, fewer) gave. */
export interface Voted<T> {
  readonly value: T;
  readonly upstream: Upstream;
  readonly tipHeight: number | undefined;
  /** The participants whose bytes are served. */
  readonly votes: number;
}

/** A participant's exchange, read as a vote (or as why it is none). */
interface Cast<T> {
  readonly upstream: Upstream;
  readonly exchanged: Exchanged<T> | undefined;
  /** status + body, when it voted. */
  readonly ballot: string | undefined;
  readonly sha256: string | null;
  /** It answered that it does not know the block. */
  readonly unknownBlock: boolean;
  /** Why it did not vote, as its own error. */
  readonly error: GatewayError | undefined;
}

interface BallotResult<T> {
  /** The group of identical votes that reached k, if any. */
  readonly winners: readonly Cast<T>[] | undefined;
  /** Every cast so far (all of them when undecided). */
  readonly casts: readonly Cast<T>[];
  /** Resolves with every cast once the last participant answered (strikes, the log). */
  readonly settled: Promise<readonly Cast<T>[]>;
  /** Why no more participant could be asked (no budget token in time, ...). */
  readonly acquireError: unknown;
}

/** The node's answer for a block it never processed (docs/upstreams.md). */
const TIP_NOT_FOUND = /chain tip not found/i;

export class Consensus {
  readonly #o: ConsensusOptions;
  /**
   * The block a vote is held at: the tracker's newest known index block hash; with `from`, the
   * tip that upstream's /v2/info names (one that did not know the block first pinned). Bound
   * once the chain tracker exists.
   */
  pin: ((network: Network, from?: Upstream) => Promise<PinnedBlock>) | undefined;
  /** The height of a block the gateway has seen named, for a client's own `tip`. */
  heightOf: ((indexBlockHash: string) => number | undefined) | undefined;

  constructor(options: ConsensusOptions) {
    this.#o = options;
    for (const u of options.pool.upstreams()) options.strikes.watch(u.id);
    options.pool.sittingOut = (u) => options.strikes.sittingOut(u.id);
  }

  /** Whether requests of this network are voted on (k/n other than 1/1). */
  active(network: Network): boolean {
    const rule = this.#o.rules[network];
    return rule.n > 1;
  }

  /** The rule of a network (k of n). */
  rule(network: Network): ConsensusRule {
    return this.#o.rules[network];
  }

  async vote<T>(req: VoteRequest<T>): Promise<Voted<T>> {
    const network = req.target.network;
    const { k, n } = this.#o.rules[network];
    const clientTip = req.tip;
    let block: { readonly height: number | undefined; readonly indexBlockHash: string } =
      clientTip === undefined
        ? await this.#pin(network)
        : { height: this.heightOf?.(clientTip.toLowerCase().replace(/^0x/, '')), indexBlockHash: clientTip };
    for (let round = 0; ; round++) {
      const target: Target =
        clientTip === undefined
          ? { ...req.target, path: pinnedPath(req.target.path, block.indexBlockHash) }
          : req.target;
      const result = await this.#ballot(req, target, k, n);
      const pinnedHeight = block.height ?? null;
      if (result.winners !== undefined) {
        this.#o.onVote?.(network, 'agreed');
        const winners = result.winners;
        const first = winners[0]!;
        void result.settled.then((casts) => this.#afterDecided(network, req.read, block, winners, casts));
        return this.#answer(first, winners.length, clientTip === undefined ? block.height : undefined);
      }
      const casts = result.casts;
      const votes = casts.filter((c) => c.ballot !== undefined).length;
      const unknown = casts.filter((c) => c.unknownBlock).length;
      if (clientTip === undefined && round === 0 && unknown > 0 && votes < k) {
        // Too few know the block (the one that named it is ahead of the others, or on a fork
        // they never saw): learn the tip once more from one that did not know it, and vote
        // there, a block the others hold too.
        const from = casts.find((c) => c.unknownBlock)!.upstream;
        const again = await this.#pin(network, from).catch(() => undefined);
        if (again !== undefined && again.indexBlockHash !== block.indexBlockHash) {
          block = again;
          continue;
        }
      }
      const participants = casts.map(participantOf);
      const record = (outcome: VoteOutcome): void => {
        this.#o.onVote?.(network, outcome);
        this.#record(network, outcome, req.read, pinnedHeight, block.indexBlockHash, participants);
      };
      if (votes < k) {
        if (votes === 0) {
          // Nobody voted: what the participants failed with is the answer (a timeout, the
          // budget, an unknown block of the client's own tip), as without consensus.
          const own = ownError(casts, result.acquireError, clientTip !== undefined);
          if (own !== undefined) {
            record('low');
            throw own;
          }
        }
        if (this.#o.low === 'accept') {
          const top = mostVoted(casts);
          if (top !== undefined) {
            record('low');
            return this.#answer(top[0]!, top.length, clientTip === undefined ? block.height : undefined);
          }
        }
        record('low');
        throw disputeError(
          req.target,
          'low participation',
          k,
          n,
          pinnedHeight,
          block.indexBlockHash,
          participants,
        );
      }
      record('disputed');
      throw disputeError(req.target, 'disputed', k, n, pinnedHeight, block.indexBlockHash, participants);
    }
  }

  /** The winners' answer: the first one's value, or its definite refusal, with the count. */
  #answer<T>(first: Cast<T>, votes: number, pinnedHeight: number | undefined): Voted<T> {
    const verdict = first.exchanged!.verdict;
    if (verdict.type === 'final') {
      const err = verdict.error;
      throw err.rephrased(err.message, err.details, { votes });
    }
    if (verdict.type !== 'ok') throw new Error('a vote was cast without a definite answer');
    return {
      value: verdict.value,
      upstream: first.upstream,
      tipHeight: pinnedHeight ?? first.exchanged!.tipHeight,
      votes,
    };
  }

  async #pin(network: Network, from?: Upstream): Promise<PinnedBlock> {
    if (this.pin === undefined) throw new Error('attested answers need the chain tracker (Consensus.pin)');
    return this.pin(network, from);
  }

  /**
   * Ask participants until k agree, or every one that could be asked answered. Up to n at once;
   * one that does not vote is replaced while an eligible upstream is left.
   */
  #ballot<T>(req: VoteRequest<T>, target: Target, k: number, n: number): Promise<BallotResult<T>> {
    const { pool, attempts } = this.#o;
    const network = target.network;
    const context = req.context;
    const asked = new Set<Upstream>();
    const casts: Cast<T>[] = [];
    const groups = new Map<string, Cast<T>[]>();
    let pending = 0;
    let voted = 0;
    let filling = false;
    let refill = false;
    let winners: Cast<T>[] | undefined;
    let acquireError: unknown;
    let resolveSettled!: (casts: readonly Cast<T>[]) => void;
    const settled = new Promise<readonly Cast<T>[]>((resolve) => {
      resolveSettled = resolve;
    });

    return new Promise<BallotResult<T>>((resolve) => {
      let answered = false;
      const answer = (): void => {
        if (answered) return;
        answered = true;
        resolve({ winners, casts: [...casts], settled, acquireError });
      };
      const check = (): void => {
        if (pending > 0 || filling) return;
        resolveSettled(casts);
        answer();
      };
      const settle = (upstream: Upstream, exchanged: Exchanged<T> | undefined, thrown: unknown): void => {
        pending -= 1;
        const cast = castOf(upstream, exchanged, thrown);
        casts.push(cast);
        if (cast.ballot !== undefined) {
          voted += 1;
          const group = groups.get(cast.ballot) ?? [];
          group.push(cast);
          groups.set(cast.ballot, group);
          if (winners === undefined && group.length >= k) {
            winners = group;
            answer();
          }
        } else if (winners === undefined) {
          void fill();
        }
        check();
      };
      const fill = async (): Promise<void> => {
        if (filling) {
          refill = true;
          return;
        }
        filling = true;
        try {
          do {
            refill = false;
            while (winners === undefined && pending + voted < n) {
              if (!pool.hasAlternative(network, { avoid: asked, latest: false })) break;
              let upstream: Upstream | undefined;
              try {
                await context?.admitUpstream?.();
                upstream = await pool.acquire(network, {
                  avoid: asked,
                  latest: false,
                  clientId: context?.clientId,
                  maxWaitMs: req.budgetWaitMs,
                  signal: context?.signal,
                });
              } catch (err) {
                acquireError = err;
                break;
              }
              if (upstream === undefined || asked.has(upstream)) break;
              asked.add(upstream);
              pending += 1;
              const chosen = upstream;
              attempts
                .exchange(chosen, target, req.body, req.onSuccess, req.onSpecialStatus, {
                  latest: false,
                  context,
                })
                .then(
                  (ex) => settle(chosen, ex, undefined),
                  (err: unknown) => settle(chosen, undefined, err),
                );
            }
          } while (refill && winners === undefined);
        } finally {
          filling = false;
        }
        check();
      };
      void fill();
    });
  }

  /** Strikes for the dissenters of a decided vote, and its log line when there were any. */
  #afterDecided<T>(
    network: Network,
    read: VotedRead,
    block: { height: number | undefined; indexBlockHash: string },
    winners: readonly Cast<T>[],
    casts: readonly Cast<T>[],
  ): void {
    const winning = winners[0]!.ballot;
    const dissenters = casts.filter((c) => c.ballot !== undefined && c.ballot !== winning);
    if (dissenters.length === 0) return;
    for (const c of dissenters) {
      this.#o.onStrike?.(c.upstream);
      void this.#o.strikes.strike(c.upstream.id);
    }
    this.#record(
      network,
      'agreed',
      read,
      block.height ?? null,
      block.indexBlockHash,
      casts.map(participantOf),
    );
  }

  #record(
    network: Network,
    outcome: VoteOutcome,
    read: VotedRead,
    height: number | null,
    indexBlockHash: string,
    participants: readonly Participant[],
  ): void {
    this.#o.onRecord?.({
      time: new Date().toISOString(),
      network,
      outcome,
      read,
      block: { height, indexBlockHash },
      participants,
    });
  }
}

/** A participant's exchange as a vote: a definite answer votes; anything else does not. */
function castOf<T>(upstream: Upstream, exchanged: Exchanged<T> | undefined, thrown: unknown): Cast<T> {
  const none = (error: GatewayError | undefined, unknownBlock = false): Cast<T> => ({
    upstream,
    exchanged,
    ballot: undefined,
    sha256: null,
    unknownBlock,
    error,
  });
  if (exchanged === undefined) return none(thrown instanceof GatewayError ? thrown : undefined);
  const { verdict, response } = exchanged;
  const unknownBlock =
    response !== undefined && response.status === 404 && TIP_NOT_FOUND.test(response.body.slice(0, 200));
  if (unknownBlock || (verdict.type === 'retry' && verdict.outcome === 'not-found')) {
    return none(
      verdict.type === 'retry' ? verdict.error(1) : verdict.type === 'final' ? verdict.error : undefined,
      true,
    );
  }
  // A transient failure, an answer discarded for its tip, or no response at all: no vote.
  if (verdict.type === 'retry') return none(verdict.error(1));
  if (response === undefined) return none(verdict.type === 'final' ? verdict.error : undefined);
  return {
    upstream,
    exchanged,
    ballot: `${response.status} ${response.body}`,
    sha256: createHash('sha256').update(response.body).digest('hex'),
    unknownBlock: false,
    error: undefined,
  };
}

function participantOf(cast: Cast<unknown>): Participant {
  return {
    id: cast.upstream.id,
    status: cast.exchanged?.response?.status ?? null,
    sha256: cast.sha256,
  };
}

/** The unique largest group of identical votes; undefined when none voted or two tie. */
function mostVoted<T>(casts: readonly Cast<T>[]): Cast<T>[] | undefined {
  const groups = new Map<string, Cast<T>[]>();
  for (const c of casts) {
    if (c.ballot === undefined) continue;
    const g = groups.get(c.ballot) ?? [];
    g.push(c);
    groups.set(c.ballot, g);
  }
  const sorted = [...groups.values()].sort((a, b) => b.length - a.length);
  if (sorted.length === 0) return undefined;
  if (sorted.length > 1 && sorted[1]!.length === sorted[0]!.length) return undefined;
  return sorted[0];
}

/**
 * When nobody voted: the participants' own failure (the last one's, as an attempt loop answers
 * its last attempt's), an unknown block of the client's own tip, or the budget's refusal.
 */
function ownError(
  casts: readonly Cast<unknown>[],
  acquireError: unknown,
  clientTip: boolean,
): GatewayError | undefined {
  if (clientTip && casts.length > 0 && casts.every((c) => c.unknownBlock)) {
    return casts[casts.length - 1]!.error;
  }
  const failed = casts.filter((c) => !c.unknownBlock && c.error !== undefined);
  if (failed.length > 0) return failed[failed.length - 1]!.error;
  if (casts.length === 0 && acquireError instanceof GatewayError) return acquireError;
  return undefined;
}

function disputeError(
  target: Target,
  reason: 'disputed' | 'low participation',
  k: number,
  n: number,
  height: number | null,
  indexBlockHash: string,
  participants: readonly Participant[],
): GatewayError {
  const voted = participants.filter((p) => p.sha256 !== null).length;
  const what =
    reason === 'disputed'
      ? `no ${k} of the ${voted} upstreams that answered agreed`
      : `only ${voted} upstream${voted === 1 ? '' : 's'} could vote, ${k} must agree`;
  return new GatewayError(
    'UPSTREAM_DISPUTE',
    `attested answer refused for ${describe(target)} at block ${height ?? indexBlockHash}: ${what} (see details.participants)`,
    {
      reason,
      k,
      n,
      block: { height, indexBlockHash },
      participants,
      retryable: true,
    },
  );
}

/** The path with `tip=<hash>` for the pinned block (added, or replacing one). */
export function pinnedPath(path: string, indexBlockHash: string): string {
  const q = path.indexOf('?');
  const base = q < 0 ? path : path.slice(0, q);
  const params = new URLSearchParams(q < 0 ? '' : path.slice(q + 1));
  params.set('tip', indexBlockHash);
  return `${base}?${params.toString()}`;
}

/** SHA-256 of a request body, for the dispute log (the arguments, never shown). */
export function bodySha256(body: OutgoingBody | undefined): string | undefined {
  if (body === undefined) return undefined;
  const data = typeof body === 'string' ? body : body.data;
  return createHash('sha256').update(data).digest('hex');
}
