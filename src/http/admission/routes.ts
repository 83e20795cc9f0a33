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

/**
 * Whether a path is a percent-encoded spelling of an admin or ops route (`/%61dmin/...`,
 * `/%6detrics`). Those routes answer only their canonical path, so that a proxy rule that
 * blocks `/admin` in front of the gateway cannot be walked around by encoding a letter.
 */
export function isEncodedPrivatePath(path: string): boolean {
  if (!path.includes('%')) return false;
  let decoded: string;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    return false;
  }
  if (decoded === path) return false;
  const kind = routeKind(decoded);
  return kind === 'admin' || kind === 'ops';
}
