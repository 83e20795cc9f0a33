/**
 * The one admission path (docs/access-control.md): every rule about who may ask, decided once
 * per request before anything else, for the fast lane and for Fastify's routes alike. The lane
 * cannot be built without it: its request listener, in front of both (src/http/fast-lane.ts),
 * calls `admit` first and stores the verdict on the raw request; the lane answers only an
 * admitted request, and on Fastify's path admission's hook (hook.ts) raises a refusal as the
 * envelope. A hit can therefore never skip a rule, whichever path answers it.
 *
 * Rules, in order: one spelling of the request target (request-target.ts: the router, the lane
 * and these rules see the same path; admin and ops routes only their canonical one); the
 * client's address (TRUST_PROXY); then what the route's kind (routes.ts) asks: on admin routes
 * ADMIN_TOKEN as a bearer token, whatever the method; nothing on a CORS preflight (OPTIONS on
 * any other route), ops or open routes; on API and node routes the API key (when a keys file is
 * set, a key that is not in it is refused whether keys are required or not) and
 * API_KEYS_REQUIRED, then the quota of the key or, for a keyless request, of its client
 * address.
 *
 * The verdict also says whether answers to the request may carry CORS headers (never on admin
 * routes): cors.ts reads it rather than classifying paths again.
 *
 * The verdict is synchronous unless a quota lives in Redis, so a hit on one instance costs a
 * few map lookups.
 */
import type { IncomingMessage } from 'node:http';
import { GatewayError } from '../../errors.js';
import type { ApiKey, ApiKeyRing } from './api-keys.js';
import { clientAddress } from './client-address.js';
import type { Balance, QuotaStore } from './quota-store.js';
import { canonicalTarget } from './request-target.js';
import { type RouteKind, routeKind, takesKeys } from './routes.js';
import { sameSecret, secretDigest } from './secret.js';

/** What a request was judged as: its route's kind, or a CORS preflight (OPTIONS on any route but admin). */
export type AdmissionKind = RouteKind | 'preflight';

/** The rule that refused a request. */
export type RefusalRule = 'target' | 'admin-token' | 'api-key' | 'quota';

export interface Admitted {
  readonly ok: true;
  readonly kind: AdmissionKind;
  /** Whether answers to this request may carry CORS headers (false on admin routes only). */
  readonly cors: boolean;
  readonly clientId: string;
  /** The API key the request was made with, when it carried a valid one. */
  readonly key: ApiKey | undefined;
  /** The key's upstream quota, asked before each upstream attempt; undefined = no limit. */
  readonly admitUpstream: (() => void | Promise<void>) | undefined;
  /** The quotas that applied, as the RateLimit headers tell them (absent: none did). */
  readonly quotas?: readonly QuotaLine[] | undefined;
}

/** The names of the quotas in the RateLimit headers (docs/usage.md). */
export type QuotaPolicy = 'requests' | 'units' | 'units-month' | 'anonymous';

/** One quota that applied to a request, as admission found it. */
export interface QuotaLine {
  readonly policy: QuotaPolicy;
  /** The quota. */
  readonly q: number;
  /** Its window, seconds. */
  readonly w: number;
  /**
   * What is left after admission: a request's token already taken; a cost in units not yet
   * (the answer's cost comes off when the headers are written).
   */
  readonly tokens: number;
  /** Counted in units: the answer's cost comes off `tokens`. */
  readonly inUnits: boolean;
  /** Seconds until it is full again whatever is left (the month's end); absent: refilled per minute. */
  readonly resetS?: number;
}

export interface Refused {
  readonly ok: false;
  readonly kind: AdmissionKind;
  /** Whether the refusal may carry CORS headers: a browser page reads why it was refused. */
  readonly cors: boolean;
  readonly clientId: string;
  readonly key: ApiKey | undefined;
  readonly rule: RefusalRule;
  readonly error: GatewayError;
  /** The quotas that applied (a 429 tells them with the refusing one at 0). */
  readonly quotas?: readonly QuotaLine[] | undefined;
}

export type Verdict = Admitted | Refused;

export interface AdmissionOptions {
  /** Proxies in front (TRUST_PROXY as a number of hops). */
  readonly trustProxy: number;
  /**
   * ADMIN_TOKEN. Undefined = the admin API is not registered: admin paths are let through to
   * the router, which answers them 404 as any path it does not serve.
   */
  readonly adminToken?: string | undefined;
  /** The keys file's keys; undefined = keys are not used (both headers are ignored). */
  readonly keys?: ApiKeyRing | undefined;
  readonly keysRequired?: boolean;
  /** Requests per minute of each keyless client address on API and node routes. */
  readonly anonymousPerMinute?: number | undefined;
  /** Where buckets live: memory on one instance, Redis in a fleet. */
  readonly quota: QuotaStore;
  /** Told of every admitted or refused API request made with a key (metrics, admin view). */
  readonly onKeyUse?: ((name: string, admitted: boolean) => void) | undefined;
  /** A key's units recorded this UTC month, fleet-wide (the usage rows), for unitsPerMonth. */
  readonly monthUnits?: ((name: string) => number) | undefined;
}

const VERDICT = Symbol('admissionVerdict');

interface AdmittedRequest extends IncomingMessage {
  [VERDICT]?: Verdict;
}

/** The verdict admit() gave this request, if it went through the front door. */
export function verdictOf(req: IncomingMessage): Verdict | undefined {
  return (req as AdmittedRequest)[VERDICT];
}

export class Admission {
  readonly #options: AdmissionOptions;
  /** ADMIN_TOKEN as the digest presented tokens are compared with (secret.ts). */
  readonly #adminDigest: Buffer | undefined;
  /** One upstream gate per key, made once. */
  readonly #gates = new Map<string, (() => void | Promise<void>) | undefined>();

  constructor(options: AdmissionOptions) {
    this.#options = options;
    this.#adminDigest = options.adminToken === undefined ? undefined : secretDigest(options.adminToken);
  }

  /** Whether admin routes are let in only with ADMIN_TOKEN (the admin API refuses to register otherwise). */
  get checksAdminToken(): boolean {
    return this.#adminDigest !== undefined;
  }

  /** Decide, remember the verdict on the request, and return it. */
  admit(req: IncomingMessage): Verdict | Promise<Verdict> {
    const verdict = this.#decide(req);
    if (verdict instanceof Promise)
      return verdict.then((v) => {
        (req as AdmittedRequest)[VERDICT] = v;
        return v;
      });
    (req as AdmittedRequest)[VERDICT] = verdict;
    return verdict;
  }

  /** The upstream quota check of a key, for RequestContext.admitUpstream; undefined = no limit. */
  upstreamGate(key: ApiKey): (() => void | Promise<void>) | undefined {
    if (this.#gates.has(key.name)) return this.#gates.get(key.name);
    const gate = this.#makeGate(key);
    this.#gates.set(key.name, gate);
    return gate;
  }

  #makeGate(key: ApiKey): (() => void | Promise<void>) | undefined {
    const limit = key.upstreamPerMinute;
    if (limit === undefined) return undefined;
    const id = `upstream:${key.name}`;
    return () => {
      const wait = this.#options.quota.take(id, limit);
      if (typeof wait === 'number') {
        if (wait > 0) throw upstreamQuotaError(key, wait);
        return;
      }
      return wait.then((ms) => {
        if (ms > 0) throw upstreamQuotaError(key, ms);
      });
    };
  }

  #decide(req: IncomingMessage): Verdict | Promise<Verdict> {
    const o = this.#options;
    const clientId = clientAddress(req.socket.remoteAddress, req.headers['x-forwarded-for'], o.trustProxy);
    const preflight = req.method === 'OPTIONS';
    // Admitted as the route that will serve it: the target is rewritten to the one spelling the
    // router, the fast lane and this check share (request-target.ts), or refused.
    const target = canonicalTarget(req.url ?? '/');
    if (!target.ok) {
      const shown = target.path.slice(0, 200);
      return refuse(
        judged(routeKind(target.path), preflight),
        clientId,
        undefined,
        'target',
        new GatewayError('NOT_FOUND', `Route ${req.method} ${shown} not found`),
      );
    }
    if (target.url !== req.url) req.url = target.url;
    const route = routeKind(target.path);
    // Every method, OPTIONS included: which admin routes exist is not told without the token.
    if (route === 'admin') return this.#admin(req, clientId);
    // A CORS preflight carries no credentials by design (the browser sends the key only on the
    // request it asks about), so it is answered without keys or quotas.
    if (preflight) return admitted('preflight', clientId, undefined, undefined);
    if (route === 'usage') return this.#usage(req, clientId);
    if (!takesKeys(route)) return admitted(route, clientId, undefined, undefined);
    let key: ApiKey | undefined;
    if (o.keys !== undefined) {
      const presented = presentedKey(req);
      if (presented !== undefined) {
        key = o.keys.find(presented);
        if (key === undefined)
          return refuse(
            route,
            clientId,
            undefined,
            'api-key',
            new GatewayError('UNAUTHORIZED', 'the API key is not valid'),
          );
      } else if (o.keysRequired === true && route !== 'stream') {
        return refuse(
          route,
          clientId,
          undefined,
          'api-key',
          new GatewayError(
            'UNAUTHORIZED',
            'this gateway needs an API key: send it as X-API-Key: <key> or Authorization: Bearer <key>',
          ),
        );
      }
    }
    const checks = this.#quotasOf(key, clientId);
    if (checks.length === 0) {
      return key === undefined
        ? admitted(route, clientId, undefined, undefined)
        : this.#keyUse(admitted(route, clientId, key, this.upstreamGate(key)));
    }
    // Units first (they only look): a request refused for its units spends no request token.
    const looked = checks.map((c) => (c.takes ? undefined : c.check(false)));
    const then = (seen: readonly (Balance | undefined)[]): Verdict | Promise<Verdict> => {
      const refused = seen.some((b) => b !== undefined && !b.ok);
      const balances = checks.map((c, i) => seen[i] ?? c.check(!refused));
      if (balances.every((b): b is Balance => !(b instanceof Promise)))
        return this.#judgeQuotas(checks, balances, route, clientId, key);
      return Promise.all(balances).then((all) => this.#judgeQuotas(checks, all, route, clientId, key));
    };
    if (looked.every((b) => !(b instanceof Promise))) return then(looked as (Balance | undefined)[]);
    return Promise.all(looked).then(then);
  }

  /**
   * The quotas that apply to a request (docs/access-control.md, docs/usage.md): a key's
   * requests, units per minute and units per month; a keyless client's requests. Each checks
   * its bucket: a request takes its token now; a cost in units is taken once the answer is
   * known (charge), and only needs one unit left now.
   */
  #quotasOf(key: ApiKey | undefined, clientId: string): QuotaCheck[] {
    const o = this.#options;
    const checks: QuotaCheck[] = [];
    if (key === undefined) {
      const anonymous = o.anonymousPerMinute;
      if (anonymous !== undefined) {
        const id = `client:${clientId}`;
        checks.push({
          policy: 'anonymous',
          q: anonymous,
          takes: true,
          check: (take) => o.quota.spend(id, anonymous, take ? 1 : 0, 1),
        });
      }
      return checks;
    }
    const rpm = key.requestsPerMinute;
    if (rpm !== undefined) {
      const id = this.#bucketOf(key);
      checks.push({
        policy: 'requests',
        q: rpm,
        takes: true,
        check: (take) => o.quota.spend(id, rpm, take ? 1 : 0, 1),
      });
    }
    const upm = key.unitsPerMinute;
    if (upm !== undefined) {
      const id = `units:${key.name}`;
      checks.push({ policy: 'units', q: upm, takes: false, check: () => o.quota.spend(id, upm, 0, 1) });
    }
    const month = key.unitsPerMonth;
    const monthUnits = o.monthUnits;
    if (month !== undefined && monthUnits !== undefined) {
      checks.push({
        policy: 'units-month',
        q: month,
        takes: false,
        check: () => {
          const left = month - monthUnits(key.name);
          return left >= 1
            ? { ok: true, tokens: left, waitMs: 0 }
            : { ok: false, tokens: left, waitMs: untilNextMonth(Date.now()) };
        },
      });
    }
    return checks;
  }

  #judgeQuotas(
    checks: readonly QuotaCheck[],
    balances: readonly Balance[],
    kind: AdmissionKind,
    clientId: string,
    key: ApiKey | undefined,
  ): Verdict {
    const now = Date.now();
    const quotas: QuotaLine[] = checks.map((c, i) => lineOf(c, balances[i]!, now));
    const first = balances.findIndex((b) => !b.ok);
    if (first < 0) {
      const verdict = admitted(kind, clientId, key, key === undefined ? undefined : this.upstreamGate(key));
      return this.#keyUse({ ...verdict, quotas });
    }
    // The first quota spent names the refusal; Retry-After is the longest wait of those spent.
    const waitMs = Math.max(...balances.filter((b) => !b.ok).map((b) => b.waitMs));
    const c = checks[first]!;
    const refusal = refuse(kind, clientId, key, 'quota', quotaError(c.policy, c.q, waitMs));
    return this.#keyUse({ ...refusal, quotas });
  }

  /**
   * Take an answer's cost from the key's units bucket (it may go below zero); the month's
   * units are the usage rows'. Nothing to wait for: a failure leaves the bucket as it was.
   */
  charge(verdict: Verdict, units: number): void {
    const key = verdict.key;
    const upm = key?.unitsPerMinute;
    if (key === undefined || upm === undefined || units <= 0 || !verdict.ok) return;
    const spent = this.#options.quota.spend(`units:${key.name}`, upm, units, ALWAYS);
    if (spent instanceof Promise) spent.catch(() => {});
  }

  /**
   * `GET /usage`: a key's own figures, so a valid key and nothing else (no quota is spent
   * reading what was spent).
   */
  #usage(req: IncomingMessage, clientId: string): Verdict {
    const presented = presentedKey(req);
    const key = presented === undefined ? undefined : this.#options.keys?.find(presented);
    if (key !== undefined) return admitted('usage', clientId, key, undefined);
    return refuse(
      'usage',
      clientId,
      undefined,
      'api-key',
      new GatewayError(
        'UNAUTHORIZED',
        presented === undefined
          ? 'GET /usage answers the usage of the API key it is sent with: send it as X-API-Key: <key> or Authorization: Bearer <key>'
          : 'the API key is not valid',
      ),
    );
  }

  /** Admin routes: ADMIN_TOKEN as a bearer token, compared in constant time. */
  #admin(req: IncomingMessage, clientId: string): Verdict {
    const held = this.#adminDigest;
    // No ADMIN_TOKEN: no admin route is registered, and the router answers 404 as for any path.
    if (held === undefined) return admitted('admin', clientId, undefined, undefined);
    const presented = bearerToken(req.headers.authorization);
    if (presented !== '' && sameSecret(secretDigest(presented), held))
      return admitted('admin', clientId, undefined, undefined);
    return refuse('admin', clientId, undefined, 'admin-token', adminTokenError());
  }

  /** A key's quota bucket, named once per key (not joined again on every request). */
  readonly #bucketIds = new Map<string, string>();
  #bucketOf(key: ApiKey): string {
    let id = this.#bucketIds.get(key.name);
    if (id === undefined) {
      id = `key:${key.name}`;
      this.#bucketIds.set(key.name, id);
    }
    return id;
  }

  #keyUse(verdict: Verdict): Verdict {
    if (verdict.key !== undefined) this.#options.onKeyUse?.(verdict.key.name, verdict.ok);
    return verdict;
  }
}

/** A preflight is judged as one on any route but admin, whose rule holds for every method. */
function judged(route: RouteKind, preflight: boolean): AdmissionKind {
  return preflight && route !== 'admin' ? 'preflight' : route;
}

/** Admin routes never send CORS headers: a browser page must never drive the admin API. */
function corsFor(kind: AdmissionKind): boolean {
  return kind !== 'admin';
}

function admitted(
  kind: AdmissionKind,
  clientId: string,
  key: ApiKey | undefined,
  admitUpstream: (() => void | Promise<void>) | undefined,
): Admitted {
  return { ok: true, kind, cors: corsFor(kind), clientId, key, admitUpstream };
}

function refuse(
  kind: AdmissionKind,
  clientId: string,
  key: ApiKey | undefined,
  rule: RefusalRule,
  error: GatewayError,
): Refused {
  return { ok: false, kind, cors: corsFor(kind), clientId, key, rule, error };
}

/** X-API-Key, else Authorization: Bearer. */
function presentedKey(req: IncomingMessage): string | undefined {
  const header = req.headers['x-api-key'];
  if (typeof header === 'string' && header !== '') return header.trim();
  const auth = req.headers.authorization;
  if (auth !== undefined && auth.length > 7 && auth.slice(0, 7).toLowerCase() === 'bearer ')
    return auth.slice(7).trim();
  return undefined;
}

/** The token of `Authorization: Bearer <token>` ('' when there is none). */
function bearerToken(header: string | undefined): string {
  return /^Bearer\s+(.+)$/i.exec(header ?? '')?.[1]?.trim() ?? '';
}

/** The admin API's refusal: the same answer whatever was wrong (no header, another scheme, a wrong token). */
function adminTokenError(): GatewayError {
  return new GatewayError('UNAUTHORIZED', 'a valid admin bearer token is required', undefined, {
    headers: { 'www-authenticate': 'Bearer realm="clarity-cache admin"' },
  });
}

function quotaError(policy: QuotaPolicy, limit: number, waitMs: number): GatewayError {
  const retryAfter = Math.max(1, Math.ceil(waitMs / 1000));
  const scope = policy === 'anonymous' ? 'client' : 'key';
  const who = scope === 'key' ? 'this API key' : 'this client address';
  const what =
    policy === 'units'
      ? `${limit} units per minute`
      : policy === 'units-month'
        ? `${limit} units this month (UTC)`
        : `${limit} requests per minute`;
  return new GatewayError(
    'RATE_LIMIT_EXCEEDED',
    `${who} is over its quota of ${what}; retry in ${retryAfter} s`,
    {
      scope,
      policy,
      retryAfter,
      retryable: true,
      ...(policy === 'requests' || policy === 'anonymous' ? { limitPerMinute: limit } : { limit }),
    },
    { retryAfter },
  );
}

/** A spend that always happens (a cost taken after the answer). */
const ALWAYS = -Number.MAX_SAFE_INTEGER;

/** Ms from `now` to the next UTC month. */
export function untilNextMonth(now: number): number {
  const d = new Date(now);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) - now;
}

interface QuotaCheck {
  readonly policy: QuotaPolicy;
  readonly q: number;
  /** A request quota: its token is taken at admission (units are taken after the answer). */
  readonly takes: boolean;
  /** The bucket's balance; `take`: spend the request's token when it holds one. */
  check(take: boolean): Balance | Promise<Balance>;
}

function lineOf(c: QuotaCheck, b: Balance, now: number): QuotaLine {
  const month = c.policy === 'units-month';
  return {
    policy: c.policy,
    q: c.q,
    w: month ? Math.ceil((untilNextMonth(now) + (now - monthStart(now))) / 1000) : 60,
    tokens: b.ok ? b.tokens : Math.min(0, b.tokens),
    inUnits: c.policy === 'units' || month,
    ...(month ? { resetS: Math.ceil(untilNextMonth(now) / 1000) } : {}),
  };
}

function monthStart(now: number): number {
  const d = new Date(now);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

function upstreamQuotaError(key: ApiKey, waitMs: number): GatewayError {
  const retryAfter = Math.max(1, Math.ceil(waitMs / 1000));
  return new GatewayError(
    'RATE_LIMIT_EXCEEDED',
    `this API key is over its quota of ${key.upstreamPerMinute} upstream requests per minute; retry in ${retryAfter} s`,
    { scope: 'key', retryAfter, retryable: true, upstreamPerMinute: key.upstreamPerMinute },
    { retryAfter },
  );
}
