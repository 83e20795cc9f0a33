/**
 * Where subscriptions and the count of open streams live (docs/watch.md): in memory on one
 * instance (a restart forgets them: the client gets NOT_FOUND and subscribes again), in Redis
 * for a fleet (redis-registry.ts), so that a stream reconnects to any instance and the stream
 * limits hold fleet-wide. One interface, one test suite run against both.
 */
import type { StoredSubscription } from './types.js';

export interface SubscriptionRegistry {
  /** Stores a new subscription, forgotten `ttlS` from now unless a stream keeps it. */
  create(sub: StoredSubscription, ttlS: number): Promise<void>;
  get(id: string): Promise<StoredSubscription | undefined>;
  /** Forgets it and tells every instance (onDeleted); false when there was none. */
  delete(id: string): Promise<boolean>;
  /** A stream of it is open: it does not expire while this is renewed (at least every `holdS` / 3). */
  hold(id: string, holdS: number): Promise<void>;
  /** Its last stream here closed: forgotten `ttlS` from now unless a stream opens. */
  release(id: string, ttlS: number): Promise<void>;
  /**
   * Counts one more open stream of `owner` unless it already has `max` (fleet-wide). A stream
   * that is not renewed within `leaseMs` (a crashed instance) stops counting.
   */
  openStream(owner: string, streamId: string, max: number, leaseMs: number): Promise<boolean>;
  /** Renews the leases of open streams. */
  renewStreams(streams: readonly { owner: string; streamId: string }[], leaseMs: number): Promise<void>;
  closeStream(owner: string, streamId: string): Promise<void>;
  /** Told of every deletion, on any instance. */
  onDeleted(handler: (id: string) => void): void;
  close(): Promise<void>;
}

interface Held {
  readonly sub: StoredSubscription;
  expiresAt: number;
}

export class MemoryRegistry implements SubscriptionRegistry {
  readonly #subs = new Map<string, Held>();
  readonly #streams = new Map<string, Map<string, number>>();
  readonly #handlers: ((id: string) => void)[] = [];
  readonly #now: () => number;
  #sweptAt = 0;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  async create(sub: StoredSubscription, ttlS: number): Promise<void> {
    this.#sweep();
    this.#subs.set(sub.id, { sub, expiresAt: this.#now() + ttlS * 1000 });
  }

  async get(id: string): Promise<StoredSubscription | undefined> {
    const held = this.#subs.get(id);
    if (held === undefined) return undefined;
    if (held.expiresAt <= this.#now()) {
      this.#subs.delete(id);
      return undefined;
    }
    return held.sub;
  }

  async delete(id: string): Promise<boolean> {
    const existed = (await this.get(id)) !== undefined;
    this.#subs.delete(id);
    if (existed) for (const handler of this.#handlers) handler(id);
    return existed;
  }

  async hold(id: string, holdS: number): Promise<void> {
    const held = this.#subs.get(id);
    if (held !== undefined) held.expiresAt = Math.max(held.expiresAt, this.#now() + holdS * 1000);
  }

  async release(id: string, ttlS: number): Promise<void> {
    const held = this.#subs.get(id);
    if (held !== undefined) held.expiresAt = this.#now() + ttlS * 1000;
  }

  async openStream(owner: string, streamId: string, max: number, leaseMs: number): Promise<boolean> {
    const now = this.#now();
    let open = this.#streams.get(owner);
    if (open === undefined) {
      open = new Map();
      this.#streams.set(owner, open);
    }
    for (const [id, until] of open) if (until <= now) open.delete(id);
    if (open.size >= max) return false;
    open.set(streamId, now + leaseMs);
    return true;
  }

  async renewStreams(
    streams: readonly { owner: string; streamId: string }[],
    leaseMs: number,
  ): Promise<void> {
    const until = this.#now() + leaseMs;
    for (const { owner, streamId } of streams) {
      const open = this.#streams.get(owner);
      if (open?.has(streamId)) open.set(streamId, until);
    }
  }

  async closeStream(owner: string, streamId: string): Promise<void> {
    const open = this.#streams.get(owner);
    open?.delete(streamId);
    if (open?.size === 0) this.#streams.delete(owner);
  }

  onDeleted(handler: (id: string) => void): void {
    this.#handlers.push(handler);
  }

  async close(): Promise<void> {}

  /** Expired subscriptions go when new ones come (memory stays bounded by what is live). */
  #sweep(): void {
    const now = this.#now();
    if (now - this.#sweptAt < 1000) return;
    this.#sweptAt = now;
    for (const [id, held] of this.#subs) if (held.expiresAt <= now) this.#subs.delete(id);
  }
}
