/**
 * Wiring step: the order a gateway closes in, so that every request is answered before
 * SHUTDOWN_GRACE_MS ends the process.
 */

import type { FastifyInstance } from 'fastify';
import type { CacheStore } from '../cache/store.js';
import type { EventObserver } from '../chain/observer/start.js';
import type { Config } from '../config/index.js';
import type { RedisScaleOut } from '../scale-out.js';
import type { Budget } from '../upstream/budget/upstream-budget.js';
import type { UpstreamPool } from '../upstream/pool.js';
import type { GatewayNode } from './upstream-client.js';

/** A close() that runs once however often it is called; `drain` is called first, at once. */
export function closeInOrder(
  config: Config,
  parts: {
    readonly drain: () => void;
    readonly app: FastifyInstance;
    readonly node: GatewayNode;
    readonly pool: UpstreamPool | undefined;
    readonly budgets: Record<string, Budget>;
    readonly observer: EventObserver | undefined;
    readonly scaleOut: RedisScaleOut | undefined;
    readonly store: CacheStore;
    /** Watched reads' open streams, ended before the server closes (their clients reconnect elsewhere). */
    readonly watch?: { close(): void } | undefined;
    /** Usage rows not yet written: written once no answer can add to them, before the store goes. */
    readonly usage?: { close(): Promise<void> } | undefined;
  },
): () => Promise<void> {
  const { app, node, observer, store } = parts;
  let closing: Promise<void> | undefined;
  return () => {
    closing ??= (async () => {
      parts.drain();
      // Upstream first: requests waiting for a budget token (in the pool's fair queue or a
      // budget) or in a retry's backoff are answered SERVICE_UNAVAILABLE 503 now and no retry
      // starts, so that app.close() below drains answered requests instead of waiting on the
      // upstream until the grace period kills the process with their sockets still open.
      node.drain?.();
      parts.pool?.close();
      for (const b of Object.values(parts.budgets)) b.close();
      // Attempts under way get half the grace period to finish, then are aborted (503), so
      // that every request is answered before SHUTDOWN_GRACE_MS ends the process.
      const abort = setTimeout(() => void node.close?.(), Math.floor(config.shutdownGraceMs / 2));
      parts.watch?.close();
      try {
        await app.close();
        await observer?.close();
      } finally {
        clearTimeout(abort);
      }
      await parts.usage?.close();
      await node.close?.();
      await parts.scaleOut?.close();
      await store.close();
    })();
    return closing;
  };
}
