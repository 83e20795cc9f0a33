/**
 * The methods each registered path answers, so an unknown method on a known path can be
 * told apart from an unknown path (405 with Allow, rather than 404).
 */
import type { FastifyInstance } from 'fastify';

export interface RouteMethods {
  readonly pattern: RegExp;
  readonly methods: Set<string>;
}

/** The registered paths with their methods, kept current as routes are added (a live view). */
export function trackRoutes(app: FastifyInstance): Iterable<RouteMethods> {
  const byUrl = new Map<string, RouteMethods>();
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    let entry = byUrl.get(route.url);
    if (entry === undefined) {
      const source = route.url
        .split('/')
        .map((seg) => (seg.startsWith(':') ? '[^/]+' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
        .join('/');
      entry = { pattern: new RegExp(`^${source}/?$`), methods: new Set() };
      byUrl.set(route.url, entry);
    }
    for (const m of methods) if (m !== 'HEAD') entry.methods.add(m);
  });
  return { [Symbol.iterator]: () => byUrl.values() };
}

/** One public endpoint as the index routes list it. */
export interface EndpointLine {
  readonly method: string;
  /** OpenAPI-style path, e.g. `/contract-calls/abi/{contractAddress}/{contractName}`. */
  readonly path: string;
  /** The route's one-line summary. */
  readonly description: string;
}

/**
 * The documented public endpoints, kept current as routes are added (a live view): every
 * route with a summary that is not hidden from the OpenAPI document and not an admin route.
 */
export function trackEndpoints(app: FastifyInstance): readonly EndpointLine[] {
  const lines: EndpointLine[] = [];
  app.addHook('onRoute', (route) => {
    const schema = route.schema as { summary?: unknown; hide?: unknown } | undefined;
    if (typeof schema?.summary !== 'string' || schema.hide === true) return;
    if (route.url === '/admin' || route.url.startsWith('/admin/')) return;
    const path = route.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      if (method !== 'HEAD') lines.push({ method, path, description: schema.summary });
    }
  });
  return lines;
}
