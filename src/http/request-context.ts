/**
 * The RequestContext of one HTTP request (src/upstream/node-api.ts), made once per request and
 * kept beside it: routes pass it down to the services and the upstream attempts, which fill in
 * its `usage`; the access log line (server.ts) reads it back once the answer is sent.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RequestContext, UpstreamUsage } from '../upstream/node-api.js';
import { admissionOf, responseOf } from './admission/hook.js';
import { CACHE_STATUS_HEADER } from './reply.js';

const contexts = new WeakMap<FastifyRequest, RequestContext & { readonly usage: UpstreamUsage }>();

/** The request's context: who asks (fair budget waiting), its id, and its upstream usage. */
export function requestContext(request: FastifyRequest): RequestContext {
  let ctx = contexts.get(request);
  if (ctx === undefined) {
    // Who asks, as the admission path decided it (client address behind TRUST_PROXY, API key).
    const verdict = admissionOf(request);
    const key = verdict?.key;
    // Aborted when the client goes away before its answer is sent: a request still waiting
    // for a budget token then leaves the queue and spends nothing. Made only when something
    // asks for it (an upstream wait): an AbortController costs about 10 µs, and a hit never
    // needs one.
    let gone: AbortController | undefined;
    let left = false;
    const res = responseOf(request);
    res?.once('close', () => {
      if (res.writableFinished) return;
      left = true;
      gone?.abort();
    });
    ctx = {
      clientId: verdict?.clientId ?? request.ip,
      requestId: request.id,
      usage: { attempts: 0, ms: 0 },
      get signal(): AbortSignal {
        if (gone === undefined) {
          gone = new AbortController();
          if (left) gone.abort();
        }
        return gone.signal;
      },
      admitUpstream: verdict?.ok === true ? verdict.admitUpstream : undefined,
      keyName: key?.name,
    };
    contexts.set(request, ctx);
  }
  return ctx;
}

/** What the request spent upstream, when a route passed its context down. */
export function upstreamUsageOf(request: FastifyRequest): UpstreamUsage | undefined {
  return contexts.get(request)?.usage;
}

/** hit / miss / coalesced / bypass / stale, read from the answer's RFC 9211 Cache-Status. */
export type CacheOutcomeName = 'hit' | 'miss' | 'coalesced' | 'bypass' | 'stale';

/**
 * The cache outcome an answer reports in its Cache-Status (reply.ts writes it): undefined for
 * answers that did not go through the cache. Read from the header rather than passed around,
 * so the log line says exactly what the client was told.
 */
export function cacheOutcomeOf(reply: FastifyReply): CacheOutcomeName | undefined {
  const header = reply.getHeader(CACHE_STATUS_HEADER);
  return typeof header === 'string' ? cacheOutcomeOfHeader(header) : undefined;
}

/** The cache outcome a Cache-Status value reports (see cacheOutcomeOf). */
export function cacheOutcomeOfHeader(header: string): CacheOutcomeName | undefined {
  const params = header
    .split(';')
    .slice(1)
    .map((p) => p.trim().toLowerCase());
  // stale: a stale entry served (stale-while-revalidate, stale-if-error) or refreshed (fwd=stale).
  if (params.includes('hit')) return params.some((p) => p.startsWith('detail=stale')) ? 'stale' : 'hit';
  const fwd = params.find((p) => p.startsWith('fwd='))?.slice(4);
  if (fwd === 'stale') return 'stale';
  if (fwd === 'request') return 'bypass';
  if (params.includes('collapsed')) return 'coalesced';
  return fwd === undefined ? undefined : 'miss';
}
