/**
 * Watched reads (docs/watch.md): subscriptions made with a key (or by a client address),
 * streamed by their unguessable id. This is the service's side: checking what is subscribed
 * to, who owns it, the stream limits, and handing open streams to the hub; the HTTP shell
 * (src/http/routes/subscriptions.ts, src/http/sse.ts) turns its results into answers and
 * Server-Sent Events.
 */
import { randomBytes } from 'node:crypto';
import { GatewayError, isGatewayError } from '../../errors.js';
import type { Network } from '../../network.js';
import type { RequestContext } from '../../upstream/node-api.js';
import { parseContractRef } from '../contract-ref.js';
import type { ReadOnlyRequest, ReadOnlyService } from '../read-only.js';
import type { SubscriptionRegistry } from './registry.js';
import type { StoredSubscription, StreamSink, WatchedRead } from './types.js';
import type { WatchConnection, WatchHub } from './watch-hub.js';

/** Who is asking: the subscription's owner when it is created. */
export interface WatchCaller {
  /** The API key's name, when the request carried a valid key. */
  readonly keyName: string | undefined;
  /** The client's address (TRUST_PROXY applied). */
  readonly clientId: string;
}

export interface WatchLimits {
  /** WATCH_MAX_READS. */
  readonly maxReads: number;
  readonly maxStreamsPerKey: number;
  readonly maxStreamsAnonymous: number;
  /** WATCH_IDLE_TTL_S. */
  readonly idleTtlS: number;
}

export interface CreatedSubscription {
  readonly id: string;
  readonly events: string;
  readonly reads: readonly { readonly index: number; readonly key: string }[];
}

/** An open stream, as the HTTP shell holds it. */
export interface OpenStream {
  /** The client went away: release what the stream holds. */
  close(): void;
}

/** How often an open stream renews its subscription and its place in the stream count. */
export const STREAM_RENEW_MS = 15_000;
/** A stream's lease: three renewals missed (a crashed instance) and it stops counting. */
const STREAM_LEASE_MS = 3 * STREAM_RENEW_MS;

export class WatchService {
  readonly #readOnly: ReadOnlyService;
  readonly #registry: SubscriptionRegistry;
  readonly #hub: WatchHub;
  readonly #limits: WatchLimits;
  /** Open streams on this instance, by subscription id (a deletion ends them). */
  readonly #open = new Map<string, Set<{ sink: StreamSink; owner: string; streamId: string }>>();
  #renewer: NodeJS.Timeout | undefined;

  constructor(readOnly: ReadOnlyService, registry: SubscriptionRegistry, hub: WatchHub, limits: WatchLimits) {
    this.#readOnly = readOnly;
    this.#registry = registry;
    this.#hub = hub;
    this.#limits = limits;
    registry.onDeleted((id) => this.#ended(id));
  }

  get limits(): WatchLimits {
    return this.#limits;
  }

  /**
   * Checks every read as the read-only endpoint checks a call (its errors, with
   * `details.index`), all of one network, and stores the subscription for `caller`. Nothing is
   * stored when any read fails. `reads` have passed the HTTP shell's own schema checks.
   */
  async create(
    reads: readonly ReadOnlyRequest[],
    caller: WatchCaller,
    rc?: RequestContext,
  ): Promise<CreatedSubscription> {
    // Which network each read is on first: a mixed subscription is refused before any ABI is asked.
    const networks = new Set<Network>();
    reads.forEach((read, index) => {
      try {
        networks.add(parseContractRef(read.contractAddress, read.contractName).network);
      } catch (err) {
        throw withIndex(err, index);
      }
    });
    if (networks.size > 1) {
      throw new GatewayError(
        'VALIDATION_ERROR',
        'the reads of one subscription must all be on one network (mainnet or testnet); make one subscription per network',
        { field: 'reads', networks: [...networks].sort() },
      );
    }
    const keys = await Promise.all(
      reads.map(async (read, index) => {
        try {
          return await this.#readOnly.check(read, rc);
        } catch (err) {
          throw withIndex(err, index);
        }
      }),
    );
    const [network] = networks as Set<Network>;
    const id = randomBytes(18).toString('base64url');
    const sub: StoredSubscription = {
      id,
      owner: ownerOf(caller),
      keyed: caller.keyName !== undefined,
      network: network!,
      reads,
    };
    await this.#registry.create(sub, this.#limits.idleTtlS);
    return {
      id,
      events: `/subscriptions/${id}/events`,
      reads: keys.map((key, index) => ({ index, key })),
    };
  }

  /** Deletes a subscription of `caller`'s (another owner's is NOT_FOUND, as a missing one). */
  async delete(id: string, caller: WatchCaller): Promise<void> {
    await this.#owned(id, caller);
    await this.#registry.delete(id);
    // The registry tells every instance, this one included (onDeleted); in memory, at once.
  }

  /**
   * Opens the event stream of a subscription: with no key, by its id alone (the id is the
   * credential: a browser's EventSource sends no headers); with one, only the owner's.
   * Counts against the owner's stream limit (429 RATE_LIMIT_EXCEEDED, scope "streams").
   */
  async open(id: string, caller: WatchCaller, sink: StreamSink, lastEventId?: string): Promise<OpenStream> {
    const sub = caller.keyName === undefined ? await this.#registry.get(id) : await this.#owned(id, caller);
    if (sub === undefined) throw notFound(id);
    const max = sub.keyed ? this.#limits.maxStreamsPerKey : this.#limits.maxStreamsAnonymous;
    const streamId = randomBytes(12).toString('base64url');
    if (!(await this.#registry.openStream(sub.owner, streamId, max, STREAM_LEASE_MS))) {
      throw new GatewayError(
        'RATE_LIMIT_EXCEEDED',
        `${sub.keyed ? 'this API key' : 'this client address'} already has ${max} open event streams (${sub.keyed ? 'WATCH_MAX_STREAMS_PER_KEY' : 'WATCH_MAX_STREAMS_ANONYMOUS'}); close one first`,
        { scope: 'streams', limit: max, retryable: true, retryAfter: 2 },
        { retryAfter: 2 },
      );
    }
    await this.#registry.hold(id, this.#holdS());
    const reads = sub.reads.map((request) => watchedRead(request, this.#readOnly));
    const entry = { sink, owner: sub.owner, streamId };
    let streams = this.#open.get(id);
    if (streams === undefined) {
      streams = new Set();
      this.#open.set(id, streams);
    }
    streams.add(entry);
    this.#startRenewing();
    const connection: WatchConnection = this.#hub.connect(sub.network, reads, sink, lastEventId);
    let closed = false;
    return {
      close: () => {
        if (closed) return;
        closed = true;
        connection.close();
        const set = this.#open.get(id);
        set?.delete(entry);
        const last = set !== undefined && set.size === 0;
        if (last) this.#open.delete(id);
        void this.#registry.closeStream(sub.owner, streamId).catch(() => {});
        if (last) void this.#registry.release(id, this.#limits.idleTtlS).catch(() => {});
      },
    };
  }

  /** Streams open on this instance (tests, shutdown). */
  get openStreams(): number {
    let n = 0;
    for (const set of this.#open.values()) n += set.size;
    return n;
  }

  /** Ends every stream here (shutdown): their clients reconnect elsewhere with Last-Event-ID. */
  close(): void {
    if (this.#renewer !== undefined) clearInterval(this.#renewer);
    this.#renewer = undefined;
    this.#hub.close();
    for (const set of [...this.#open.values()]) for (const { sink } of [...set]) sink.close();
  }

  async #owned(id: string, caller: WatchCaller): Promise<StoredSubscription> {
    const sub = await this.#registry.get(id);
    if (sub === undefined || sub.owner !== ownerOf(caller)) throw notFound(id);
    return sub;
  }

  /** A deletion (here or on another instance): its streams here get a last NOT_FOUND. */
  #ended(id: string): void {
    const streams = this.#open.get(id);
    if (streams === undefined) return;
    for (const { sink } of [...streams]) sink.end('NOT_FOUND');
  }

  /** How long an open stream keeps its subscription without a renewal. */
  #holdS(): number {
    return Math.max(this.#limits.idleTtlS, Math.ceil(STREAM_LEASE_MS / 1000));
  }

  #startRenewing(): void {
    if (this.#renewer !== undefined) return;
    this.#renewer = setInterval(() => {
      if (this.#open.size === 0) {
        clearInterval(this.#renewer);
        this.#renewer = undefined;
        return;
      }
      const streams = [...this.#open.values()].flatMap((set) => [...set]);
      void this.#registry.renewStreams(streams, STREAM_LEASE_MS).catch(() => {});
      for (const id of this.#open.keys()) void this.#registry.hold(id, this.#holdS()).catch(() => {});
    }, STREAM_RENEW_MS);
    this.#renewer.unref();
  }
}

function ownerOf(caller: WatchCaller): string {
  return caller.keyName === undefined ? `client:${caller.clientId}` : `key:${caller.keyName}`;
}

function notFound(id: string): GatewayError {
  return new GatewayError(
    'NOT_FOUND',
    `no subscription ${id.slice(0, 64)} (it was deleted, expired, or belongs to another key)`,
  );
}

/** A read's error, saying which item of `reads` it is. */
function withIndex(err: unknown, index: number): unknown {
  if (!isGatewayError(err)) return err;
  return err.rephrased(`reads[${index}]: ${err.message}`, { ...err.details, index });
}

/** A stored read as the hub watches it: the call and its latest-state cache key. */
function watchedRead(request: ReadOnlyRequest, readOnly: ReadOnlyService): WatchedRead {
  return {
    request,
    // Rendering options change the decoded value, not the call: they are part of what is shared.
    key: `${readOnly.keyOf(request)}|${request.strictJsonCompat === false ? 0 : 1}${request.preserveContainers === true ? 1 : 0}`,
    contractId: `${request.contractAddress}.${request.contractName}`,
    functionName: request.functionName,
  };
}
