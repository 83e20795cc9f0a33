/**
 * The one spelling of a request target (src/http/admission/request-target.ts), checked against
 * the router's own view of a path: whatever a client spells, the rules are chosen by the path
 * the router then matches.
 */
import { createRequire } from 'node:module';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalTarget } from '../../../src/http/admission/request-target.js';
import { routeKind } from '../../../src/http/admission/routes.js';

// The router's own decoding (find-my-way, Fastify's router): what a route is matched against.
const require = createRequire(import.meta.url);
const { safeDecodeURI } = require('find-my-way/lib/url-sanitizer.js') as {
  safeDecodeURI: (path: string) => { path: string };
};

const percentEncode = (c: string) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`;

describe('canonicalTarget', () => {
  it('leaves a canonical target untouched (the same string, not a copy)', () => {
    const url = '/contract-calls/read-only/SP000000000000000000002Q6VF78/pox-4/get-info?tip=latest';
    const t = canonicalTarget(url);
    expect(t).toEqual({ ok: true, url, path: url.slice(0, url.indexOf('?')) });
  });

  it('decodes escaped unreserved characters and keeps every other escape and the query as sent', () => {
    expect(canonicalTarget('/%63ontract-calls/read-only/SP1.c/get%3Fx%2Fy?q=%41')).toMatchObject({
      ok: true,
      url: '/contract-calls/read-only/SP1.c/get%3Fx%2Fy?q=%41',
    });
    expect(canonicalTarget('/v%32/info')).toMatchObject({ ok: true, url: '/v2/info' });
    expect(canonicalTarget('/%7e%5F%2d')).toMatchObject({ ok: true, url: '/~_-' });
    expect(canonicalTarget('/bad%zz%4')).toMatchObject({ ok: true, url: '/bad%zz%4' });
  });

  it('turns an absolute-form target into its origin form', () => {
    expect(canonicalTarget('http://example.com:8080/v2/info?tip=')).toMatchObject({
      ok: true,
      url: '/v2/info?tip=',
    });
    expect(canonicalTarget('HTTPS://h')).toMatchObject({ ok: true, url: '/' });
    expect(canonicalTarget('http://h?x=1')).toMatchObject({ ok: true, url: '/?x=1' });
    expect(canonicalTarget('*')).toMatchObject({ ok: true, url: '*' });
  });

  it('refuses dot and empty segments, and encoded spellings of admin and ops routes', () => {
    for (const bad of [
      '/v2/../admin',
      '/./x',
      '/a/.',
      '/a/..',
      '/a/%2e%2E/b',
      '//v2/info',
      '/a//b',
      '/%61dmin',
      '/%6detrics',
      'http://h/h%65alth',
    ])
      expect(canonicalTarget(bad).ok, bad).toBe(false);
    for (const good of ['/a/.b', '/a/..b', '/a/b.', '/health/', '/admin/cache/stats', 'http://h/admin'])
      expect(canonicalTarget(good).ok, good).toBe(true);
  });

  it('classifies every spelling as the route the router matches', () => {
    const prefixes = [
      '/contract-calls/read-only/SP1.c/f',
      '/v2/info',
      '/v3/x',
      '/mainnet/v2/info',
      '/admin/cache/stats',
      '/metrics',
      '/health',
      '/explorer',
      '/',
    ];
    const spelling = fc
      .tuple(
        fc.constantFrom(...prefixes),
        fc.array(fc.boolean(), { maxLength: 40 }),
        fc.constantFrom('', 'http://h', 'https://h:1'),
      )
      .map(([path, escapes, origin]) => {
        // Escape some characters of the path (never the slashes, which the router keeps escaped).
        const chars = [...path].map((c, i) => (c !== '/' && escapes[i] === true ? percentEncode(c) : c));
        return { raw: origin + chars.join(''), canonical: path };
      });
    fc.assert(
      fc.property(spelling, ({ raw, canonical }) => {
        const t = canonicalTarget(raw);
        const routed = safeDecodeURI(
          raw.startsWith('/') ? raw : raw.slice(raw.indexOf('/', raw.indexOf('://') + 3)),
        ).path;
        if (!t.ok) {
          // Refused only when the route is admin or ops and the spelling is not canonical.
          expect(['admin', 'ops']).toContain(routeKind(canonical));
          expect(raw.includes('%')).toBe(true);
          return;
        }
        expect(t.path).toBe(canonical);
        expect(routeKind(t.path)).toBe(routeKind(routed));
        expect(safeDecodeURI(t.url).path).toBe(routed);
      }),
      { numRuns: 2000 },
    );
  });
});
