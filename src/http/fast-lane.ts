/**
 * The exact-repeat fast lane: a 'request' listener in front of Fastify's own, on the same
 * node:http server, that answers a request whose method, URL, Content-Type, Origin and raw body
 * bytes are identical to those of an earlier request, with the answer the full path (router,
 * hooks, validation, service) gave that earlier request, as long as that answer is still what
 * the full path would give now.
 *
 * Why: a cache hit's own work is a few µs; the framework around it (routing, hooks, body
 * parsing, schema validation, the async handler, header objects) was most of its cost
 * (bench/results/profile.md). A repeat needs none of it.
 *
 * What keeps it honest:
 * - It cannot be built without the admission path (src/http/admission/): its request listener
 *   asks admission first, for every request, and answers only one admission let in; a refusal
 *   always goes to Fastify, whose admission hook sends it.
 * - Only answers a route explicitly offers (offerReplay) are held, and only after they went
 *   through the full path; the status and headers replayed are the ones reply.ts rendered for
 *   that path (CORS included: Origin is part of the key), with the per-answer ones (Cache-Status,
 *   Age, a tip that moves) recomputed at each answer by reply.ts from the offer's values.
 * - Each offer says when it stops being valid (`valid`, asked on every answer): a read-only
 *   hit is valid while the hot tier still holds the very entry object it was rendered from
 *   and that entry is fresh (see ReadOnlyService); a decode answer is a pure function of the
 *   body, so it is always valid.
 * - Anything unusual goes to the full path untouched: no entry for this method and URL, no
 *   Content-Length or a body above LANE_MAX_BODY_BYTES, Transfer-Encoding, Expect,
 *   Content-Encoding, no Host, or the gateway draining (whose answers close the connection).
 * - Metrics (route, method, status, duration; the offer's `served` for cache outcomes) and the
 *   access log line are written exactly as the full path's hooks write them.
 *
 * When the lane read a body but has no answer for it, the request continues to Fastify with
 * the bytes replayed as its payload stream (a preParsing hook), so nothing is read twice.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { LRUCache } from 'lru-cache';
import type { LaneReuse } from '../service/answer.js';
import { type Admission, type Admitted, type Verdict, verdictOf } from './admission/admission.js';
import {
  type Charge,
  COST_HEADER,
  type Costs,
  metered,
  RATE_LIMIT_HEADER,
  RATE_LIMIT_POLICY_HEADER,
  type ReplayMeter,
  rateLimitItems,
  replayMeter,
  type UsageSink,
} from './metering.js';
import { CACHE_STATUS_HEADER, replayHeaders, sendReplay } from './reply.js';
import { cacheOutcomeOfHeader } from './request-context.js';

export type { LaneReuse } from '../service/answer.js';

/** Most bytes of answers the lane holds (keys, bodies and headers, approximately). */
export const LANE_MAX_BYTES = 4 * 1024 * 1024;
/** What an entry costs besides its key, body and header text (objects, closures, the entry it holds). */
const ENTRY_OVERHEAD_BYTES = 1024;
/** Larger request bodies always take the full path (and are never buffered here). */
export const LANE_MAX_BODY_BYTES = 16 * 1024;

const OFFER = Symbol('fastLaneOffer');
const BUFFERED = Symbol('fastLaneBody');

/** What an offered answer repeats: its reuse, the headers that move per answer, and its names. */
interface Offer {
  readonly reuse: LaneReuse;
  /** Cache-Status, Age and a moving tip at a moment (reply.ts); absent when none moves. */
  readonly dynamic: ((now: number) => readonly string[]) | undefined;
  readonly route: string;
  readonly url: string;
  /** The route's parameters, for the usage row's function (metering.ts). */
  readonly params: unknown;
}

interface LaneRequest extends IncomingMessage {
  [OFFER]?: Offer;
  [BUFFERED]?: Buffer | Error;
}

interface LaneEntry {
  /** What the request must match, byte for byte (method and URL select the slot). */
  readonly method: string;
  readonly rawUrl: string;
  readonly contentType: string | undefined;
  readonly origin: string | undefined;
  readonly requestBody: Buffer;
  readonly status: number;
  /** Header names and values of the full path's answer, without the per-answer ones. */
  readonly headers: readonly string[];
  readonly body: Buffer;
  readonly reuse: LaneReuse;
  readonly dynamic: Offer['dynamic'];
  /** Route pattern and URL as the full path's metrics and log line name them. */
  readonly route: string;
  readonly url: string;
  /** How a replay is metered (a hit of its route), when its route is (docs/usage.md). */
  readonly meter: ReplayMeter | undefined;
  readonly size: number;
  /** When the eviction order last heard of a hit on it (see TOUCH_MS). */
  touched: number;
  /** The last per-answer headers and the full list made with them (reused while the same). */
  lastDynamic: readonly string[] | undefined;
  lastHeaders: readonly string[];
  /** lastHeaders and the two RateLimit headers, whose values are set for each replay. */
  limitedHeaders: string[] | undefined;
}

/**
 * The answers held for one method and URL. Few bodies (the common case: one read asked over
 * and over): a list compared byte for byte. Many (one function asked with many arguments): a
 * map by the body's bytes as latin1 text, so that a lookup stays one hash.
 */
interface PathSlot {
  list: LaneEntry[];
  byBody: Map<string, LaneEntry[]> | undefined;
}
/** Bodies per slot above which it is indexed by body. */
const LIST_MAX = 8;
/**
 * A hit tells the eviction order at most this often per entry: the order stays least recently
 * used to within this time, and a hot entry costs one Map lookup per hit instead of an LRU move.
 */
const TOUCH_MS = 250;

/** Headers never replayed: recomputed per answer, or Node's own. */
const NOT_REPLAYED = new Set([
  // The asking client's quotas, made for each replay.
  RATE_LIMIT_POLICY_HEADER,
  RATE_LIMIT_HEADER,
  'content-length',
  'connection',
  'date',
  'keep-alive',
  'transfer-encoding',
  // The held answer's cost may have been a miss's; a replay is a hit and says its own.
  COST_HEADER,
]);

export interface FastLaneOptions {
  readonly maxBytes?: number;
  readonly maxBodyBytes?: number;
  /** While true every request takes the full path (which closes kept-alive connections). */
  readonly isDraining: () => boolean;
  /** As the full path's onResponse hook: route pattern, method, status, seconds. */
  readonly onAnswered: (route: string, method: string, status: number, seconds: number) => void;
  /** The access log line, when request logging is on (LOG_LEVEL info or below). */
  readonly logRequest?: ((fields: Record<string, unknown>) => void) | undefined;
  /**
   * The admission path (src/http/admission/), required: it decides every request before the
   * lane or Fastify sees it, and the lane answers only a request it admitted. A refused request
   * goes to Fastify, whose admission hook answers the refusal.
   */
  readonly admission: Pick<Admission, 'admit'>;
  /** Costs of answers (docs/usage.md): a replay of a metered route carries its hit cost. */
  readonly costs?: Costs | undefined;
  /** Where each metered replay's usage goes (the full path's onResponse records the others). */
  readonly usage?: UsageSink | undefined;
  /** Take a replay's cost from the key's unit quota (Admission.charge). */
  readonly charge?: Charge | undefined;
}

/**
 * Offer the answer being sent for replay by the fast lane (called by a route handler before
 * it sends a success). The lane takes it only when the answer is sent as text with status 200.
 */
export function offerReplay(request: FastifyRequest, reuse: LaneReuse | undefined): void {
  if (reuse === undefined) return;
  (request.raw as LaneRequest)[OFFER] = {
    reuse,
    dynamic: replayHeaders(reuse),
    route: request.routeOptions.url ?? 'unmatched',
    url: request.url,
    params: request.params,
  };
}

export class FastLane {
  /**
   * The eviction order and the byte bound (keyed by the entry itself). Lookups never go
   * through it: they use #slots, and a hit touches the order at most every TOUCH_MS.
   */
  readonly #order: LRUCache<LaneEntry, LaneEntry>;
  /**
   * Entries by method, then URL as received: a request on a path with none is passed on
   * without reading its body. Both keys are strings Node already made for the request, so a
   * lookup builds no text (a key joining method, URL, headers and body cost more than the
   * rest of a replay, measured).
   */
  readonly #slots = new Map<string, Map<string, PathSlot>>();
  readonly #maxBodyBytes: number;
  readonly #options: FastLaneOptions;
  #served = 0;

  constructor(options: FastLaneOptions) {
    // Required by the type as well: a lane without admission would answer past every rule
    // (a plain JavaScript caller, or a cast, gets this instead of an open door).
    if (typeof options.admission?.admit !== 'function')
      throw new Error('fast lane: the admission path (options.admission) is required');
    this.#options = options;
    this.#maxBodyBytes = options.maxBodyBytes ?? LANE_MAX_BODY_BYTES;
    this.#order = new LRUCache<LaneEntry, LaneEntry>({
      maxSize: options.maxBytes ?? LANE_MAX_BYTES,
      sizeCalculation: (entry) => entry.size,
      dispose: (entry) => this.#unindex(entry),
    });
  }

  /** Answers held now (tests and metrics). */
  get size(): number {
    return this.#order.size;
  }

  /** Answers given by the lane since start (tests: which path answered). */
  get served(): number {
    return this.#served;
  }

  /**
   * Put the lane in front of the app's request handler, replay buffered bodies to Fastify,
   * and capture offered answers. Call after every other onSend hook is added (the captured
   * headers must be the final ones) and before listen.
   */
  install(app: FastifyInstance): void {
    const server = app.server as Server;
    const [fastify, ...others] = server.listeners('request') as ((
      req: IncomingMessage,
      res: ServerResponse,
    ) => void)[];
    if (fastify === undefined || others.length > 0)
      throw new Error('fast lane: expected one request listener');
    server.removeAllListeners('request');
    const admission = this.#options.admission;
    const pass = (req: LaneRequest, res: ServerResponse, verdict: Verdict): void => {
      // Only an admitted request may be answered from the lane; a refusal is Fastify's to send.
      if (!verdict.ok || !this.#take(req, res, fastify, verdict)) fastify(req, res);
    };
    server.on('request', (req: LaneRequest, res: ServerResponse) => {
      let verdict: Verdict | Promise<Verdict>;
      try {
        verdict = admission.admit(req);
      } catch {
        // The hook on the full path decides again and answers whatever went wrong.
        return fastify(req, res);
      }
      if (verdict instanceof Promise)
        verdict.then(
          (v) => pass(req, res, v),
          () => fastify(req, res),
        );
      else pass(req, res, verdict);
    });

    app.addHook('preParsing', (request, _reply, payload, done) => {
      const buffered = (request.raw as LaneRequest)[BUFFERED];
      if (buffered === undefined) return done(null, payload);
      const replay = new Readable({ read() {} });
      if (buffered instanceof Error) replay.destroy(buffered);
      else {
        replay.push(buffered);
        replay.push(null);
      }
      done(null, replay);
    });

    app.addHook('onSend', (request, reply, payload, done) => {
      const raw = request.raw as LaneRequest;
      const offer = raw[OFFER];
      if (
        offer !== undefined &&
        reply.statusCode === 200 &&
        (typeof payload === 'string' || Buffer.isBuffer(payload))
      ) {
        const buffered = raw[BUFFERED];
        const body = buffered instanceof Buffer ? buffered : Buffer.from(request.rawBody ?? '', 'utf8');
        this.#hold(raw, body, reply.getHeaders(), payload, offer);
      }
      done(null, payload);
    });
  }

  /** Serve req from the lane when it can; false = Fastify must handle it (and has not been called). */
  #take(
    req: LaneRequest,
    res: ServerResponse,
    fastify: (req: IncomingMessage, res: ServerResponse) => void,
    verdict: Admitted,
  ) {
    const method = req.method ?? '';
    const url = req.url ?? '';
    const slot = this.#slots.get(method)?.get(url);
    if (slot === undefined) return false;
    const h = req.headers;
    if (
      h['transfer-encoding'] !== undefined ||
      h.expect !== undefined ||
      h['content-encoding'] !== undefined ||
      h.host === undefined ||
      this.#options.isDraining()
    ) {
      return false;
    }
    const length = Number(h['content-length']);
    if (!Number.isSafeInteger(length) || length < 0 || length > this.#maxBodyBytes) return false;
    const start = performance.now();
    const chunks: Buffer[] = [];
    let received = 0;
    /** Answered by the lane, or handed to Fastify: later events of this request are not ours. */
    let settled = false;
    /** The whole body, once its last announced byte arrived and the lane had no answer for it. */
    let unanswered: Buffer | undefined;
    const whole = (): Buffer => (chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks));
    // Listeners stay attached once settled (removing them cost more than the flag, measured).
    req.on('data', (chunk: Buffer) => {
      if (settled) return;
      chunks.push(chunk);
      received += chunk.length;
      if (received !== length) return;
      // The last byte Content-Length announced: answer now, not a tick later at 'end'.
      const body = whole();
      if (this.#serve(slot, req, res, method, body, start, verdict)) settled = true;
      else unanswered = body;
    });
    req.on('error', (err: Error) => {
      if (settled) return;
      settled = true;
      req[BUFFERED] = err;
      fastify(req, res);
    });
    // A miss continues to Fastify only at 'end', when the request is complete, as it expects.
    req.on('end', () => {
      if (settled) return;
      settled = true;
      let body = unanswered;
      if (body === undefined) {
        body = whole();
        if (received === length && this.#serve(slot, req, res, method, body, start, verdict)) return;
      }
      req[BUFFERED] = body;
      fastify(req, res);
    });
    return true;
  }

  /** The entry held for exactly this request, if any. */
  #find(slot: PathSlot, req: IncomingMessage, body: Buffer): LaneEntry | undefined {
    const contentType = req.headers['content-type'];
    const origin = req.headers.origin;
    if (slot.byBody === undefined) {
      for (const e of slot.list)
        if (e.contentType === contentType && e.origin === origin && e.requestBody.equals(body)) return e;
      return undefined;
    }
    const same = slot.byBody.get(body.toString('latin1'));
    if (same !== undefined)
      for (const e of same) if (e.contentType === contentType && e.origin === origin) return e;
    return undefined;
  }

  #serve(
    slot: PathSlot,
    req: LaneRequest,
    res: ServerResponse,
    method: string,
    body: Buffer,
    start: number,
    verdict: Admitted,
  ): boolean {
    const entry = this.#find(slot, req, body);
    if (entry === undefined) return false;
    const now = Date.now();
    if (!entry.reuse.valid(now)) {
      this.#order.delete(entry);
      return false;
    }
    if (now - entry.touched >= TOUCH_MS) {
      entry.touched = now;
      this.#order.get(entry);
    }
    const dynamic = entry.dynamic?.(now);
    if (dynamic !== entry.lastDynamic) {
      entry.lastDynamic = dynamic;
      entry.lastHeaders = dynamic === undefined ? entry.headers : entry.headers.concat(dynamic);
      entry.limitedHeaders = undefined;
    }
    // The quotas' state is the asking client's, so its headers are made for each replay. They
    // go in the last four slots of a list kept with the entry: writeHead reads the list before
    // it returns, so the next replay may fill the same slots (no list made per answer).
    const quotas = entry.meter === undefined ? undefined : verdict.quotas;
    let headers = entry.lastHeaders;
    if (quotas !== undefined && quotas.lines.length > 0) {
      let limited = entry.limitedHeaders;
      if (limited === undefined) {
        limited = entry.lastHeaders.concat(RATE_LIMIT_POLICY_HEADER, '', RATE_LIMIT_HEADER, '');
        entry.limitedHeaders = limited;
      }
      const n = limited.length;
      limited[n - 3] = quotas.policy;
      limited[n - 1] = rateLimitItems(quotas, entry.meter!.units);
      headers = limited;
    }
    sendReplay(res, entry.status, headers, entry.body);
    if (entry.meter !== undefined) this.#options.charge?.(verdict, entry.meter.units);
    this.#served++;
    entry.reuse.served?.();
    const ms = performance.now() - start;
    this.#options.onAnswered(entry.route, method, entry.status, ms / 1000);
    const meter = entry.meter;
    if (meter !== undefined) {
      this.#options.usage?.record({
        key: verdict.key?.name ?? null,
        route: meter.route,
        function: meter.function,
        outcome: 'hit',
        units: meter.units,
        upstreamRequests: 0,
        bytesSent: entry.body.length,
      });
    }
    // The access line the full path writes (server.ts): the cache outcome its Cache-Status tells.
    if (this.#options.logRequest !== undefined) {
      const fields: Record<string, unknown> = {
        method,
        url: entry.url,
        statusCode: entry.status,
        ms: Math.round(ms * 100) / 100,
      };
      const status =
        headerValue(dynamic, CACHE_STATUS_HEADER) ?? headerValue(entry.headers, CACHE_STATUS_HEADER);
      const cache = status === undefined ? undefined : cacheOutcomeOfHeader(status);
      if (cache !== undefined) fields['cache'] = cache;
      if (verdict.key !== undefined) fields['key'] = verdict.key.name;
      this.#options.logRequest(fields);
    }
    return true;
  }

  #hold(
    raw: LaneRequest,
    body: Buffer,
    sent: Record<string, unknown>,
    payload: string | Buffer,
    offer: Offer,
  ): void {
    const method = raw.method ?? '';
    // As received, before Fastify's rewriteUrl (`addr.name` paths): what the lane sees.
    const url = (raw as { originalUrl?: string }).originalUrl ?? raw.url ?? '';
    const dynamicNames = new Set<string>();
    const dynamic = offer.dynamic?.(Date.now()) ?? [];
    for (let i = 0; i < dynamic.length; i += 2) dynamicNames.add((dynamic[i] as string).toLowerCase());
    // Unpooled and exact-sized: a small Buffer.from() is a slice of a shared 8 KiB slab, and
    // one held slice keeps its whole slab alive (measured: +100 MiB RSS with 1M distinct keys).
    const answer = Buffer.allocUnsafeSlow(
      typeof payload === 'string' ? Buffer.byteLength(payload, 'utf8') : payload.length,
    );
    if (typeof payload === 'string') answer.write(payload, 'utf8');
    else payload.copy(answer);
    const headers: string[] = [];
    for (const [name, value] of Object.entries(sent)) {
      if (value === undefined || NOT_REPLAYED.has(name) || dynamicNames.has(name)) continue;
      // A multi-valued header cannot be replayed as one flat pair: keep such answers off the lane.
      if (Array.isArray(value)) return;
      headers.push(name, String(value));
    }
    headers.push('content-length', String(answer.length));
    const costs = this.#options.costs;
    const meter =
      costs !== undefined && metered(verdictOf(raw))
        ? replayMeter(offer.route, offer.params, costs)
        : undefined;
    if (meter !== undefined) headers.push(COST_HEADER, String(meter.units));
    const requestBody = Buffer.allocUnsafeSlow(body.length);
    body.copy(requestBody);
    const entry: LaneEntry = {
      method,
      rawUrl: url,
      contentType: raw.headers['content-type'],
      origin: raw.headers.origin,
      requestBody,
      status: 200,
      headers,
      body: answer,
      reuse: offer.reuse,
      dynamic: offer.dynamic,
      route: offer.route,
      url: offer.url,
      meter,
      size: url.length + requestBody.length + answer.length + headers.join('').length + ENTRY_OVERHEAD_BYTES,
      touched: Date.now(),
      lastDynamic: undefined,
      lastHeaders: headers,
      limitedHeaders: undefined,
    };
    // The answer it replaces (the same request held before) goes first, from the order and the index.
    const slot = this.#slots.get(method)?.get(url);
    const older = slot === undefined ? undefined : this.#find(slot, raw, body);
    if (older !== undefined) this.#order.delete(older);
    this.#order.set(entry, entry);
    // Too large for the lane at all: lru-cache refused it (without calling dispose).
    if (this.#order.has(entry)) this.#index(entry);
  }

  #index(entry: LaneEntry): void {
    let byUrl = this.#slots.get(entry.method);
    if (byUrl === undefined) {
      byUrl = new Map();
      this.#slots.set(entry.method, byUrl);
    }
    let slot = byUrl.get(entry.rawUrl);
    if (slot === undefined) {
      slot = { list: [], byBody: undefined };
      byUrl.set(entry.rawUrl, slot);
    }
    if (slot.byBody === undefined) {
      slot.list.push(entry);
      if (slot.list.length <= LIST_MAX) return;
      slot.byBody = new Map();
      for (const e of slot.list) addTo(slot.byBody, e);
      slot.list = [];
    } else addTo(slot.byBody, entry);
  }

  #unindex(entry: LaneEntry): void {
    const byUrl = this.#slots.get(entry.method);
    const slot = byUrl?.get(entry.rawUrl);
    if (byUrl === undefined || slot === undefined) return;
    if (slot.byBody === undefined) slot.list = slot.list.filter((e) => e !== entry);
    else {
      const bodyKey = entry.requestBody.toString('latin1');
      const same = slot.byBody.get(bodyKey)?.filter((e) => e !== entry);
      if (same === undefined || same.length === 0) slot.byBody.delete(bodyKey);
      else slot.byBody.set(bodyKey, same);
    }
    if (slot.list.length === 0 && (slot.byBody === undefined || slot.byBody.size === 0)) {
      byUrl.delete(entry.rawUrl);
      if (byUrl.size === 0) this.#slots.delete(entry.method);
    }
  }
}

function addTo(byBody: Map<string, LaneEntry[]>, entry: LaneEntry): void {
  const bodyKey = entry.requestBody.toString('latin1');
  const same = byBody.get(bodyKey);
  if (same === undefined) byBody.set(bodyKey, [entry]);
  else same.push(entry);
}

function headerValue(pairs: readonly string[] | undefined, name: string): string | undefined {
  if (pairs === undefined) return undefined;
  for (let i = 0; i < pairs.length; i += 2) if (pairs[i] === name) return pairs[i + 1];
  return undefined;
}
