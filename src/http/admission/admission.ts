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
import type { BucketSpend, Judgement, QuotaStore } from './quota-store.js';
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
  readonly quotas?: Quotas | undefined;
}

/**
 * The quotas that applied to a request: their lines (the key's, made once), what each has
 * left, and their `RateLimit-Policy` text, which only changes with the keys file or the month,
 * so it is made once per key and month rather than per answer.
 */
export interface Quotas {
  readonly lines: readonly QuotaLine[];
  /**
   * What each bucket line has left after admission, in order: a request's token already
   * taken; a cost in units not yet (the answer's cost comes off when the headers are written).
   */
  readonly tokens: readonly number[];
  /** What the monthly quota has left, when there is one (its line is the last). */
  readonly monthLeft: number;
  /** Seconds until the UTC month's end: the `t` of a monthly quota. */
  readonly monthResetS: number;
  readonly policy: string;
}

/** The names of the quotas in the RateLimit headers (docs/usage.md). */
export type QuotaPolicy = 'requests' | 'units' | 'units-month' | 'anonymous';

/** One quota of a plan, as the RateLimit headers tell it. */
export interface QuotaLine {
  readonly policy: QuotaPolicy;
  /** The quota. */
  readonly q: number;
  /** Counted over the UTC month (its window the month's length); otherwise per minute. */
  readonly monthly: boolean;
  /** Counted in units: the answer's cost comes off what is left. */
  readonly inUnits: boolean;
  /** `"<policy>";r=`, the start of its RateLimit item. */
  readonly item: string;
  /**
   * The last item made for it and its figures: a key far below its quota tells the same
   * figures answer after answer, and their text is then made once (metering.ts).
   */
  readonly said: { r: number; t: number; text: string };
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
  readonly quotas?: Quotas | undefined;
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
    const plan = key === undefined ? this.#anonymousPlan(clientId) : this.#planOf(key);
    if (plan === undefined) {
      return key === undefined
        ? admitted(route, clientId, undefined, undefined)
        : this.#keyUse(admitted(route, clientId, key, this.upstreamGate(key)));
    }
    // The month's units are known here (no I/O); a request they refuse only looks at the
    // buckets. The buckets are judged together: a request refused by one spends no other.
    const month = plan.month;
    const monthLeft = month === undefined ? Infinity : month.q - this.#options.monthUnits!(month.key);
    const buckets =
      plan.buckets.length === 0
        ? { tokens: [], short: -1, waitMs: 0 }
        : this.#options.quota.judge(plan.buckets, monthLeft >= 1);
    if (buckets instanceof Promise)
      return buckets.then((j) => this.#judgeQuotas(plan, j, monthLeft, route, clientId, key));
    return this.#judgeQuotas(plan, buckets, monthLeft, route, clientId, key);
  }

  /**
   * The quotas of a key (docs/access-control.md, docs/usage.md): its requests and units per
   * minute (token buckets) and units per month (the usage rows), made once per key (a reloaded
   * keys file brings new key objects, so new plans). A request takes its token now; a cost in
   * units is taken once the answer is known (charge), and only needs one unit left now.
   * Undefined: the key has no quota.
   */
  readonly #plans = new WeakMap<ApiKey, QuotaPlan | null>();
  #planOf(key: ApiKey): QuotaPlan | undefined {
    let plan = this.#plans.get(key);
    if (plan === undefined) {
      const buckets: QuotaBucket[] = [];
      const rpm = key.requestsPerMinute;
      if (rpm !== undefined) buckets.push(quotaBucket('requests', rpm, `key:${key.name}`));
      const upm = key.unitsPerMinute;
      if (upm !== undefined) buckets.push(quotaBucket('units', upm, `units:${key.name}`));
      const q = key.unitsPerMonth;
      const month =
        q !== undefined && this.#options.monthUnits !== undefined ? { key: key.name, q } : undefined;
      plan = buckets.length === 0 && month === undefined ? null : newPlan(buckets, month);
      this.#plans.set(key, plan);
    }
    return plan ?? undefined;
  }

  /** A keyless client's quota: its address's requests per minute. */
  #anonymousPlan(clientId: string): QuotaPlan | undefined {
    const anonymous = this.#options.anonymousPerMinute;
    if (anonymous === undefined) return undefined;
    let plan = this.#anonymous;
    if (plan === undefined || plan.lines[0]!.q !== anonymous) {
      plan = newPlan([quotaBucket('anonymous', anonymous, '')], undefined);
      this.#anonymous = plan;
    }
    // The bucket is the address's; the rest of the plan (its lines, its policy text) is shared.
    const bucket = { id: `client:${clientId}`, capacity: anonymous, cost: 1 };
    return { ...plan, buckets: [bucket] };
  }
  #anonymous: QuotaPlan | undefined;

  #judgeQuotas(
    plan: QuotaPlan,
    judged: Judgement,
    left: number,
    kind: AdmissionKind,
    clientId: string,
    key: ApiKey | undefined,
  ): Verdict {
    const now = Date.now();
    const m = monthOf(now);
    const tokens = judged.tokens;
    let first = judged.short;
    // Retry-After is the longest wait of the quotas spent.
    let waitMs = judged.waitMs;
    // A spent quota shows nothing left, never a fraction of a token.
    if (first >= 0)
      for (let i = 0; i < tokens.length; i++) if (tokens[i]! < 1) tokens[i] = Math.min(0, tokens[i]!);
    let monthLeft = left;
    if (monthLeft < 1) {
      monthLeft = Math.min(0, monthLeft);
      if (first < 0) first = tokens.length;
      waitMs = Math.max(waitMs, m.next - now);
    }
    const quotas: Quotas = {
      lines: plan.lines,
      tokens,
      monthLeft,
      monthResetS: Math.ceil((m.next - now) / 1000),
      policy: policyText(plan, m),
    };
    if (first < 0)
      return this.#keyUse(
        admitted(kind, clientId, key, key === undefined ? undefined : this.upstreamGate(key), quotas),
      );
    // The first quota spent names the refusal.
    const line = plan.lines[first]!;
    return this.#keyUse(
      refuse(kind, clientId, key, 'quota', quotaError(line.policy, line.q, waitMs), quotas),
    );
  }

  /**
   * Take an answer's cost from the key's units bucket (it may go below zero); the month's
   * units are the usage rows'. Nothing to wait for: a failure leaves the bucket as it was.
   */
  charge(verdict: Verdict, units: number): void {
    const key = verdict.key;
    if (key === undefined || units <= 0 || !verdict.ok) return;
    const bucket = this.#planOf(key)?.units;
    if (bucket === undefined) return;
    const spent = this.#options.quota.spend(bucket.id, bucket.capacity, units, ALWAYS);
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
  quotas?: Quotas,
): Admitted {
  return { ok: true, kind, cors: corsFor(kind), clientId, key, admitUpstream, quotas };
}

function refuse(
  kind: AdmissionKind,
  clientId: string,
  key: ApiKey | undefined,
  rule: RefusalRule,
  error: GatewayError,
  quotas?: Quotas,
): Refused {
  return { ok: false, kind, cors: corsFor(kind), clientId, key, rule, error, quotas };
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

/** A bucket of a plan, and its policy's name. */
interface QuotaBucket extends BucketSpend {
  readonly policy: QuotaPolicy;
}

/** The quotas that apply to one key (or to keyless clients), made once. */
interface QuotaPlan {
  /** Its minute buckets, judged together (QuotaStore.judge). */
  readonly buckets: readonly BucketSpend[];
  /** The key's units per month and its name (the usage rows count them). */
  readonly month: { readonly key: string; readonly q: number } | undefined;
  /** The bucket an answer's units are charged to. */
  readonly units: BucketSpend | undefined;
  /** The quotas in header order: the buckets', then the month's. */
  readonly lines: readonly QuotaLine[];
  /** The RateLimit-Policy text and the month it was made for (a month's window is its length). */
  readonly text: { policy: string; month: number };
}

function newPlan(
  buckets: readonly QuotaBucket[],
  month: { readonly key: string; readonly q: number } | undefined,
): QuotaPlan {
  const lines = buckets.map((b) => quotaLine(b.policy, b.capacity, false));
  if (month !== undefined) lines.push(quotaLine('units-month', month.q, true));
  return {
    buckets,
    month,
    units: buckets.find((b) => b.policy === 'units'),
    lines,
    text: { policy: '', month: -1 },
  };
}

/** A request quota takes its token at admission; units are taken after the answer. */
function quotaBucket(policy: QuotaPolicy, capacity: number, id: string): QuotaBucket {
  return { policy, capacity, id, cost: policy === 'units' ? 0 : 1 };
}

function quotaLine(policy: QuotaPolicy, q: number, monthly: boolean): QuotaLine {
  return {
    policy,
    q,
    monthly,
    inUnits: policy !== 'requests' && policy !== 'anonymous',
    item: `"${policy}";r=`,
    said: { r: Number.NaN, t: Number.NaN, text: '' },
  };
}

/** The current UTC month's bounds, recomputed only when the clock leaves them. */
interface Month {
  readonly start: number;
  readonly next: number;
  /** Its length in seconds: the window of a monthly quota. */
  readonly seconds: number;
}
let month: Month = { start: 0, next: 0, seconds: 0 };
function monthOf(now: number): Month {
  if (now < month.start || now >= month.next) {
    const d = new Date(now);
    const start = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
    const next = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
    month = { start, next, seconds: Math.ceil((next - start) / 1000) };
  }
  return month;
}

/** The plan's RateLimit-Policy text for this month (a month's `w` is its length). */
function policyText(plan: QuotaPlan, m: Month): string {
  const text = plan.text;
  if (text.month !== m.start) {
    text.policy = plan.lines.map((l) => `"${l.policy}";q=${l.q};w=${l.monthly ? m.seconds : 60}`).join(', ');
    text.month = m.start;
  }
  return text.policy;
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
