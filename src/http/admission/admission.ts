/**
 * The one admission path (docs/access-control.md): every rule about who may ask, decided once
 * per request before anything else, for the fast lane and for Fastify's routes alike. The lane
 * installs `admit` in front of both (src/http/fast-lane.ts), stores the verdict on the raw
 * request, and Fastify's first onRequest hook raises a refusal as the envelope; a hit can
 * therefore never skip a rule, whichever path answers it.
 *
 * Rules, in order: one spelling of the request target (request-target.ts: the router, the lane
 * and these rules see the same path; admin and ops routes only their canonical one); the client's address
 * (TRUST_PROXY); on API routes, the API key (when a keys file is set, a key that is not in it
 * is refused whether keys are required or not) and API_KEYS_REQUIRED; then the quota of the key
 * or, for a keyless request, of its client address.
 *
 * The verdict is synchronous unless a quota lives in Redis, so a hit on one instance costs a
 * few map lookups.
 */
import type { IncomingMessage } from 'node:http';
import { GatewayError } from '../../errors.js';
import type { ApiKey, ApiKeyRing } from './api-keys.js';
import { clientAddress } from './client-address.js';
import type { QuotaStore } from './quota.js';
import { canonicalTarget } from './request-target.js';
import { routeKind } from './routes.js';

export interface Admitted {
  readonly ok: true;
  readonly clientId: string;
  /** The API key the request was made with, when it carried a valid one. */
  readonly key: ApiKey | undefined;
  /** The key's upstream quota, asked before each upstream attempt; undefined = no limit. */
  readonly admitUpstream?: (() => void | Promise<void>) | undefined;
}

export interface Refused {
  readonly ok: false;
  readonly clientId: string;
  readonly key: ApiKey | undefined;
  readonly error: GatewayError;
}

export type Verdict = Admitted | Refused;

export interface AdmissionOptions {
  /** Proxies in front (TRUST_PROXY as a number of hops). */
  readonly trustProxy: number;
  /** The keys file's keys; undefined = keys are not used (both headers are ignored). */
  readonly keys?: ApiKeyRing | undefined;
  readonly keysRequired?: boolean;
  /** Requests per minute of each keyless client address on API routes. */
  readonly anonymousPerMinute?: number | undefined;
  /** Where buckets live: memory on one instance, Redis in a fleet. */
  readonly quota: QuotaStore;
  /** Told of every admitted or refused API request made with a key (metrics, admin view). */
  readonly onKeyUse?: ((name: string, admitted: boolean) => void) | undefined;
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
  /** One upstream gate per key, made once. */
  readonly #gates = new Map<string, (() => void | Promise<void>) | undefined>();

  constructor(options: AdmissionOptions) {
    this.#options = options;
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
    // Admitted as the route that will serve it: the target is rewritten to the one spelling the
    // router, the fast lane and this check share (request-target.ts), or refused.
    const target = canonicalTarget(req.url ?? '/');
    if (!target.ok) {
      const shown = target.path.slice(0, 200);
      return refuse(
        clientId,
        undefined,
        new GatewayError('NOT_FOUND', `Route ${req.method} ${shown} not found`),
      );
    }
    if (target.url !== req.url) req.url = target.url;
    const path = target.path;
    // A CORS preflight carries no credentials by design (the browser sends the key only on the
    // request it asks about), so it is answered without keys or quotas.
    if (routeKind(path) !== 'api' || req.method === 'OPTIONS') return { ok: true, clientId, key: undefined };
    let key: ApiKey | undefined;
    if (o.keys !== undefined) {
      const presented = presentedKey(req);
      if (presented !== undefined) {
        key = o.keys.find(presented);
        if (key === undefined)
          return refuse(clientId, undefined, new GatewayError('UNAUTHORIZED', 'the API key is not valid'));
      } else if (o.keysRequired === true) {
        return refuse(
          clientId,
          undefined,
          new GatewayError(
            'UNAUTHORIZED',
            'this gateway needs an API key: send it as X-API-Key: <key> or Authorization: Bearer <key>',
          ),
        );
      }
    }
    if (key !== undefined) {
      const limit = key.requestsPerMinute;
      if (limit === undefined)
        return this.#keyUse({ ok: true, clientId, key, admitUpstream: this.upstreamGate(key) });
      return this.#spend(this.#bucketOf(key), limit, clientId, key, 'key');
    }
    const anonymous = o.anonymousPerMinute;
    if (anonymous === undefined) return { ok: true, clientId, key: undefined };
    return this.#spend(`client:${clientId}`, anonymous, clientId, undefined, 'client');
  }

  #spend(
    id: string,
    limit: number,
    clientId: string,
    key: ApiKey | undefined,
    scope: 'key' | 'client',
  ): Verdict | Promise<Verdict> {
    const wait = this.#options.quota.take(id, limit);
    if (typeof wait === 'number') return this.#spent(wait, limit, clientId, key, scope);
    return wait.then((ms) => this.#spent(ms, limit, clientId, key, scope));
  }

  #spent(
    waitMs: number,
    limit: number,
    clientId: string,
    key: ApiKey | undefined,
    scope: 'key' | 'client',
  ): Verdict {
    return this.#keyUse(
      waitMs === 0
        ? { ok: true, clientId, key, admitUpstream: key === undefined ? undefined : this.upstreamGate(key) }
        : refuse(clientId, key, quotaError(scope, limit, waitMs)),
    );
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

function refuse(clientId: string, key: ApiKey | undefined, error: GatewayError): Refused {
  return { ok: false, clientId, key, error };
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

function quotaError(scope: 'key' | 'client', limit: number, waitMs: number): GatewayError {
  const retryAfter = Math.max(1, Math.ceil(waitMs / 1000));
  const who = scope === 'key' ? 'this API key' : 'this client address';
  return new GatewayError(
    'RATE_LIMIT_EXCEEDED',
    `${who} is over its quota of ${limit} requests per minute; retry in ${retryAfter} s`,
    { scope, retryAfter, retryable: true, limitPerMinute: limit },
    { status: 429, headers: { 'Retry-After': String(retryAfter) } },
  );
}

function upstreamQuotaError(key: ApiKey, waitMs: number): GatewayError {
  const retryAfter = Math.max(1, Math.ceil(waitMs / 1000));
  return new GatewayError(
    'RATE_LIMIT_EXCEEDED',
    `this API key is over its quota of ${key.upstreamPerMinute} upstream requests per minute; retry in ${retryAfter} s`,
    { scope: 'key', retryAfter, retryable: true, upstreamPerMinute: key.upstreamPerMinute },
    { status: 429, headers: { 'Retry-After': String(retryAfter) } },
  );
}
