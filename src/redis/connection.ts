/**
 * The one way this gateway connects to Redis: an ioredis client that fails fast while
 * disconnected (no offline queue, so a request never waits on a dead Redis), retries an
 * in-flight command a bounded number of times, times commands out, and reconnects forever
 * with capped exponential backoff. `onStatus` reports ready/down transitions, once each.
 *
 * The cache store and the scale-out parts (budget, coalescing, hot-tier sync) each open one
 * of these: a slow cache command must never queue in front of a budget decision. Subscribers
 * (pub/sub needs a connection of its own) come from subscribe() below.
 */
import { Redis } from 'ioredis';

/** Prefix of every key and channel the gateway writes in Redis, unless told otherwise. */
export const KEY_PREFIX = 'cc:';

export type RedisStatus = 'ready' | 'down';

export interface RedisConnectionOptions {
  /** redis:// or rediss:// URL. */
  readonly url: string;
  /** Connection transitions: 'ready' once usable, 'down' once lost (or first failed). */
  readonly onStatus?: ((status: RedisStatus, err?: unknown) => void) | undefined;
  /** Retries of a command caught by a dropped connection. Default 1. */
  readonly maxRetriesPerRequest?: number | undefined;
  /** A command without a reply in this time fails. Default 2000. */
  readonly commandTimeoutMs?: number | undefined;
  /** Default 5000. */
  readonly connectTimeoutMs?: number | undefined;
  /** Reconnect backoff: base * 2^(attempt-1), capped. Defaults 100 and 5000. */
  readonly retryBaseMs?: number | undefined;
  readonly retryMaxMs?: number | undefined;
}

export class RedisConnection {
  readonly #client: Redis;
  readonly #onStatus: (status: RedisStatus, err?: unknown) => void;
  #state: RedisStatus | 'unknown' = 'unknown';
  #lastError: unknown;
  #closed = false;

  constructor(options: RedisConnectionOptions) {
    this.#onStatus = options.onStatus ?? (() => {});
    const base = options.retryBaseMs ?? 100;
    const cap = options.retryMaxMs ?? 5000;
    this.#client = new Redis(options.url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: options.maxRetriesPerRequest ?? 1,
      commandTimeout: options.commandTimeoutMs ?? 2000,
      connectTimeout: options.connectTimeoutMs ?? 5000,
      keepAlive: 10_000,
      // Never give up: a Redis outage degrades the gateway to its hot tier until it is back.
      retryStrategy: (times) => (this.#closed ? null : Math.min(base * 2 ** Math.min(times - 1, 30), cap)),
    });
    this.#client.on('ready', () => this.#transition('ready'));
    this.#client.on('close', () => this.#transition('down'));
    // Without a listener ioredis prints every reconnect failure; keep the cause for 'down'.
    this.#client.on('error', (err: unknown) => {
      this.#lastError = err;
    });
  }

  get client(): Redis {
    return this.#client;
  }

  isReady(): boolean {
    return !this.#closed && this.#client.status === 'ready';
  }

  /**
   * Resolve once connected; reject with the cause when this attempt fails (the client
   * keeps reconnecting in the background regardless).
   */
  async connect(): Promise<void> {
    if (this.#closed) throw new Error('redis connection is closed');
    const client = this.#client;
    if (client.status === 'ready') return;
    if (client.status === 'wait') {
      try {
        await client.connect();
        return;
      } catch (err) {
        throw this.#lastError ?? err;
      }
    }
    await new Promise<void>((resolve, reject) => {
      const onReady = (): void => {
        client.off('close', onClose);
        resolve();
      };
      const onClose = (): void => {
        client.off('ready', onReady);
        reject(this.#lastError ?? new Error('redis connection closed'));
      };
      client.once('ready', onReady);
      client.once('close', onClose);
    });
  }

  /** Quit (or drop) the connection and stop reconnecting. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const client = this.#client;
    if (client.status === 'ready') {
      try {
        await client.quit();
      } catch {
        // Closing anyway.
      }
    }
    // disconnect() also cancels a pending reconnect. Only a live socket has an 'end' to wait
    // for (a client between reconnect attempts never emits one), and even that wait is bounded.
    const live = client.status === 'connecting' || client.status === 'connect' || client.status === 'ready';
    if (!live) {
      client.disconnect();
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    const ended = new Promise<void>((resolve) => {
      client.once('end', () => resolve());
      timer = setTimeout(resolve, 1_000);
      timer.unref();
    });
    client.disconnect();
    await ended;
    clearTimeout(timer);
  }

  #transition(next: RedisStatus): void {
    if (this.#closed || this.#state === next) return;
    this.#state = next;
    if (next === 'ready') this.#lastError = undefined;
    this.#onStatus(next, next === 'down' ? this.#lastError : undefined);
  }
}

export interface SubscriptionHandlers {
  onMessage(message: string): void;
  /** Subscribed, on the first connection and after every reconnection. */
  onSubscribed?(): void;
  onError?(err: unknown): void;
}

export interface Subscription {
  close(): void;
}

/**
 * Listen on channel with a duplicate of client (a subscribed connection can run no other
 * command). It subscribes again on every reconnection; outages are reported by the command
 * client, so the subscriber's own errors are swallowed and it just reconnects with it.
 */
export function subscribe(client: Redis, channel: string, handlers: SubscriptionHandlers): Subscription {
  const sub = client.duplicate({ lazyConnect: true });
  sub.on('error', () => {});
  // Idempotent next to ioredis' own resubscribe on reconnect.
  sub.on('ready', () => {
    sub.subscribe(channel).then(
      () => handlers.onSubscribed?.(),
      (err: unknown) => handlers.onError?.(err),
    );
  });
  sub.on('message', (_channel: string, message: string) => handlers.onMessage(message));
  sub.connect().catch(() => {
    // Unreachable now: ioredis keeps reconnecting.
  });
  return { close: () => sub.disconnect() };
}
