/**
 * A queue served round-robin across clients and first come, first served within one client
 * (docs/upstreams.md): one client's burst of misses cannot push every other client's
 * requests behind it while the budget is short.
 *
 * Each client's items are a FIFO. shift() serves the client that was served least recently
 * (a client never served, or not for a long time, comes first; ties go to the earlier
 * arrival), which is round-robin when several clients keep items queued, and lets a newcomer go
 * next instead of behind a turn the busy client took while the newcomer was not there yet.
 * When a client's queue empties its last service is remembered (bounded), so a client cannot
 * jump the line by draining and coming back.
 */
import { GatewayError } from '../errors.js';
import type { Network } from '../network.js';
import { type Budget, budgetExhaustedError } from './budget/upstream-budget.js';

const REMEMBERED_CLIENTS = 10_000;

export class FairQueue<T> {
  /** Clients with items, in order of arrival of their current run of items. */
  readonly #byClient = new Map<string, T[]>();
  /** Service counter value of each client's last shift(), oldest first. */
  readonly #lastServed = new Map<string, number>();
  #served = 0;
  #size = 0;

  get size(): number {
    return this.#size;
  }

  /** Items of one client still queued. */
  countOf(client: string): number {
    return this.#byClient.get(client)?.length ?? 0;
  }

  push(client: string, item: T): void {
    let items = this.#byClient.get(client);
    if (items === undefined) {
      items = [];
      this.#byClient.set(client, items);
    }
    items.push(item);
    this.#size += 1;
  }

  /** The next item: the head of the least recently served client's queue. */
  shift(): T | undefined {
    let pick: string | undefined;
    let pickServed = Number.POSITIVE_INFINITY;
    for (const client of this.#byClient.keys()) {
      const served = this.#lastServed.get(client) ?? Number.NEGATIVE_INFINITY;
      if (served < pickServed) {
        pick = client;
        pickServed = served;
      }
    }
    if (pick === undefined) return undefined;
    const items = this.#byClient.get(pick)!;
    const item = items.shift()!;
    this.#size -= 1;
    if (items.length === 0) this.#byClient.delete(pick);
    this.#served += 1;
    // Re-inserted so the map stays ordered oldest service first, for the bound below.
    this.#lastServed.delete(pick);
    this.#lastServed.set(pick, this.#served);
    if (this.#lastServed.size > REMEMBERED_CLIENTS) {
      const oldest = this.#lastServed.keys().next().value;
      if (oldest !== undefined && !this.#byClient.has(oldest)) this.#lastServed.delete(oldest);
    }
    return item;
  }

  /** Take an item out wherever it is (its waiter gave up). */
  remove(client: string, item: T): boolean {
    const items = this.#byClient.get(client);
    if (items === undefined) return false;
    const i = items.indexOf(item);
    if (i < 0) return false;
    items.splice(i, 1);
    this.#size -= 1;
    if (items.length === 0) this.#byClient.delete(client);
    return true;
  }
}

/** What waiting needs of an upstream: its name, its budget, and its circuit's probe to let go of. */
export interface TokenGrantor {
  readonly id: string;
  readonly budget: Budget;
  readonly breaker: { readonly closed: boolean; releaseProbe(): void };
}

export interface TokenQueueSettings {
  /** UPSTREAM_QUEUE_TIMEOUT_MS: the longest any request waits for its token. */
  readonly queueTimeoutMs: number;
  /** UPSTREAM_MAX_WAITING_PER_CLIENT. */
  readonly maxWaitingPerClient: number;
}

/** Who waits, how long at most, and until when they still care. */
export interface TokenRequest {
  /** The client's address, for fairness and the cap; undefined = the gateway itself, never capped. */
  readonly clientId?: string | undefined;
  /** Longest wait, below the queue timeout; 0 = no turn in the queue at all. */
  readonly maxWaitMs?: number | undefined;
  /** The client went away: the waiter leaves the queue at once and takes no token. */
  readonly signal?: AbortSignal | undefined;
}

/**
 * Take one token of `upstream` within maxWaitMs (claiming its probe if its circuit is
 * half-open): true, the budget's refusal, or false when another caller holds the probe.
 */
export type TakeToken<U> = (upstream: U, maxWaitMs: number) => Promise<true | false | GatewayError>;

interface Waiter<U> {
  readonly client: string;
  readonly deadline: number;
  readonly signal: AbortSignal | undefined;
  /** The candidates when this waiter's turn comes, best first: health may have changed meanwhile. */
  readonly rank: () => readonly U[];
  resolve(upstream: U): void;
  reject(err: unknown): void;
  timer: NodeJS.Timeout | undefined;
}

const ANONYMOUS = 'anonymous';

/**
 * The requests of one network waiting for an upstream budget token (docs/upstreams.md):
 * queued in a FairQueue, served round-robin across clients, each by whichever candidate's
 * token comes first. A client may have at most UPSTREAM_MAX_WAITING_PER_CLIENT waiters;
 * beyond that, and when the turn would come later than UPSTREAM_QUEUE_TIMEOUT_MS,
 * RATE_LIMIT_EXCEEDED at once. The pool decides which upstreams are candidates; this decides
 * who waits, in which order, and for how long.
 */
export class FairTokenQueue<U extends TokenGrantor> {
  readonly #network: Network;
  readonly #settings: TokenQueueSettings;
  readonly #take: TakeToken<U>;
  readonly #waiting = new FairQueue<Waiter<U>>();
  /** Waiters per client, including the one being served. */
  readonly #perClient = new Map<string, number>();
  #serving = false;

  constructor(network: Network, settings: TokenQueueSettings, take: TakeToken<U>) {
    this.#network = network;
    this.#settings = settings;
    this.#take = take;
  }

  /** Nobody queued nor being served: a request may take a token now without jumping the line. */
  get idle(): boolean {
    return this.#waiting.size === 0 && !this.#serving;
  }

  /** Requests waiting for a token (in the queue, or being served). */
  get waiting(): number {
    let n = 0;
    for (const v of this.#perClient.values()) n += v;
    return n;
  }

  /**
   * Wait for a token of one of `candidates` (best first, as ranked now; `rank` ranks them again
   * when the turn comes). Rejects at once with RATE_LIMIT_EXCEEDED when the client has too many
   * waiting or the turn would come too late.
   */
  wait(candidates: readonly U[], request: TokenRequest, rank: () => readonly U[]): Promise<U> {
    const network = this.#network;
    const client = request.clientId ?? ANONYMOUS;
    const waiting = this.#perClient.get(client) ?? 0;
    // The cap is for clients; the gateway's own work (an admin warm-up of many ABIs) has no
    // client and is bounded by the queue timeout alone.
    const cap = this.#settings.maxWaitingPerClient;
    if (request.clientId !== undefined && waiting >= cap)
      return Promise.reject(tooManyWaiting(network, client, cap));
    const waitMs = nthTokenMs(
      candidates.map((u) => u.budget),
      this.#waiting.size + 1,
    );
    const timeoutMs = Math.min(this.#settings.queueTimeoutMs, request.maxWaitMs ?? Number.POSITIVE_INFINITY);
    // Not even a turn in the queue (maxWaitMs 0): the caller has something better than waiting.
    if (waitMs > timeoutMs || timeoutMs <= 0)
      return Promise.reject(budgetExhaustedError(labelOf(candidates, network), timeoutMs, waitMs));
    const signal = request.signal;
    if (signal?.aborted === true) return Promise.reject(clientGoneError(network));
    return new Promise<U>((resolve, reject) => {
      const waiter: Waiter<U> = {
        client,
        deadline: performance.now() + timeoutMs,
        signal,
        rank,
        resolve,
        reject,
        timer: undefined,
      };
      this.#perClient.set(client, waiting + 1);
      this.#waiting.push(client, waiter);
      waiter.timer = setTimeout(() => {
        // Newer clients' turns came first (round-robin): this one's time is up.
        if (!this.#waiting.remove(client, waiter)) return;
        this.#settle(waiter, budgetExhaustedError(network, timeoutMs, timeoutMs));
      }, timeoutMs);
      waiter.timer.unref();
      signal?.addEventListener(
        'abort',
        () => {
          if (!this.#waiting.remove(client, waiter)) return;
          this.#settle(waiter, clientGoneError(network));
        },
        { once: true },
      );
      void this.#serve();
    });
  }

  /** Reject every waiter (shutdown); the budgets are closed by their owner. */
  close(): void {
    for (let w = this.#waiting.shift(); w !== undefined; w = this.#waiting.shift()) {
      this.#settle(
        w,
        new GatewayError(
          'SERVICE_UNAVAILABLE',
          `the gateway is shutting down; upstream request queue for ${this.#network} is closed`,
          { retryable: true, reason: 'closed' },
        ),
      );
    }
  }

  /**
   * Serve waiters one at a time, round-robin across clients: each gets the candidate whose
   * token comes first, and waits for it (within its own deadline). One at a time is enough:
   * tokens accrue in the buckets meanwhile, so none is lost, and the order stays the queue's.
   */
  async #serve(): Promise<void> {
    if (this.#serving) return;
    this.#serving = true;
    const network = this.#network;
    try {
      for (let w = this.#waiting.shift(); w !== undefined; w = this.#waiting.shift()) {
        if (w.timer !== undefined) clearTimeout(w.timer);
        let served: U | undefined;
        let failure: unknown;
        try {
          const candidates = w.rank();
          const bySoonest = candidates
            .map((u, rank) => ({ u, rank, ms: estimateMs(u.budget, 1) }))
            .sort((a, b) => a.ms - b.ms || a.rank - b.rank);
          let refusal: GatewayError | undefined;
          for (const { u } of bySoonest) {
            const remaining = Math.max(0, Math.floor(w.deadline - performance.now()));
            const got = await untilGone(this.#take(u, remaining), w.signal, () => {
              u.budget.refund?.();
              // A probe claimed for this take is not going to be sent: let another claim it.
              if (!u.breaker.closed) u.breaker.releaseProbe();
            });
            if (got === GONE) {
              failure = clientGoneError(network);
              break;
            }
            if (got === true) {
              served = u;
              break;
            }
            if (got !== false) refusal ??= got;
          }
          if (served === undefined && failure === undefined) {
            failure =
              refusal ??
              budgetExhaustedError(
                labelOf(candidates, network),
                this.#settings.queueTimeoutMs,
                Math.min(...bySoonest.map((c) => c.ms)),
              );
          }
        } catch (err) {
          failure = err;
        }
        if (served !== undefined) this.#settle(w, undefined, served);
        else this.#settle(w, failure);
      }
    } finally {
      this.#serving = false;
    }
  }

  #settle(w: Waiter<U>, err: unknown, upstream?: U): void {
    if (w.timer !== undefined) clearTimeout(w.timer);
    const n = (this.#perClient.get(w.client) ?? 1) - 1;
    if (n <= 0) this.#perClient.delete(w.client);
    else this.#perClient.set(w.client, n);
    if (upstream !== undefined) w.resolve(upstream);
    else w.reject(err);
  }
}

/**
 * When the n-th token from now comes, across several budgets: merge each budget's sequence of
 * token times (waitEstimateMs(1), (2), ...) and take the n-th smallest. n is at most the
 * queue's length plus one and the budgets are few.
 */
export function nthTokenMs(budgets: readonly Budget[], n: number): number {
  if (budgets.length === 0) return Number.POSITIVE_INFINITY;
  const next = budgets.map(() => 1);
  let at = 0;
  for (let i = 0; i < n; i++) {
    let best = 0;
    let bestMs = Number.POSITIVE_INFINITY;
    budgets.forEach((b, j) => {
      const ms = estimateMs(b, next[j]!);
      if (ms < bestMs) {
        bestMs = ms;
        best = j;
      }
    });
    at = bestMs;
    next[best]! += 1;
    if (!Number.isFinite(at)) break;
  }
  return at;
}

function estimateMs(budget: Budget, tokens: number): number {
  return budget.waitEstimateMs?.(tokens) ?? 0;
}

/** Error messages name the one upstream, or the network when several could have served. */
function labelOf(candidates: readonly TokenGrantor[], network: Network): string {
  return candidates.length === 1 ? candidates[0]!.id : network;
}

function tooManyWaiting(network: Network, client: string, cap: number): GatewayError {
  return new GatewayError(
    'RATE_LIMIT_EXCEEDED',
    `too many requests of this client waiting for the ${network} upstream budget (at most ${cap})`,
    { retryAfter: 1, retryable: true, maxWaitingPerClient: cap, client },
    { retryAfter: 1 },
  );
}

const GONE = Symbol('clientGone');

/**
 * A token being taken for a waiter, or GONE as soon as the waiter's client goes away: the
 * queue then moves on at once, and the token, when it is granted after all, is given back.
 */
function untilGone<T>(
  taking: Promise<T>,
  signal: AbortSignal | undefined,
  giveBack: () => void,
): Promise<T | typeof GONE> {
  if (signal === undefined) return taking;
  if (signal.aborted) {
    void taking.then(
      (got) => got === true && giveBack(),
      () => {},
    );
    return Promise.resolve(GONE);
  }
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      void taking.then(
        (got) => got === true && giveBack(),
        () => {},
      );
      resolve(GONE);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    taking.then(
      (got) => {
        signal.removeEventListener('abort', onAbort);
        resolve(got);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}

/**
 * The client of a waiting request went away (its signal aborted): the waiter left the queue
 * without a token. Nobody reads this answer; it ends the request's work.
 */
function clientGoneError(network: Network): GatewayError {
  return new GatewayError(
    'SERVICE_UNAVAILABLE',
    `the client went away while waiting for the ${network} upstream budget; no upstream request was made`,
    { clientGone: true },
  );
}
