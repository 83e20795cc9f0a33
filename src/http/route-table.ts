/**
 * The methods each registered path answers, so an unknown method on a known path can be
 * told apart from an unknown path (405 with Allow, rather than 404).
 */
import type { FastifyInstance } from 'fastify';

export function trackRoutes(app: FastifyInstance): () => Map<RegExp, Set<string>> {
  const byUrl = new Map<string, { pattern: RegExp; methods: Set<string> }>();
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
  return () => new Map([...byUrl.values()].map((e) => [e.pattern, e.methods]));
}
