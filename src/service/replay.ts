/**
 * When a read-only answer may be replayed by the HTTP fast lane (src/http/fast-lane.ts), and
 * how: a cache hit, for a request made only of fields whose effect on the answer is known here,
 * valid while the cache would still serve the very entry it was rendered from.
 */
import type { CacheEntry } from '../cache/entry.js';
import { tipOf, type Verdict } from '../cache/judge.js';
import type { CachePolicy, ReadThroughCache } from '../cache/read-through.js';
import type { LaneReuse } from './answer.js';

/**
 * Request fields a hit's answer is judged by. A request with any other field (a pinned `tip`,
 * anything newer) always takes the full path, so that rules this module does not know are
 * never skipped.
 */
const KNOWN_FIELDS = new Set([
  'contractAddress',
  'contractName',
  'functionName',
  'functionArgs',
  'network',
  'senderAddress',
  'strictJsonCompat',
  'preserveContainers',
  'cacheControl',
]);
/**
 * cacheControl fields a replay honours: ttl only applies to writing; a block bound is part of
 * the policy every replay is re-judged with (ReadThroughCache.stillServes); stale windows only
 * apply once the entry is no longer fresh, when the replay stops anyway. bustCache and
 * skipCache are not here: such requests always take the full path.
 */
const KNOWN_CACHE_CONTROL = new Set(['ttl', 'maxBlocks', 'staleWhileRevalidate', 'staleIfError']);

/** Whether a request's hit can be replayed (see KNOWN_FIELDS). */
export function replayable(req: object): boolean {
  for (const name in req) if (!KNOWN_FIELDS.has(name)) return false;
  const cc = (req as { cacheControl?: unknown }).cacheControl;
  if (cc === undefined) return true;
  if (cc === null || typeof cc !== 'object') return false;
  for (const name in cc) if (!KNOWN_CACHE_CONTROL.has(name)) return false;
  return true;
}

/**
 * Replay of a hit on `entry` under cache key `key`: valid while the cache would still serve
 * that entry to the same request, judged with the same `policy` the request's lookup used (its
 * freshness requirement, e.g. a block bound, is re-judged at every answer). `verdict`, when
 * given (the verdict of the answer replayed), says the tip may move with the chain (the event
 * observer's proof is in the policy): each replay then tells the tip of the verdict that let it
 * through, not the one of its first answer.
 */
export function hitReuse(
  cache: ReadThroughCache,
  key: string,
  entry: CacheEntry,
  policy: CachePolicy = {},
  verdict?: Verdict,
): LaneReuse {
  let judged = verdict;
  const valid = (): boolean => {
    judged = cache.stillServes(key, entry, policy);
    return judged !== undefined;
  };
  const served = (): void => cache.countHit(key);
  return verdict === undefined
    ? { valid, hit: entry, served }
    : { valid, hit: entry, tipHeight: () => tipOf(entry, judged), served };
}
