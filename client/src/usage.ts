/**
 * The usage query (docs/usage.md) as the gateway's `GET /usage` and `GET /admin/usage` take it:
 * `from`, `to` (UTC days) and `groupBy` (comma-separated dimensions), plus `key` for the admin
 * route (which the command line asks).
 */
import type { UsageDimension, UsageOptions } from './types.js';

/** Every dimension usage rows may be grouped by, in the gateway's order. */
export const USAGE_DIMENSIONS: readonly UsageDimension[] = ['key', 'day', 'route', 'function', 'outcome'];

/** The query string of a usage request (empty, or `?...`); `key` only for the admin route. */
export function usageQuery(options: UsageOptions & { readonly key?: string }): string {
  const fields = {
    key: options.key,
    from: options.from,
    to: options.to,
    groupBy: options.groupBy?.join(','),
  };
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(fields)) if (value !== undefined) query.set(name, value);
  const qs = query.toString();
  return qs === '' ? '' : `?${qs}`;
}

export function usagePath(path: string, options: UsageOptions & { readonly key?: string }): string {
  return `${path}${usageQuery(options)}`;
}
