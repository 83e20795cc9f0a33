/**
 * The request target as the router will see it (docs/access-control.md, "One spelling per
 * route"). Admission must classify a request as the route that will serve it; if it looked at
 * the raw target while the router matched a decoded one, `/%63ontract-calls/...`,
 * `/v%32/...` or `POST http://host/contract-calls/...` would be served as API routes without
 * their key and quota checks. So the front door rewrites the target once, before admission,
 * the fast lane and the router, into the one spelling all three then share:
 *
 * - an absolute-form target (`http://host/path?query`, RFC 9112 3.2.2) becomes its origin form
 *   (`/path?query`), as the router would take it;
 * - a percent-encoded unreserved character (letters, digits, `-._~`) in the path is decoded:
 *   RFC 3986 6.2.2.2 makes both spellings the same resource. Every other escape stays, for
 *   the router to decode inside a parameter (a Clarity name may hold `?` or `/`), and none of
 *   them can spell a route's fixed prefix, which is made of unreserved characters only.
 *
 * Refused (NOT_FOUND), because no route serves them and a path a proxy in front might resolve
 * differently from us must not be served past a check:
 * - a dot segment (`.` or `..`, also spelt `%2e`) or an empty segment (`//`) anywhere in the
 *   path;
 * - an admin or ops route (`/admin...`, `/health`, `/ready`, `/metrics`) spelt with a
 *   percent-encoded unreserved character (`/%61dmin/...`, `/%6detrics`): these answer only
 *   their canonical path, so that a proxy rule blocking `/admin` cannot be walked around.
 *
 * Targets that are already canonical (nearly all) are returned as they are, after a few
 * `indexOf` scans.
 */
import { routeKind } from './routes.js';

export type RequestTarget =
  /** `url` is the target to route by (the input itself when it was already canonical). */
  | { readonly ok: true; readonly url: string; readonly path: string }
  /** Refused: `path` is the decoded path, for the NOT_FOUND message. */
  | { readonly ok: false; readonly path: string };

const SLASH = 47;
const HEX_PAIR = /^[0-9a-fA-F]{2}$/;

export function canonicalTarget(raw: string): RequestTarget {
  let url = raw;
  if (url.charCodeAt(0) !== SLASH) {
    const origin = originForm(url);
    // `*` (OPTIONS *) and anything that is not a URL: the router refuses those by itself.
    if (origin === undefined) return { ok: true, url, path: url };
    url = origin;
  }
  let end = url.indexOf('?');
  const hash = url.indexOf('#');
  if (hash >= 0 && (end < 0 || hash < end)) end = hash;
  const rawPath = end < 0 ? url : url.slice(0, end);
  const path = rawPath.includes('%') ? decodeUnreserved(rawPath) : rawPath;
  if (hasDotOrEmptySegment(path)) return { ok: false, path };
  if (path !== rawPath) {
    const kind = routeKind(path);
    if (kind === 'admin' || kind === 'ops') return { ok: false, path };
    url = end < 0 ? path : path + url.slice(end);
  }
  return { ok: true, url, path };
}

/** `http://host:port/p?q` → `/p?q` (`/` when the path is empty); undefined if not absolute. */
function originForm(url: string): string | undefined {
  const schemeEnd = url.indexOf('://');
  if (schemeEnd <= 0) return undefined;
  const scheme = url.slice(0, schemeEnd).toLowerCase();
  if (scheme !== 'http' && scheme !== 'https') return undefined;
  const authority = schemeEnd + 3;
  let i = authority;
  while (i < url.length) {
    const c = url[i];
    if (c === '/' || c === '?' || c === '#') break;
    i++;
  }
  const rest = url.slice(i);
  return rest.charCodeAt(0) === SLASH ? rest : `/${rest}`;
}

/** Decode `%XX` escapes of unreserved characters only; every other escape is kept as sent. */
function decodeUnreserved(path: string): string {
  let out = '';
  let last = 0;
  for (let i = path.indexOf('%'); i >= 0 && i + 2 < path.length; i = path.indexOf('%', i + 1)) {
    const hex = path.slice(i + 1, i + 3);
    if (!HEX_PAIR.test(hex)) continue;
    const code = Number.parseInt(hex, 16);
    if (!isUnreserved(code)) continue;
    out += path.slice(last, i) + String.fromCharCode(code);
    last = i + 3;
    i += 2;
  }
  return last === 0 ? path : out + path.slice(last);
}

function isUnreserved(code: number): boolean {
  return (
    (code >= 0x30 && code <= 0x39) || // 0-9
    (code >= 0x41 && code <= 0x5a) || // A-Z
    (code >= 0x61 && code <= 0x7a) || // a-z
    code === 0x2d || // -
    code === 0x2e || // .
    code === 0x5f || // _
    code === 0x7e // ~
  );
}

/** A `.` or `..` segment, or an empty one (`//`); a single trailing slash is not one. */
function hasDotOrEmptySegment(path: string): boolean {
  if (path.indexOf('//') >= 0) return true;
  let i = path.indexOf('/.');
  while (i >= 0) {
    const after = path.charCodeAt(i + 2);
    if (Number.isNaN(after) || after === SLASH) return true; // `/.` then end or `/`
    if (after === 0x2e) {
      const next = path.charCodeAt(i + 3);
      if (Number.isNaN(next) || next === SLASH) return true; // `/..`
    }
    i = path.indexOf('/.', i + 2);
  }
  return false;
}
