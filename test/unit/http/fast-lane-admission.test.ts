/**
 * The fast lane's one rule about who may ask (src/http/fast-lane.ts): it cannot be built
 * without the admission path, and it answers only requests admission let in. A small Fastify
 * app with the gateway's own admission hook, error handling and JSON parsing, and one route
 * that offers every answer for replay, so that an exact repeat is the lane's to answer
 * whenever it may.
 */
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { Admission, type AdmissionOptions } from '../../../src/http/admission/admission.js';
import { ApiKeyRing, parseApiKeys } from '../../../src/http/admission/api-keys.js';
import { installAdmission } from '../../../src/http/admission/hook.js';
import { MemoryQuota, type QuotaStore } from '../../../src/http/admission/quota-store.js';
import { installErrorHandling } from '../../../src/http/error-handler.js';
import { FastLane, type FastLaneOptions, offerReplay } from '../../../src/http/fast-lane.js';
import { installJsonParsing } from '../../../src/http/raw-body.js';
import { trackRoutes } from '../../../src/http/route-table.js';
import { laterQuota } from '../../support/later-quota.js';

const GOOD = 'k-good-0123456789abcdef';
const LIMITED = 'k-limited-0123456789abcdef';
const PATH = '/contract-calls/echo';

interface Running {
  readonly url: string;
  readonly lane: FastLane;
  /** Requests the route handler answered (the full path). */
  handled(): number;
}

const apps: FastifyInstance[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});

/** The gateway's front in small: admission decides, the lane replays, the route echoes. */
async function serve(
  options: Omit<AdmissionOptions, 'trustProxy' | 'quota'> & { quota?: QuotaStore },
  laneAdmission?: FastLaneOptions['admission'],
): Promise<Running> {
  const app = Fastify();
  apps.push(app);
  installJsonParsing(app);
  installErrorHandling(app, trackRoutes(app));
  const admission = new Admission({ trustProxy: 0, quota: new MemoryQuota(), ...options });
  installAdmission(app, admission);
  const lane = new FastLane({
    admission: laneAdmission ?? admission,
    isDraining: () => false,
    onAnswered: () => {},
  });
  lane.install(app);
  let handled = 0;
  app.post(PATH, async (request, reply) => {
    handled += 1;
    offerReplay(request, { valid: () => true });
    reply.type('application/json; charset=utf-8');
    return JSON.stringify({ echo: request.body });
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}${PATH}`, lane, handled: () => handled };
}

async function ask(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; code?: string }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ n: 1 }),
  });
  const body = (await res.json()) as { error?: { code: string } };
  return { status: res.status, ...(body.error === undefined ? {} : { code: body.error.code }) };
}

const keys = () =>
  new ApiKeyRing(
    parseApiKeys([
      { name: 'good', key: GOOD },
      { name: 'limited', key: LIMITED, requestsPerMinute: 3 },
    ]),
  );

describe('the fast lane and admission', () => {
  it('cannot be built without the admission path', () => {
    const options = { isDraining: () => false, onAnswered: () => {} };
    // @ts-expect-error admission is a required option
    expect(() => new FastLane(options)).toThrow(/admission path/);
    expect(() => new FastLane({ ...options, admission: undefined as never })).toThrow(/admission path/);
  });

  it('replays an admitted exact repeat, and never answers the same bytes for a refused request', async () => {
    const gw = await serve({ keys: keys(), keysRequired: true });
    const key = { 'x-api-key': GOOD };
    expect(await ask(gw.url, key)).toEqual({ status: 200 });
    expect(gw.handled()).toBe(1);
    expect(gw.lane.size).toBe(1);
    // The repeat: the lane's.
    expect(await ask(gw.url, key)).toEqual({ status: 200 });
    expect([gw.lane.served, gw.handled()]).toEqual([1, 1]);
    // The same method, URL, content type and body, refused: neither the lane nor the route.
    const refusedHeaders: Record<string, string>[] = [
      {},
      { 'x-api-key': 'k-wrong-0123456789abcdef' },
      { authorization: 'Bearer nope' },
    ];
    for (const headers of refusedHeaders) {
      expect(await ask(gw.url, headers)).toEqual({ status: 401, code: 'UNAUTHORIZED' });
      expect([gw.lane.served, gw.handled()]).toEqual([1, 1]);
    }
    expect(await ask(gw.url, { authorization: `Bearer ${GOOD}` })).toEqual({ status: 200 });
    expect([gw.lane.served, gw.handled()]).toEqual([2, 1]);
  });

  it('stops replaying to a key the moment its quota is spent', async () => {
    const gw = await serve({ keys: keys() });
    const key = { 'x-api-key': LIMITED };
    for (let i = 0; i < 3; i++) expect((await ask(gw.url, key)).status).toBe(200);
    expect([gw.lane.served, gw.handled()]).toEqual([2, 1]);
    expect(await ask(gw.url, key)).toEqual({ status: 429, code: 'RATE_LIMIT_EXCEEDED' });
    expect([gw.lane.served, gw.handled()]).toEqual([2, 1]);
    // Another key still gets the lane's answer.
    expect(await ask(gw.url, { 'x-api-key': GOOD })).toEqual({ status: 200 });
    expect(gw.lane.served).toBe(3);
  });

  it('waits for a verdict that comes later (a quota in Redis) before it answers', async () => {
    const later = laterQuota(20_000);
    const gw = await serve({ anonymousPerMinute: 2, quota: later });
    expect((await ask(gw.url)).status).toBe(200);
    expect((await ask(gw.url)).status).toBe(200);
    expect([gw.lane.served, gw.handled()]).toEqual([1, 1]);
    expect(await ask(gw.url)).toEqual({ status: 429, code: 'RATE_LIMIT_EXCEEDED' });
    expect([gw.lane.served, gw.handled()]).toEqual([1, 1]);
  });

  it('hands a request whose verdict failed to Fastify, whose admission hook decides again', async () => {
    let calls = 0;
    const failing: FastLaneOptions['admission'] = {
      admit: () => {
        calls += 1;
        throw new Error('quota store exploded');
      },
    };
    const gw = await serve({ keys: keys(), keysRequired: true }, failing);
    expect(await ask(gw.url, { 'x-api-key': GOOD })).toEqual({ status: 200 });
    expect(await ask(gw.url, { 'x-api-key': GOOD })).toEqual({ status: 200 });
    expect(await ask(gw.url)).toEqual({ status: 401, code: 'UNAUTHORIZED' });
    // Every request went to the full path: without a verdict the lane answers nothing.
    expect([calls, gw.lane.served, gw.handled()]).toEqual([3, 0, 2]);
  });
});
