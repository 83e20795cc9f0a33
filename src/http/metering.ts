/**
 * Usage metered per key (docs/usage.md): what one answer of an API route costs, the
 * `Clarity-Cache-Cost` header that says it, and the usage record it adds, for the full path
 * (Fastify's hooks, installMetering) and the fast lane (which replays hits) alike, so that the
 * rows count every answer the access log writes a line for.
 *
 * - Metered: the routes that take API keys (the gateway's API, the node routes, the event
 *   streams); never admin and ops routes, the explorer, /docs, preflights or `GET /usage`.
 * - Outcome: `refused` (admission's 401 and 429), `error` (any other status of 400 or more),
 *   `hit` (answered from the cache, a stale answer included, or without the upstream at all),
 *   `miss` (the answer needed the upstream: fetched, coalesced, bypassing the cache).
 * - Units: COST_HIT for a hit, COST_MISS for a miss, COST_DECODE for the decode endpoint, 0 for a
 *   refusal or an error, 0 to open an event stream (each event sent costs 1, counted where it is
 *   written), and a batch the sum its route says (its items').
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { UsageOutcome, UsageRecord } from '../service/usage/usage.js';
import type { Quotas, Verdict } from './admission/admission.js';
import { admissionOf } from './admission/hook.js';
import { CACHE_STATUS_HEADER } from './reply.js';
import { upstreamUsageOf } from './request-context.js';

export const COST_HEADER = 'clarity-cache-cost';

export interface Costs {
  readonly hit: number;
  readonly miss: number;
  readonly decode: number;
}

/** Where usage records go (src/service/usage/recorder.ts): one call per answer, no I/O. */
export interface UsageSink {
  record(record: UsageRecord): void;
}

export const RATE_LIMIT_POLICY_HEADER = 'ratelimit-policy';
export const RATE_LIMIT_HEADER = 'ratelimit';

/**
 * The IETF rate-limit headers of an answer (docs/usage.md): one policy and one item per quota
 * that applied, `q` and `w` in the policy (made once per key by admission), `r` (what is left
 * after this answer, its cost included) and `t` (seconds until `r` is back to `q`) in the item.
 * Undefined: no quota applied.
 */
export function rateLimitHeaders(
  quotas: Quotas | undefined,
  units: number,
): readonly [policy: string, limit: string] | undefined {
  if (quotas === undefined || quotas.lines.length === 0) return undefined;
  return [quotas.policy, rateLimitItems(quotas, units)];
}

/** The `RateLimit` header's value: one item per quota, after an answer costing `units`. */
export function rateLimitItems(quotas: Quotas, units: number): string {
  const { lines, tokens } = quotas;
  let items = '';
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!;
    const left = (l.monthly ? quotas.monthLeft : tokens[i]!) - (l.inUnits ? units : 0);
    const r = left <= 0 ? 0 : Math.floor(left);
    const t =
      left >= l.q ? 0 : l.monthly ? quotas.monthResetS : Math.max(1, Math.ceil(((l.q - left) * 60) / l.q));
    const said = l.said;
    if (said.r !== r || said.t !== t) {
      said.r = r;
      said.t = t;
      said.text = `${l.item}${r};t=${t}`;
    }
    items = i === 0 ? said.text : `${items}, ${said.text}`;
  }
  return items;
}

/** Take an answer's cost from the asking key's unit quota (Admission.charge). */
export type Charge = (verdict: Verdict, units: number) => void;

/** What the fast lane needs to meter a replayed hit: its row's route and function, its cost. */
export interface ReplayMeter {
  readonly route: string;
  readonly function: string;
  readonly units: number;
}

const DECODE_ROUTE = '/contract-calls/decode-clarity-value';
const NETWORK_PREFIX = /^\/(?:mainnet|testnet)(?=\/)/;

/** The route as usage rows name it: its OpenAPI path template, /mainnet and /testnet folded in. */
export function usageRoute(pattern: string): string {
  let route = USAGE_ROUTES.get(pattern);
  if (route === undefined) {
    route = pattern.replace(NETWORK_PREFIX, '').replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    // Route patterns are the router's own few strings; 'unmatched' stands for any other path.
    if (USAGE_ROUTES.size < 1_000) USAGE_ROUTES.set(pattern, route);
  }
  return route;
}
const USAGE_ROUTES = new Map<string, string>();

/**
 * What a request is about: `<address>.<contract>::<function>` for a read-only call (the
 * gateway's endpoint or the node's call-read), `<address>.<contract>` for another route about
 * one contract, else ''.
 */
export function usageFunction(params: unknown): string {
  if (params === null || typeof params !== 'object') return '';
  const p = params as Record<string, unknown>;
  const address = p['contractAddress'] ?? p['address'];
  const contract = p['contractName'] ?? p['contract'];
  if (typeof address !== 'string' || typeof contract !== 'string') return '';
  const fn = p['functionName'] ?? p['function'];
  return typeof fn === 'string' ? `${address}.${contract}::${fn}` : `${address}.${contract}`;
}

/** Whether answers to this request are metered (the routes that take keys; not a preflight). */
export function metered(verdict: Verdict | undefined): boolean {
  const kind = verdict?.kind;
  return kind === 'api' || kind === 'node' || kind === 'stream';
}

/**
 * The outcome of an answer: a refusal by admission, an error, or hit or miss by what the
 * cache told the client (its Cache-Status); an answer that went through no cache is a miss when
 * it made upstream requests, else a hit.
 */
export function usageOutcome(
  status: number,
  cacheStatus: string | undefined,
  refused: boolean,
  upstreamRequests: number,
): UsageOutcome {
  if (refused) return 'refused';
  if (status >= 400) return 'error';
  if (cacheStatus === undefined) return upstreamRequests > 0 ? 'miss' : 'hit';
  // `hit`, or a stale answer from the cache (`fwd=stale; ...; detail=stale-if-error`).
  if (/;\s*hit\b/.test(cacheStatus) || /detail=stale-/.test(cacheStatus)) return 'hit';
  return 'miss';
}

/** The units of an answer (see the module comment); a batch's come from its route. */
export function unitsOf(route: string, outcome: UsageOutcome, costs: Costs): number {
  if (outcome === 'refused' || outcome === 'error') return 0;
  if (route === DECODE_ROUTE) return costs.decode;
  if (route === '/subscriptions/{id}/events') return 0;
  return outcome === 'hit' ? costs.hit : costs.miss;
}

/** The units of a replayed hit of `route` (the fast lane replays hits only). */
export function replayMeter(pattern: string, params: unknown, costs: Costs): ReplayMeter {
  const route = usageRoute(pattern);
  return { route, function: usageFunction(params), units: unitsOf(route, 'hit', costs) };
}

interface Metered {
  readonly route: string;
  readonly outcome: UsageOutcome;
  readonly units: number;
}

const METERED = new WeakMap<FastifyRequest, Metered>();
/** Recorded once, whichever of onResponse and an abandoned stream's close comes. */
const RECORDED = new WeakSet<FastifyRequest>();
/** What a route said of its own answer (a batch: the sum of its items). */
const OWN = new WeakMap<FastifyRequest, { outcome: UsageOutcome; units: number }>();

/**
 * A route that meters its answer itself (a batch: its items' units, a miss if any item needed
 * the upstream); a refusal or an error still costs nothing.
 */
export function meterAs(request: FastifyRequest, outcome: 'hit' | 'miss', units: number): void {
  OWN.set(request, { outcome, units });
}

/**
 * A batch item's usage: its outcome by the Cache-Status its meta tells, its units by the
 * single endpoint's costs (a failed item: 0).
 */
export function itemUnits(
  status: number,
  cacheStatus: string | undefined,
  costs: Costs,
): { miss: boolean; units: number } {
  const outcome = usageOutcome(status, cacheStatus, false, 0);
  return { miss: outcome === 'miss', units: unitsOf('', outcome, costs) };
}

/**
 * The full path's metering: an onSend hook that puts the cost on every metered answer
 * (unless its route set it: a batch), and an onResponse hook that records it. Installed before
 * the fast lane, so that the answers it holds carry the header (which it sets again per replay).
 */
export function installMetering(
  app: FastifyInstance,
  costs: Costs,
  sink: UsageSink | undefined,
  charge?: Charge,
): void {
  app.addHook('onSend', (request, reply, payload, done) => {
    const verdict = admissionOf(request);
    if (!metered(verdict)) return done(null, payload);
    const route = usageRoute(request.routeOptions.url ?? 'unmatched');
    const refused = verdict?.ok === false && (verdict.rule === 'api-key' || verdict.rule === 'quota');
    const cacheStatus = reply.getHeader(CACHE_STATUS_HEADER);
    let outcome = usageOutcome(
      reply.statusCode,
      typeof cacheStatus === 'string' ? cacheStatus : undefined,
      refused,
      upstreamUsageOf(request)?.attempts ?? 0,
    );
    const own = OWN.get(request);
    let units: number;
    if (own !== undefined && outcome !== 'refused' && outcome !== 'error') {
      outcome = own.outcome;
      units = own.units;
    } else units = unitsOf(route, outcome, costs);
    reply.header(COST_HEADER, String(units));
    const limits = rateLimitHeaders(verdict?.quotas, units);
    if (limits !== undefined) {
      reply.header(RATE_LIMIT_POLICY_HEADER, limits[0]);
      reply.header(RATE_LIMIT_HEADER, limits[1]);
    }
    if (verdict !== undefined && charge !== undefined) charge(verdict, units);
    METERED.set(request, { route, outcome, units });
    done(null, payload);
  });
  if (sink === undefined) return;
  const record = (request: FastifyRequest, reply: FastifyReply): void => {
    if (RECORDED.has(request)) return;
    RECORDED.add(request);
    const m = METERED.get(request) ?? streamMeter(request, reply);
    if (m !== undefined) {
      const key = admissionOf(request)?.key;
      sink.record({
        key: key?.name ?? null,
        route: m.route,
        function: usageFunction(request.params),
        outcome: m.outcome,
        units: m.units,
        upstreamRequests: upstreamUsageOf(request)?.attempts ?? 0,
        bytesSent: bytesOf(reply),
      });
    }
  };
  app.addHook('onResponse', (request, reply, done) => {
    record(request, reply);
    done();
  });
  // A stream its client leaves never finishes, so onResponse never runs for it.
  onAbandonedStream(app, record);
}

/**
 * Call `then` when a streaming route's response (one whose route config says `stream: true`,
 * written after reply.hijack()) closes without finishing: its client left, and Fastify's
 * onResponse, which waits for 'finish', will not run. The access log and the usage rows count
 * such an answer once, as any other.
 */
export function onAbandonedStream(
  app: FastifyInstance,
  then: (request: FastifyRequest, reply: FastifyReply) => void,
): void {
  app.addHook('onRequest', (request, reply, done) => {
    if ((request.routeOptions.config as { stream?: boolean } | undefined)?.stream === true) {
      reply.raw.once('close', () => {
        if (!reply.raw.writableFinished) then(request, reply);
      });
    }
    done();
  });
}

/** A metered answer that bypassed onSend (an event stream writes its own head): 0 units to open. */
function streamMeter(request: FastifyRequest, reply: FastifyReply): Metered | undefined {
  if (!metered(admissionOf(request))) return undefined;
  const route = usageRoute(request.routeOptions.url ?? 'unmatched');
  return { route, outcome: reply.statusCode >= 400 ? 'error' : 'hit', units: 0 };
}

function bytesOf(reply: FastifyReply): number {
  const length = Number(reply.getHeader('content-length'));
  return Number.isSafeInteger(length) && length > 0 ? length : 0;
}
