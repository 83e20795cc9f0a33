/**
 * Readiness of a store: the persistent tier answers a read within a deadline and its last
 * write did not fail. A tiered store
 * is probed through its cold tier, since its own reads fall back to the hot tier and would
 * always look healthy.
 */
import type { CacheStore } from '../store.js';

export interface StoreHealth {
  readonly ok: boolean;
  readonly kind: string;
  readonly error?: string;
}

const PROBE_KEY = 'health:probe';

export async function probeStore(store: CacheStore, timeoutMs = 1000): Promise<StoreHealth> {
  const target = store.backing ?? store;
  // A networked store (Redis) knows whether it is connected: no need to wait for a timeout.
  if (target.isReady !== undefined && !target.isReady()) {
    return { ok: false, kind: target.kind, error: `${target.kind} is not connected` };
  }
  // A store that knows its writes are failing (SQLite: disk full, locked, file deleted) is
  // degraded even though it still answers reads; it recovers with the next successful write.
  const problem = target.writeProblem?.();
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

/** Entries in the in-memory hot tier (or the whole memory store); 0 for a store without one. */
export function hotEntries(store: CacheStore): number {
  return store.hotEntries?.() ?? 0;
}
