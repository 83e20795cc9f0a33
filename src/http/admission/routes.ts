/**
 * Which rules a path falls under (docs/access-control.md). API routes take keys and quotas;
 * admin routes take ADMIN_TOKEN only; the page, docs and ops routes are open.
 */
export type RouteKind = 'api' | 'admin' | 'ops' | 'open';

const OPS = new Set(['/health', '/ready', '/metrics']);

export function routeKind(path: string): RouteKind {
  if (path.startsWith('/contract-calls') || path.startsWith('/v2/') || path.startsWith('/v3/')) return 'api';
  if (path.startsWith('/mainnet/') || path.startsWith('/testnet/')) return 'api';
  if (path === '/admin' || path.startsWith('/admin/')) return 'admin';
  if (OPS.has(path) || OPS.has(path.replace(/\/+$/, ''))) return 'ops';
  return 'open';
}
