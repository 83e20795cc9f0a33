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
