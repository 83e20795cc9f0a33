/**
 * A quota store that answers later, as Redis does: every operation is a promise. Buckets
 * count what was spent and never refill (a test's requests are counted exactly), and a
 * short bucket always says `waitMs`.
 */
import type { QuotaStore } from '../../src/http/admission/quota-store.js';

export function laterQuota(waitMs: number): QuotaStore {
  const spent = new Map<string, number>();
  const left = (id: string, capacity: number) => capacity - (spent.get(id) ?? 0);
  const take = (id: string, cost: number) => spent.set(id, (spent.get(id) ?? 0) + cost);
  return {
    judge: async (buckets, spend) => {
      const tokens = buckets.map((b) => left(b.id, b.capacity));
      const short = tokens.findIndex((t) => t < 1);
      if (short >= 0) return { tokens, short, waitMs };
      if (spend)
        buckets.forEach((b, i) => {
          take(b.id, b.cost);
          tokens[i] = left(b.id, b.capacity);
        });
      return { tokens, short, waitMs: 0 };
    },
    spend: async (id, capacity, cost, minimum) => {
      if (left(id, capacity) < minimum) return { ok: false, tokens: left(id, capacity), waitMs };
      take(id, cost);
      return { ok: true, tokens: left(id, capacity), waitMs: 0 };
    },
    take: async (id, capacity) => {
      if (left(id, capacity) < 1) return waitMs;
      take(id, 1);
      return 0;
    },
  };
}
