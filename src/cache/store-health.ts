/**
 * Readiness of a store: the persistent tier answers a read within a deadline and its last
 * write did not fail. A tiered store
 * is probed through its cold tier, since its own reads fall back to the hot tier and would
 * always look healthy.
 */
import type { CacheStore } from './store.js';
import { TieredStore } from './tiered-store.js';

export interface StoreHealth {
  readonly ok: boolean;
  readonly kind: string;
  readonly error?: string;
}

const PROBE_KEY = 'health:probe';

export async function probeStore(store: CacheStore, timeoutMs = 1000): Promise<StoreHealth> {
  const target = store instanceof TieredStore ? store.cold : store;
  // A networked store (Redis) knows whether it is connected: no need to wait for a timeout.
  const connected = (target as Partial<{ isReady(): boolean }>).isReady;
  if (typeof connected === 'function' && !connected.call(target)) {
    return { ok: false, kind: target.kind, error: `${target.kind} is not connected` };
  }
  // A store that knows its writes are failing (SQLite: disk full, locked, file deleted) is
  // degraded even though it still answers reads; it recovers with the next successful write.
  const writeProblem = (target as Partial<{ writeProblem(): string | undefined }>).writeProblem;
  const problem = typeof writeProblem === 'function' ? writeProblem.call(target) : undefined;
  if (problem !== undefined) return { ok: false, kind: target.kind, error: problem };
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      target.get(PROBE_KEY),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
    return { ok: true, kind: target.kind };
  } catch (err) {
    return { ok: false, kind: target.kind, error: err instanceof Error ? err.message : String(err) };
  } finally {
    clearTimeout(timer);
  }
}

/** Entries in the in-memory hot tier (or the whole memory store). */
export function hotEntries(store: CacheStore): number {
  if (store instanceof TieredStore) return store.hotSize;
  const size = (store as { size?: unknown }).size;
  return typeof size === 'number' ? size : 0;
}
