/**
 * Tips learned from the event observer, announced to every instance on one Redis
 * (docs/events.md): the instance whose node posted the block publishes it on
 * `{prefix}observer:tip`, and every other instance moves its tip at once, with no /v2/info.
 * Best effort: a lost announcement leaves an instance on its usual tip knowledge.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Network } from '../network.js';
import { KEY_PREFIX, type Subscription, subscribe } from '../redis/connection.js';

export interface AnnouncedTip {
  readonly network: Network;
  readonly height: number;
  /** 64 lowercase hex digits. */
  readonly indexBlockHash: string;
}

export interface RedisTipChannelOptions {
  readonly client: Redis;
  readonly keyPrefix?: string;
  readonly onError?: (err: unknown) => void;
}

export class RedisTipChannel {
  readonly channel: string;
  readonly #client: Redis;
  readonly #instance = randomUUID();
  readonly #onError: (err: unknown) => void;
  readonly #handlers = new Set<(tip: AnnouncedTip) => void>();
  readonly #sub: Subscription;

  constructor(options: RedisTipChannelOptions) {
    this.#client = options.client;
    this.channel = `${options.keyPrefix ?? KEY_PREFIX}observer:tip`;
    this.#onError = options.onError ?? (() => {});
    this.#sub = subscribe(this.#client, this.channel, {
      onError: this.#onError,
      onMessage: (message) => this.#onMessage(message),
    });
  }

  publish(tip: AnnouncedTip): void {
    const message = JSON.stringify({
      i: this.#instance,
      n: tip.network,
      h: tip.height,
      b: tip.indexBlockHash,
    });
    this.#client.publish(this.channel, message).catch(this.#onError);
  }

  /** Tips announced by the other instances. */
  onTip(handler: (tip: AnnouncedTip) => void): () => void {
    this.#handlers.add(handler);
    return () => this.#handlers.delete(handler);
  }

  close(): void {
    this.#sub.close();
  }

  #onMessage(message: string): void {
    let m: { i?: unknown; n?: unknown; h?: unknown; b?: unknown };
    try {
      m = JSON.parse(message) as typeof m;
    } catch {
      return;
    }
    if (m.i === this.#instance) return;
    if (m.n !== 'mainnet' && m.n !== 'testnet') return;
    if (!Number.isSafeInteger(m.h) || (m.h as number) < 0) return;
    if (typeof m.b !== 'string' || !/^[0-9a-f]{64}$/.test(m.b)) return;
    const tip: AnnouncedTip = { network: m.n, height: m.h as number, indexBlockHash: m.b };
    for (const handler of this.#handlers) handler(tip);
  }
}
