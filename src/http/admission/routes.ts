/**
 * Which rules a path falls under (docs/access-control.md): the one classification of routes,
 * read by admission, by CORS (through the verdict) and by the access log. API routes (the
 * gateway's own `/contract-calls...`) and node routes (`/v2/...`, `/v3/...` and their
 * `/mainnet/...` and `/testnet/...` forms) take keys and quotas; admin routes take
 * ADMIN_TOKEN only; the page, docs and ops routes are open. A watched read's event stream
 * (`/subscriptions/{id}/events`) takes a key and quotas when one is sent, but needs none even
 * when keys are required: its unguessable id is the credential (a browser's EventSource sends
 * no headers), and the subscription itself was made with a key (docs/watch.md). `GET /usage`
 * answers a key's own usage (docs/usage.md): it takes a valid key, and neither quotas nor
 * metering.
 */
export type RouteKind = 'api' | 'stream' | 'node' | 'usage' | 'admin' | 'ops' | 'open';

const OPS = new Set(['/health', '/ready', '/metrics']);

export function routeKind(path: string): RouteKind {
  if (path.startsWith('/contract-calls')) return 'api';
  if (path === '/subscriptions' || path.startsWith('/subscriptions/'))
    return /^\/subscriptions\/[^/]+\/events\/?$/.test(path) ? 'stream' : 'api';
  if (path.startsWith('/v2/') || path.startsWith('/v3/')) return 'node';
  if (path.startsWith('/mainnet/') || path.startsWith('/testnet/')) return 'node';
  if (path === '/admin' || path.startsWith('/admin/')) return 'admin';
  if (path === '/usage' || path === '/usage/') return 'usage';
  if (OPS.has(path) || OPS.has(path.replace(/\/+$/, ''))) return 'ops';
  return 'open';
}

/** Whether a kind of route takes API keys and quotas (the public, upstream-spending routes). */
export function takesKeys(kind: RouteKind): boolean {
  return kind === 'api' || kind === 'node' || kind === 'stream';
}
