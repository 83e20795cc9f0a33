/**
 * The stale windows of a request (docs/freshness.md): stale-while-revalidate and stale-if-error,
 * each the request's own or the deployment's default, capped to CACHE_STALE_MAX_S, which is also
 * how long an entry is kept past its freshness for them. Shared by every cached read.
 */
import type { CachePolicy } from '../cache/read-through.js';
import { isTransientFailure } from './transient.js';

export interface StaleDefaults {
  /** CACHE_STALE_WHILE_REVALIDATE_S. */
  readonly staleWhileRevalidateS: number;
  /** CACHE_STALE_IF_ERROR_S. */
  readonly staleIfErrorS: number;
  /** CACHE_STALE_MAX_S: retention past freshness, and the cap of both windows. */
  readonly staleMaxS: number;
}

export function staleWindows(
  defaults: StaleDefaults,
  own: {
    readonly staleWhileRevalidate?: number | undefined;
    readonly staleIfError?: number | undefined;
  } = {},
): Partial<CachePolicy> {
  const capS = defaults.staleMaxS;
  const swrS = Math.min(own.staleWhileRevalidate ?? defaults.staleWhileRevalidateS, capS);
  const sieS = Math.min(own.staleIfError ?? defaults.staleIfErrorS, capS);
  return {
    keepStaleMs: capS * 1000,
    ...(swrS > 0 ? { staleWhileRevalidateMs: swrS * 1000 } : {}),
    ...(sieS > 0 ? { staleIfErrorMs: sieS * 1000, isTransient: isTransientFailure } : {}),
  };
}
