/**
 * `npm run bench`: every benchmark of the gateway in one run, each figure next to a reference
 * measured in the same run (these machines are shared and noisy, so the ratios are what count),
 * written to BENCHMARKS.md and bench/results/latest.json. Load comes from wrk (bench/load.ts).
 *
 *   1. hits      read-only cache hits and the decode endpoint vs a bare node:http server answering
 *                the same bytes, alternating; where the gateway has them (probed first, else
 *                "n/a (route absent)"): the maxBlocks hit, the node-compatible hit, the batch
 *   2. bursts    1,000 concurrent cold requests (1 key, then 100 keys) -> upstream calls
 *   3. miss      gateway latency on a miss minus the upstream's own (50 ms fake node); and the
 *                same through a pool of three upstreams, where upstream lists are supported
 *   hedging      misses against two upstreams, the preferred one 2 s slow, with and without
 *                UPSTREAM_HEDGE_MS (where upstream lists are supported)
 *   4. scale     RSS and hit latency with 10k / 100k / 1M entries in the SQLite store
 *   5. startup   process start to first answered request, vs `node -e ""`
 *
 * Processes: the gateway (`node dist/clarity-cache.mjs`, what `npm start` runs), the reference
 * server, the fake nodes and wrk each run in a process of their own; this one orchestrates.
 *
 * Flags (after `npm run bench --`):
 *   --only=hits,bursts,miss,hedging,scale,startup   run some scenarios (BENCHMARKS.md is not rewritten)
 *   --quick                                 short runs, for trying the harness out
 *   --profile                               instead: the bare reference and the hit scenarios under
 *                                           `node --cpu-prof`, summarized into bench/results/profile-data.md
 *                                           with flame graphs (bench/results/flame-*.svg)
 *   --gateway=<file>                        another build of the gateway (default: package.json "main")
 *   --save-baseline                         also keep this run as bench/results/baseline.json,
 *                                           the "before" column of later runs
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import { hashArguments, readOnlyKey } from '../src/cache/keys.js';
import { SqliteStore } from '../src/cache/stores/sqlite.js';
import { parseClarityValue, toHex } from '../src/clarity/index.js';
import { MAINNET_ADDR } from '../test/support/fixtures.js';
import { analyzeProfile, formatProfile } from './analyze-profile.js';
import { CONTRACT, RESULT_HEX } from './fake-node-process.js';
import { flameGraph } from './flamegraph.js';
import type { LoadResult, LoadSpec } from './load.js';
import { type Row, writeReport } from './report.js';
import {
  cpuMsOf,
  type FakeNodeProc,
  formatWithBiome,
  freePort,
  gatewayEnv,
  httpRequest,
  killChildren,
  median,
  memoryOf,
  quantile,
  ROOT,
  round,
  runLoad,
  type Server,
  sleep,
  spawnNode,
  startFakeNodeProcess,
  startGateway,
  startReference,
  timeToExit,
  timeToFirstAnswer,
} from './support.js';

// --- options ---

const SCENARIOS = ['hits', 'bursts', 'miss', 'hedging', 'scale', 'startup'] as const;
type Scenario = (typeof SCENARIOS)[number];

interface Options {
  readonly only: readonly Scenario[];
  readonly quick: boolean;
  readonly profile: boolean;
  readonly gatewayEntry: string;
  readonly saveBaseline: boolean;
}

const UNBUNDLED = 'dist/src/main.js';

function parseOptions(argv: readonly string[]): Options {
  let only: Scenario[] = [...SCENARIOS];
  let quick = false;
  let profile = false;
  let saveBaseline = false;
  let gatewayEntry: string | undefined;
  for (const arg of argv) {
    if (arg === '--quick') quick = true;
    else if (arg === '--profile') profile = true;
    else if (arg === '--save-baseline') saveBaseline = true;
    else if (arg.startsWith('--only=')) {
      only = arg
        .slice('--only='.length)
        .split(',')
        .map((s) => {
          if (!(SCENARIOS as readonly string[]).includes(s)) throw new Error(`unknown scenario "${s}"`);
          return s as Scenario;
        });
    } else if (arg.startsWith('--gateway=')) gatewayEntry = path.resolve(arg.slice('--gateway='.length));
    else throw new Error(`unknown option "${arg}" (see the header of bench/run.ts)`);
  }
  // What `npm start` runs (package.json "main", the production bundle), profiles included: their
  // frames are mapped back to the sources through the bundle's source map.
  const main = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { main?: string })
    .main;
  gatewayEntry ??= path.join(ROOT, main ?? UNBUNDLED);
  if (!fs.existsSync(gatewayEntry))
    throw new Error(`${gatewayEntry} does not exist: run \`npm run build\` first`);
  return { only, quick, profile, gatewayEntry, saveBaseline };
}

const opts = parseOptions(process.argv.slice(2));
const CONNECTIONS = 64;
const WARMUP_S = opts.quick ? 1 : 2;
const DURATION_S = opts.quick ? 3 : 8;
/**
 * Rounds of the hit comparison (gateway and reference alternate); the median round counts. Five:
 * on a shared 2-core machine one round in three or four is disturbed by someone else's work.
 */
const HIT_ROUNDS = opts.quick ? 1 : 5;
/** Rounds of the scale scenario (three gateways, two loads each per round). */
const SCALE_ROUNDS = opts.quick ? 1 : 3;
const BURST = 1000;
const BURST_KEYS = 100;
const MISS_PAIRS = opts.quick ? 30 : 150;
const UPSTREAM_DELAY_MS = 50;
const SCALE_SIZES = [10_000, 100_000, 1_000_000];
const STARTUPS = 5;
const HOT_CACHE_MAX_ENTRIES = 10_000;
/**
 * Connections of the scale scenario's unsaturated runs: one request at a time, so that the p99 is
 * the latency of a hit and not of a queue.
 */
const SCALE_SERIAL_CONNECTIONS = 1;

const RO_PATH = `/contract-calls/read-only/${MAINNET_ADDR}/${CONTRACT}/get-info`;
const RO_BODY = '{"functionArgs":[]}';
const ENTRY_PATH = `/contract-calls/read-only/${MAINNET_ADDR}/${CONTRACT}/get-entry`;
const entryBody = (id: number | bigint): string => `{"functionArgs":[{"type":"uint","value":"${id}"}]}`;
const DECODE_PATH = '/contract-calls/decode-clarity-value';
const DECODE_BODY = JSON.stringify({ clarityValue: RESULT_HEX });
const ABI_PATH = `/contract-calls/abi/${MAINNET_ADDR}/${CONTRACT}`;

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'clarity-bench-'));
let dirs = 0;
const freshDir = (name: string): string => {
  const dir = path.join(tmpRoot, `${++dirs}-${name}`);
  fs.mkdirSync(dir, { recursive: true });
  return dir;
};

const log = (msg: string): void => {
  process.stderr.write(`[bench ${((performance.now() - T0) / 1000).toFixed(1).padStart(6)} s] ${msg}\n`);
};
const T0 = performance.now();

async function expectOk(url: string, body?: string): Promise<string> {
  const res = await httpRequest(url, body === undefined ? {} : { body });
  if (res.status !== 200) throw new Error(`${url}: HTTP ${res.status} ${res.body.slice(0, 300)}`);
  return res.body;
}

const gateway = (
  upstream: string,
  dataDir: string,
  env: Record<string, string> = {},
  nodeFlags: string[] = [],
) => startGateway({ entry: opts.gatewayEntry, upstream, dataDir, env, nodeFlags });

const load = (url: string, body: string, extra: Partial<LoadSpec> = {}): LoadSpec => ({
  url,
  method: 'POST',
  body,
  connections: CONNECTIONS,
  warmupSeconds: WARMUP_S,
  durationSeconds: DURATION_S,
  ...extra,
});

// --- 1. cache hits vs the Node ceiling ---

export interface HitFigures {
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  readonly cpuUsPerRequest: number;
  readonly rounds: Measured[];
}

/** Each figure is the median of its rounds. */
function medianRound(rounds: Measured[]): HitFigures {
  return {
    rps: median(rounds.map((r) => r.rps)),
    p50: median(rounds.map((r) => r.latencyMs.p50)),
    p99: median(rounds.map((r) => r.latencyMs.p99)),
    cpuUsPerRequest: median(rounds.map((r) => r.serverCpuUsPerRequest)),
    rounds,
  };
}

/** An optional feature of the gateway, measured only when a probe shows its route answers. */
interface HitFeature {
  readonly path: string;
  readonly body: string;
  /** The gateway's answer to it (what the reference answers on the same path). */
  readonly bytes: string;
}

/** Either the feature's request, or why it is not measured. */
type Probed = HitFeature | { readonly absent: string };

const isPresent = (p: Probed): p is HitFeature => !('absent' in p);

/**
 * Probe a route of a newer gateway: answered 200 twice (the second answer from the cache, which
 * `verify` checks) means present; 404 (no route) or 400 (an unknown field) means absent.
 */
async function probe(
  gwUrl: string,
  p: string,
  body: string,
  verify: (second: { status: number; body: string; cacheStatus: string }) => string | undefined,
): Promise<Probed> {
  const first = await httpRequest(`${gwUrl}${p}`, { body });
  if (first.status === 404 || first.status === 400) return { absent: `route absent (HTTP ${first.status})` };
  if (first.status !== 200) throw new Error(`probe ${p}: HTTP ${first.status} ${first.body.slice(0, 300)}`);
  const second = await httpRequestWithHeaders(`${gwUrl}${p}`, body);
  const problem = verify(second);
  if (problem !== undefined) throw new Error(`probe ${p}: ${problem}: ${second.body.slice(0, 300)}`);
  return { path: p, body, bytes: second.body };
}

/** One POST, keeping the Cache-Status header (the probes check that the answer is a hit). */
function httpRequestWithHeaders(
  url: string,
  body: string,
): Promise<{ status: number; body: string; cacheStatus: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: 'POST', agent: false, headers: { 'content-type': 'application/json' }, timeout: 30_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString('utf8'),
            cacheStatus: String(res.headers['cache-status'] ?? ''),
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`timeout: ${url}`)));
    req.on('error', reject);
    req.end(body);
  });
}

const isHit = (cacheStatus: string): boolean => /(^|;)\s*hit\b/.test(cacheStatus);

/** docs/freshness.md: a block bound the cached entry meets. */
const MAX_BLOCKS_BODY = '{"functionArgs":[],"cacheControl":{"maxBlocks":1000}}';
/** Section 5: the node's own route and body shape. */
const NODE_PATH = `/v2/contracts/call-read/${MAINNET_ADDR}/${CONTRACT}/get-info`;
const NODE_BODY = JSON.stringify({ sender: MAINNET_ADDR, arguments: [] });
/** Section 4: 20 distinct cached calls in one batch. */
const BATCH_PATH = '/contract-calls/batch';
const BATCH_SIZE = 20;
const BATCH_IDS = Array.from({ length: BATCH_SIZE }, (_, i) => i);
const BATCH_BODY = JSON.stringify({
  calls: BATCH_IDS.map((id) => ({
    contractAddress: MAINNET_ADDR,
    contractName: CONTRACT,
    functionName: 'get-entry',
    functionArgs: [{ type: 'uint', value: String(id) }],
  })),
});
/** The same 20 calls one by one (wrk picks one of them per request: get-entry(u0…u19)). */
const BATCH_SINGLES_SPREAD = {
  count: BATCH_SIZE,
  prefix: '{"functionArgs":[{"type":"uint","value":"',
  suffix: '"}]}',
};

async function probeFeatures(gwUrl: string) {
  const maxBlocks = await probe(gwUrl, RO_PATH, MAX_BLOCKS_BODY, (r) =>
    r.status !== 200 || !isHit(r.cacheStatus) ? `not a hit (Cache-Status "${r.cacheStatus}")` : undefined,
  );
  const nodeCompat = await probe(gwUrl, NODE_PATH, NODE_BODY, (r) =>
    r.status !== 200 || !r.body.includes('"okay":true') ? 'not {"okay":true,…}' : undefined,
  );
  // The batch's calls are cached through the single endpoint first: a batch of 20 hits.
  for (const id of BATCH_IDS) await expectOk(`${gwUrl}${ENTRY_PATH}`, entryBody(id));
  const batch = await probe(gwUrl, BATCH_PATH, BATCH_BODY, (r) => {
    const results = (JSON.parse(r.body) as { data?: { results?: { meta?: { cacheStatus?: string } }[] } })
      .data?.results;
    if (results?.length !== BATCH_SIZE) return `not ${BATCH_SIZE} results`;
    const misses = results.filter((it) => !isHit(it.meta?.cacheStatus ?? ''));
    return misses.length > 0 ? `${misses.length} items are not hits` : undefined;
  });
  return { maxBlocks, nodeCompat, batch };
}

type RunName =
  | 'gwRo'
  | 'refRo'
  | 'floorRo'
  | 'gwDecode'
  | 'refDecode'
  | 'gwMaxBlocks'
  | 'gwNode'
  | 'refNode'
  | 'gwBatch'
  | 'refBatch';

async function hits(node: FakeNodeProc) {
  const gw = await gateway(node.url, freshDir('hits'));
  try {
    // Warm: the first read-only call is a miss that stores the tuple; the rest are hits.
    await node.call({ cmd: 'resetStats' });
    const roBytes = await expectOk(`${gw.url}${RO_PATH}`, RO_BODY);
    if ((await expectOk(`${gw.url}${RO_PATH}`, RO_BODY)) !== roBytes)
      throw new Error('hit differs from miss');
    const decodeBytes = await expectOk(`${gw.url}${DECODE_PATH}`, DECODE_BODY);
    const features = await probeFeatures(gw.url);
    const answers: Record<string, string> = { [RO_PATH]: roBytes, [DECODE_PATH]: decodeBytes };
    for (const f of [features.nodeCompat, features.batch]) if (isPresent(f)) answers[f.path] = f.bytes;
    const warmUpstreamCalls = await node.count('call-read');
    const ref = await startReference(answers, freshDir('reference'));
    const floor = await startReference(answers, freshDir('fastify-floor'), 'bench/fastify-floor.ts');
    try {
      if ((await expectOk(`${floor.url}${RO_PATH}`, RO_BODY)) !== roBytes)
        throw new Error('floor bytes differ');
      if ((await expectOk(`${ref.url}${RO_PATH}`, RO_BODY)) !== roBytes)
        throw new Error('reference bytes differ');
      const runs: Record<RunName, Measured[]> = {
        gwRo: [],
        refRo: [],
        floorRo: [],
        gwDecode: [],
        refDecode: [],
        gwMaxBlocks: [],
        gwNode: [],
        refNode: [],
        gwBatch: [],
        refBatch: [],
      };
      /** Upstream calls made while each kind of run was under load (all should be hits: 0). */
      const upstreamDuring: Partial<Record<RunName, number>> = {};
      const batchSerial = { batch: [] as Measured[], singles: [] as Measured[] };
      for (let round = 0; round < HIT_ROUNDS; round++) {
        // Alternate the order every round, so that a slow patch of the machine favours no one.
        const ro: [RunName, Server, string, string][] = [
          ['refRo', ref, RO_PATH, RO_BODY],
          ['gwRo', gw, RO_PATH, RO_BODY],
          ['floorRo', floor, RO_PATH, RO_BODY],
        ];
        if (isPresent(features.maxBlocks)) ro.push(['gwMaxBlocks', gw, RO_PATH, MAX_BLOCKS_BODY]);
        if (isPresent(features.nodeCompat))
          ro.push(['gwNode', gw, NODE_PATH, NODE_BODY], ['refNode', ref, NODE_PATH, NODE_BODY]);
        if (isPresent(features.batch))
          ro.push(['gwBatch', gw, BATCH_PATH, BATCH_BODY], ['refBatch', ref, BATCH_PATH, BATCH_BODY]);
        const decode: [RunName, Server, string, string][] = [
          ['refDecode', ref, DECODE_PATH, DECODE_BODY],
          ['gwDecode', gw, DECODE_PATH, DECODE_BODY],
        ];
        const order = round % 2 === 0 ? [...ro, ...decode] : [...ro.reverse(), ...decode.reverse()];
        for (const [name, server, p, body] of order) {
          log(`hits round ${round + 1}/${HIT_ROUNDS}: ${name}`);
          const before = server === gw ? await node.count('call-read') : 0;
          runs[name].push(await measure(server, `${server.url}${p}`, body));
          if (server === gw)
            upstreamDuring[name] = (upstreamDuring[name] ?? 0) + (await node.count('call-read')) - before;
        }
        if (isPresent(features.batch)) {
          // One keep-alive connection, one request at a time: a batch of 20 against 20 singles.
          const serial = { connections: 1, warmupSeconds: 1, durationSeconds: Math.max(2, DURATION_S / 2) };
          const pair = [
            async () =>
              batchSerial.batch.push(await measure(gw, `${gw.url}${BATCH_PATH}`, BATCH_BODY, serial)),
            async () =>
              batchSerial.singles.push(
                await measure(gw, `${gw.url}${ENTRY_PATH}`, '', { ...serial, spread: BATCH_SINGLES_SPREAD }),
              ),
          ];
          if (round % 2 === 1) pair.reverse();
          log(`hits round ${round + 1}/${HIT_ROUNDS}: batch vs ${BATCH_SIZE} singles, one connection`);
          for (const run of pair) await run();
        }
      }
      const upstreamCalls = await node.count('call-read');
      const memory = memoryOf(gw.proc.pid);
      const present = <T>(p: Probed, v: () => T): T | { absent: string } =>
        'absent' in p ? { absent: p.absent } : v();
      return {
        readOnly: {
          gateway: medianRound(runs.gwRo),
          reference: medianRound(runs.refRo),
          fastifyFloor: medianRound(runs.floorRo),
        },
        decode: { gateway: medianRound(runs.gwDecode), reference: medianRound(runs.refDecode) },
        maxBlocks: present(features.maxBlocks, () => ({
          body: MAX_BLOCKS_BODY,
          gateway: medianRound(runs.gwMaxBlocks),
          upstreamCalls: upstreamDuring.gwMaxBlocks ?? 0,
        })),
        nodeCompat: present(features.nodeCompat, () => ({
          path: NODE_PATH,
          gateway: medianRound(runs.gwNode),
          reference: medianRound(runs.refNode),
          upstreamCalls: upstreamDuring.gwNode ?? 0,
          responseBytes: Buffer.byteLength(answers[NODE_PATH] ?? ''),
        })),
        batch: present(features.batch, () => ({
          size: BATCH_SIZE,
          gateway: medianRound(runs.gwBatch),
          reference: medianRound(runs.refBatch),
          upstreamCalls: upstreamDuring.gwBatch ?? 0,
          responseBytes: Buffer.byteLength(answers[BATCH_PATH] ?? ''),
          serial: { batch: medianRound(batchSerial.batch), singles: medianRound(batchSerial.singles) },
        })),
        /** Upstream calls during the whole scenario: the warm-up misses only. */
        upstreamCalls,
        warmUpstreamCalls,
        gatewayMemory: memory,
        responseBytes: { readOnly: Buffer.byteLength(roBytes), decode: Buffer.byteLength(decodeBytes) },
      };
    } finally {
      await ref.proc.stop();
      await floor.proc.stop();
    }
  } finally {
    await gw.proc.stop();
  }
}

/** A measured run plus what the server spent on it. */
export interface Measured extends LoadResult {
  /** Server CPU time (user + system, all threads) per answered request over the measured run, µs. */
  readonly serverCpuUsPerRequest: number;
  /** Server CPU over the measured run, % of one core. */
  readonly serverCpuPct: number;
}

/**
 * Load `url` from a load-generator process: a warm-up run first (a process of its own, not
 * measured), then the measured run, with the server's CPU time read from /proc around it.
 */
async function measure(
  server: Server,
  url: string,
  body: string,
  extra: Partial<LoadSpec> = {},
): Promise<Measured> {
  const spec = load(url, body, extra);
  const check = (r: LoadResult): LoadResult => {
    if (r.non2xx > 0 || r.errors > 0) {
      throw new Error(`${url}: ${r.non2xx} non-2xx answers and ${r.errors} errors under load`);
    }
    return r;
  };
  if (spec.warmupSeconds > 0) {
    check(await runLoad({ ...spec, durationSeconds: spec.warmupSeconds, warmupSeconds: 0 }));
  }
  const cpu0 = cpuMsOf(server.proc.pid);
  const result = check(await runLoad({ ...spec, warmupSeconds: 0 }));
  const cpuMs = cpuMsOf(server.proc.pid) - cpu0;
  return {
    ...result,
    serverCpuUsPerRequest: round((cpuMs * 1000) / Math.max(1, result.ok + result.non2xx), 1),
    serverCpuPct: Math.round((cpuMs / (result.durationSeconds * 1000)) * 100),
  };
}

// --- 2. cold bursts ---

interface BurstResult {
  readonly requests: number;
  readonly distinctKeys: number;
  readonly callRead: number;
  readonly otherUpstream: number;
  readonly statuses: Record<string, number>;
  /** Responses that arrived before the upstream was let go: must be 0 for a fair test. */
  readonly answeredBeforeRelease: number;
  readonly heldAtUpstream: number;
  readonly wallMs: number;
}

/**
 * Fire `BURST` requests at once, each on a connection of its own, while the fake node holds
 * every call-read; release once every request has been written and the gateway had time to
 * read them, then count what reached the node.
 */
async function burst(gwUrl: string, node: FakeNodeProc, ids: readonly bigint[]): Promise<BurstResult> {
  await node.call({ cmd: 'resetStats' });
  await node.call({ cmd: 'gate', kind: 'call-read' });
  const t0 = performance.now();
  let written = 0;
  let released = false;
  let answeredBeforeRelease = 0;
  const statuses: Record<string, number> = {};
  const answers = ids.map(
    (id) =>
      new Promise<void>((resolve) => {
        const body = entryBody(id);
        const req = http.request(
          `${gwUrl}${ENTRY_PATH}`,
          { method: 'POST', agent: false, headers: { 'content-type': 'application/json' }, timeout: 60_000 },
          (res) => {
            if (!released) answeredBeforeRelease += 1;
            res.resume();
            res.on('end', () => {
              const key = String(res.statusCode);
              statuses[key] = (statuses[key] ?? 0) + 1;
              resolve();
            });
          },
        );
        req.on('finish', () => {
          written += 1;
        });
        req.on('timeout', () => req.destroy(new Error('timeout')));
        req.on('error', (err) => {
          statuses[err.message] = (statuses[err.message] ?? 0) + 1;
          resolve();
        });
        req.end(body);
      }),
  );
  // Every request on the wire, at least one at the node, then a quiet second for the gateway
  // to read the rest (bounded: 20 s).
  const deadline = performance.now() + 20_000;
  while ((written < ids.length || (await node.count('call-read')) === 0) && performance.now() < deadline) {
    await sleep(10);
  }
  await sleep(1000);
  const heldAtUpstream = await node.count('call-read');
  released = true;
  await node.call({ cmd: 'release' });
  await Promise.all(answers);
  const wallMs = performance.now() - t0;
  const callRead = await node.count('call-read');
  const total = await node.count();
  return {
    requests: ids.length,
    distinctKeys: new Set(ids).size,
    callRead,
    otherUpstream: total - callRead,
    statuses,
    answeredBeforeRelease,
    heldAtUpstream,
    wallMs: round(wallMs, 0),
  };
}

async function bursts(node: FakeNodeProc) {
  // A long upstream timeout: the held call must not time out and be retried while the gate is shut.
  const gw = await gateway(node.url, freshDir('bursts'), { UPSTREAM_TIMEOUT_MS: '60000' });
  try {
    await expectOk(`${gw.url}${ABI_PATH}`); // the ABI is cached first: the bursts count call-reads
    log(`bursts: ${BURST} identical cold requests`);
    const identical = await burst(
      gw.url,
      node,
      Array.from({ length: BURST }, () => 1_000_000_000n),
    );
    log(`bursts: ${BURST} cold requests over ${BURST_KEYS} keys`);
    const distinct = await burst(
      gw.url,
      node,
      Array.from({ length: BURST }, (_, i) => 2_000_000_000n + BigInt(i % BURST_KEYS)),
    );
    return { identical, distinct };
  } finally {
    await gw.proc.stop();
  }
}

// --- 3. miss overhead (one upstream, and a pool of three) ---

/** Start a gateway on an upstream list, or say why this gateway has no upstream lists. */
async function tryGateway(
  upstreams: string,
  dir: string,
  env: Record<string, string> = {},
): Promise<Server | { absent: string }> {
  try {
    return await gateway(upstreams, dir, env);
  } catch (err) {
    // The gateway's own words when it refused to start (the line naming the variable), if any.
    const lines = (err instanceof Error ? err.message : String(err)).split('\n');
    const said = lines.find((l) => l.includes('STACKS_API_URL')) ?? lines.find((l) => /\S/.test(l)) ?? '?';
    return { absent: `a comma-separated STACKS_API_URL_MAINNET is refused: ${said.trim().slice(0, 200)}` };
  }
}

/** A miss (fresh `get-entry` argument) through a gateway, one keep-alive connection: its time in ms. */
async function timedMiss(gwUrl: string, id: bigint, agent: http.Agent): Promise<number> {
  const t = performance.now();
  const res = await httpRequest(`${gwUrl}${ENTRY_PATH}`, { body: entryBody(id), agent });
  const ms = performance.now() - t;
  if (res.status !== 200) throw new Error(`miss: HTTP ${res.status} ${res.body.slice(0, 300)}`);
  return ms;
}

/** The same call-read sent straight to a fake node. */
async function timedDirect(nodeUrl: string, id: bigint, agent: http.Agent): Promise<number> {
  const body = JSON.stringify({
    sender: MAINNET_ADDR,
    arguments: [toHex(parseClarityValue({ type: 'uint', value: String(id) }))],
  });
  const t = performance.now();
  const res = await httpRequest(`${nodeUrl}/v2/contracts/call-read/${MAINNET_ADDR}/${CONTRACT}/get-entry`, {
    body,
    agent,
  });
  const ms = performance.now() - t;
  if (res.status !== 200) throw new Error(`direct: HTTP ${res.status} ${res.body.slice(0, 300)}`);
  return ms;
}

/** Rotate who goes first: [a, b, c], [b, c, a], [c, a, b], … */
const rotate = <T>(items: readonly T[], i: number): T[] =>
  items.map((_, k) => items[(k + i) % items.length]!);

async function missOverhead(node: FakeNodeProc) {
  // Two more fake nodes, as slow as the first, for the pool of three healthy upstreams.
  const others = [await startFakeNodeProcess(), await startFakeNodeProcess()];
  const gw = await gateway(node.url, freshDir('miss'));
  const pool = await tryGateway([node.url, ...others.map((o) => o.url)].join(','), freshDir('miss-pool'));
  const agents = [0, 1, 2].map(() => new http.Agent({ keepAlive: true, maxSockets: 1 }));
  try {
    await expectOk(`${gw.url}${ABI_PATH}`);
    for (const n of [node, ...others]) {
      await n.call({ cmd: 'delay', ms: UPSTREAM_DELAY_MS, kind: 'call-read' });
      await n.call({ cmd: 'resetStats' });
    }
    const poolGw = 'absent' in pool ? undefined : pool;
    if (poolGw !== undefined) {
      await expectOk(`${poolGw.url}${ABI_PATH}`);
      // A miss answered through the pool: else the list was taken for something else.
      await timedMiss(poolGw.url, 2_999_999_999n, agents[1]!);
    }
    const direct: number[] = [];
    const viaGateway: number[] = [];
    const viaPool: number[] = [];
    const warm = 10;
    log(
      `miss: ${MISS_PAIRS} misses through the gateway${poolGw === undefined ? '' : ', as many through a pool of three'} and ${MISS_PAIRS} direct upstream calls, alternating`,
    );
    for (let i = 0; i < MISS_PAIRS + warm; i++) {
      const id = 3_000_000_000n + BigInt(i);
      const poolId = 3_500_000_000n + BigInt(i);
      let g = 0;
      let d = 0;
      let p = 0;
      const steps: (() => Promise<void>)[] = [
        async () => {
          g = await timedMiss(gw.url, id, agents[0]!);
        },
        async () => {
          d = await timedDirect(node.url, id, agents[2]!);
        },
      ];
      if (poolGw !== undefined)
        steps.push(async () => {
          p = await timedMiss(poolGw.url, poolId, agents[1]!);
        });
      for (const step of rotate(steps, i)) await step();
      if (i >= warm) {
        viaGateway.push(g);
        direct.push(d);
        if (poolGw !== undefined) viaPool.push(p);
      }
    }
    const callRead = await node.count('call-read');
    const gwMedian = median(viaGateway);
    const directMedian = median(direct);
    const paired = viaGateway.map((g, i) => g - direct[i]!);
    return {
      pairs: viaGateway.length,
      upstreamDelayMs: UPSTREAM_DELAY_MS,
      gatewayMs: { p50: round(gwMedian, 3), p90: round(quantile(viaGateway, 0.9), 3) },
      upstreamMs: { p50: round(directMedian, 3), p90: round(quantile(direct, 0.9), 3) },
      overheadMs: round(gwMedian - directMedian, 3),
      pairedOverheadMs: { p50: round(median(paired), 3), p90: round(quantile(paired, 0.9), 3) },
      /** Call-reads at the first node (one per single-upstream miss, one per direct call, and the pool's share). */
      callRead,
      pool:
        poolGw === undefined
          ? { absent: 'absent' in pool ? pool.absent : '' }
          : {
              upstreams: 3,
              gatewayMs: { p50: round(median(viaPool), 3), p90: round(quantile(viaPool, 0.9), 3) },
              overheadMs: round(median(viaPool) - directMedian, 3),
              /** Pool minus single upstream, median of the per-iteration differences. */
              addedMs: round(median(viaPool.map((v, i) => v - viaGateway[i]!)), 3),
              /** Call-reads at each of the three nodes (the first one's include the single gateway's and the direct calls). */
              callReadPerNode: [callRead, ...(await Promise.all(others.map((o) => o.count('call-read'))))],
            },
    };
  } finally {
    for (const a of agents) a.destroy();
    await node.call({ cmd: 'clearFaults' });
    await gw.proc.stop();
    if (!('absent' in pool)) await pool.proc.stop();
    for (const o of others) await o.stop();
  }
}

// --- 3b. hedging: two upstreams, the preferred one answering after 2 s ---

const SLOW_UPSTREAM_MS = 2000;
const HEDGE_MS = 100;
const HEDGED_MISSES = opts.quick ? 6 : 30;
const UNHEDGED_MISSES = opts.quick ? 3 : 10;

async function hedging() {
  const slow = await startFakeNodeProcess();
  const fast = await startFakeNodeProcess();
  const gateways: Server[] = [];
  const agents = [0, 1, 2].map(() => new http.Agent({ keepAlive: true, maxSockets: 1 }));
  try {
    await slow.call({ cmd: 'delay', ms: SLOW_UPSTREAM_MS, kind: 'call-read' });
    await fast.call({ cmd: 'delay', ms: UPSTREAM_DELAY_MS, kind: 'call-read' });
    // The slow node first in the list: the preferred one (the lower priority).
    const list = `${slow.url},${fast.url}`;
    const plain = await tryGateway(list, freshDir('hedge-off'));
    if ('absent' in plain) return { absent: plain.absent };
    gateways.push(plain);
    const hedged = await tryGateway(list, freshDir('hedge-on'), { UPSTREAM_HEDGE_MS: String(HEDGE_MS) });
    if ('absent' in hedged) return { absent: hedged.absent };
    gateways.push(hedged);
    for (const g of gateways) await expectOk(`${g.url}${ABI_PATH}`);
    const off: number[] = [];
    const on: number[] = [];
    const direct: number[] = [];
    log(
      `hedging: ${UNHEDGED_MISSES} misses without and ${HEDGED_MISSES} with UPSTREAM_HEDGE_MS=${HEDGE_MS} (slow node ${SLOW_UPSTREAM_MS} ms, fast ${UPSTREAM_DELAY_MS} ms)`,
    );
    for (let i = 0; i < HEDGED_MISSES; i++) {
      const steps: (() => Promise<void>)[] = [
        async () => {
          on.push(await timedMiss(hedged.url, 5_000_000_000n + BigInt(i), agents[1]!));
        },
        async () => {
          direct.push(await timedDirect(fast.url, 5_000_000_000n + BigInt(i), agents[2]!));
        },
      ];
      if (i < UNHEDGED_MISSES)
        steps.push(async () => {
          off.push(await timedMiss(plain.url, 6_000_000_000n + BigInt(i), agents[0]!));
        });
      for (const step of rotate(steps, i)) await step();
    }
    const fastMs = median(direct);
    const figures = (values: number[]) => ({
      misses: values.length,
      p50: round(median(values), 3),
      p99: round(quantile(values, 0.99), 3),
      p50Ratio: round(median(values) / fastMs, 2),
      p99Ratio: round(quantile(values, 0.99) / fastMs, 2),
    });
    return {
      slowMs: SLOW_UPSTREAM_MS,
      hedgeMs: HEDGE_MS,
      fastNodeMs: { p50: round(fastMs, 3), p99: round(quantile(direct, 0.99), 3) },
      withoutHedging: figures(off),
      withHedging: figures(on),
      callReads: { slow: await slow.count('call-read'), fast: await fast.count('call-read') },
    };
  } finally {
    for (const a of agents) a.destroy();
    for (const g of gateways) await g.proc.stop();
    await slow.stop();
    await fast.stop();
  }
}

// --- 4. scale ---

const INSERT_BATCH = 100_000;

/** Keys exactly as the gateway builds them for get-entry(u<id>) with the default sender. */
function entryKey(id: number): string {
  const argHex = toHex(parseClarityValue({ type: 'uint', value: String(id) }, 'functionArgs[0]'));
  return readOnlyKey('mainnet', MAINNET_ADDR, CONTRACT, 'get-entry', MAINNET_ADDR, hashArguments([argHex]));
}

/**
 * Insert the rows of ids [from, to) straight into the gateway's SQLite file: one transaction
 * per batch, keys sorted within a batch and a large page cache for this connection only, so
 * that the primary-key index is not built by a million random single-page writes.
 */
function seed(dir: string, from: number, to: number): number {
  const t = performance.now();
  const db = new Database(path.join(dir, 'clarity-cache.db'));
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = OFF');
    db.pragma('cache_size = -524288'); // 512 MiB, this seeding connection only
    const insert = db.prepare(
      'INSERT INTO entries (key, value, stored_at, expires_at) VALUES (?, ?, ?, NULL)',
    );
    const now = Date.now();
    const batch = db.transaction((keys: string[]) => {
      for (const key of keys) insert.run(key, RESULT_HEX, now);
    });
    for (let lo = from; lo < to; lo += INSERT_BATCH) {
      const keys: string[] = [];
      for (let id = lo; id < Math.min(to, lo + INSERT_BATCH); id++) keys.push(entryKey(id));
      keys.sort();
      batch(keys);
    }
    db.pragma('wal_checkpoint(TRUNCATE)');
  } finally {
    db.close();
  }
  return performance.now() - t;
}

interface ScaleGateway {
  readonly entries: number;
  readonly dir: string;
  readonly seedMs: number;
  readonly gw: Server;
  readonly memoryIdle: ReturnType<typeof memoryOf>;
  /** As fast as answered over 64 connections. */
  readonly rounds: Measured[];
  /** Over SCALE_SERIAL_CONNECTIONS connection(s): the latency of a hit rather than of a queue. */
  readonly serialRounds: Measured[];
}

async function scale(node: FakeNodeProc) {
  // One file per size, each seeded from empty; then one gateway per file, all started before
  // the first load so that the sizes can take turns round after round, like the hit scenario.
  const sizes: ScaleGateway[] = [];
  try {
    for (const size of SCALE_SIZES) {
      const dir = freshDir(`scale-${size}`);
      // The gateway's own store creates the file and table; the rows are then written directly.
      await SqliteStore.open(dir, 'clarity-cache.db', { sweepIntervalMs: 0 }).close();
      log(`scale: seeding ${size} entries`);
      const seedMs = seed(dir, 0, size);
      const gw = await gateway(node.url, dir, { HOT_CACHE_MAX_ENTRIES: String(HOT_CACHE_MAX_ENTRIES) });
      await node.call({ cmd: 'resetStats' });
      // The first and last seeded keys are hits: the key layout matches the gateway's.
      await expectOk(`${gw.url}${ENTRY_PATH}`, entryBody(0));
      await expectOk(`${gw.url}${ENTRY_PATH}`, entryBody(size - 1));
      if ((await node.count('call-read')) !== 0)
        throw new Error('scale: a seeded key missed (key layout mismatch)');
      sizes.push({
        entries: size,
        dir,
        seedMs,
        gw,
        memoryIdle: memoryOf(gw.proc.pid),
        rounds: [],
        serialRounds: [],
      });
    }
    await node.call({ cmd: 'resetStats' });
    for (let round = 0; round < SCALE_ROUNDS; round++) {
      const order = round % 2 === 0 ? sizes : [...sizes].reverse();
      for (const s of order) {
        log(`scale round ${round + 1}/${SCALE_ROUNDS}: ${s.entries} entries, hits spread over every key`);
        const spread = {
          count: s.entries,
          prefix: '{"functionArgs":[{"type":"uint","value":"',
          suffix: '"}]}',
        };
        s.rounds.push(
          await measure(s.gw, `${s.gw.url}${ENTRY_PATH}`, '', { spread, warmupSeconds: WARMUP_S + 1 }),
        );
        s.serialRounds.push(
          await measure(s.gw, `${s.gw.url}${ENTRY_PATH}`, '', {
            spread,
            warmupSeconds: 0,
            connections: SCALE_SERIAL_CONNECTIONS,
          }),
        );
      }
    }
    const misses = await node.count('call-read');
    if (misses !== 0) throw new Error(`scale: ${misses} requests missed the cache`);
    return sizes.map((s) => {
      const figures = medianRound(s.rounds);
      return {
        entries: s.entries,
        dbFileMiB: round(fs.statSync(path.join(s.dir, 'clarity-cache.db')).size / 1024 / 1024, 1),
        seedMs: round(s.seedMs, 0),
        hotTierShare: round(Math.min(1, HOT_CACHE_MAX_ENTRIES / s.entries), 3),
        memoryIdle: s.memoryIdle,
        /** After every round of load. */
        memory: memoryOf(s.gw.proc.pid),
        rps: figures.rps,
        p50: figures.p50,
        p99: figures.p99,
        cpuUsPerRequest: figures.cpuUsPerRequest,
        serial: { connections: SCALE_SERIAL_CONNECTIONS, ...medianRound(s.serialRounds) },
        rounds: s.rounds,
      };
    });
  } finally {
    for (const s of sizes) await s.gw.proc.stop();
  }
}

// --- 5. start-up ---

async function startup(node: FakeNodeProc) {
  const gateway: number[] = [];
  const reference: number[] = [];
  // The unbundled tsc output too, when npm start runs a bundle: what the bundling saves.
  const unbundledEntry = path.join(ROOT, UNBUNDLED);
  const compareUnbundled = opts.gatewayEntry !== unbundledEntry && fs.existsSync(unbundledEntry);
  const unbundled: number[] = [];
  const firstAnswer = async (entry: string): Promise<number> => {
    const port = await freePort();
    const env = gatewayEnv({ entry, upstream: node.url, dataDir: freshDir('startup') }, port);
    const { ms, proc } = await timeToFirstAnswer(
      () => spawnNode([entry], env),
      `http://127.0.0.1:${port}${DECODE_PATH}`,
      DECODE_BODY,
    );
    await proc.stop();
    return ms;
  };
  for (let i = 0; i < STARTUPS; i++) {
    log(`startup ${i + 1}/${STARTUPS}`);
    gateway.push(await firstAnswer(opts.gatewayEntry));
    reference.push(await timeToExit(['-e', '']));
    if (compareUnbundled) unbundled.push(await firstAnswer(unbundledEntry));
  }
  const figures = (values: number[]) => ({
    median: round(median(values), 1),
    all: values.map((v) => round(v, 1)),
  });
  return {
    runs: STARTUPS,
    gatewayMs: figures(gateway),
    nodeEmptyMs: figures(reference),
    ...(compareUnbundled ? { unbundledMs: figures(unbundled) } : {}),
  };
}

// --- profile mode ---

/** Folded stacks kept in the repository per profile: the heaviest ones (the full set is large). */
const FOLDED_KEPT = 80;

async function profile(node: FakeNodeProc) {
  const outDir = path.join(ROOT, 'bench/results/profile');
  const resultsDir = path.join(ROOT, 'bench/results');
  fs.rmSync(outDir, { recursive: true, force: true });
  fs.mkdirSync(outDir, { recursive: true });
  const sections: string[] = [];
  const summaries: Record<string, ReturnType<typeof analyzeProfile>> = {};
  // The bare reference too (answering the read-only hit's bytes): what the same load costs Node itself.
  const warm = await gateway(node.url, freshDir('profile-warm'));
  const roBytes = await expectOk(`${warm.url}${RO_PATH}`, RO_BODY);
  await warm.proc.stop();
  for (const [name, p, body] of [
    ['reference', RO_PATH, RO_BODY],
    ['read-only-hit', RO_PATH, RO_BODY],
    ['decode', DECODE_PATH, DECODE_BODY],
  ] as const) {
    // Under tsx (the reference) the loader thread writes a profile too: a directory of its own,
    // then the main thread's profile (the largest) is kept.
    const profDir = path.join(outDir, name);
    const flags = ['--cpu-prof', `--cpu-prof-dir=${profDir}`];
    const server =
      name === 'reference'
        ? await startReference({ [RO_PATH]: roBytes }, freshDir('profile-ref'), undefined, flags)
        : await gateway(node.url, freshDir(`profile-${name}`), {}, flags);
    let result: Measured;
    try {
      await expectOk(`${server.url}${p}`, body);
      log(`profile: ${name} under load`);
      result = await measure(server, `${server.url}${p}`, body, { durationSeconds: 10 });
    } catch (err) {
      await server.proc.stop();
      throw err;
    }
    // A clean exit (SIGTERM -> graceful close -> exit 0) is what writes the profile.
    const code = await server.proc.stop();
    if (code !== 0) throw new Error(`profiled ${name} exited ${code}: ${server.proc.output()}`);
    const written = fs
      .readdirSync(profDir)
      .filter((f) => f.endsWith('.cpuprofile'))
      .map((f) => path.join(profDir, f))
      .sort((a, b) => fs.statSync(b).size - fs.statSync(a).size);
    if (written[0] === undefined) throw new Error(`no profile written by ${name}`);
    const file = path.join(outDir, `${name}.cpuprofile`);
    fs.renameSync(written[0], file);
    fs.rmSync(profDir, { recursive: true, force: true });
    const summary = analyzeProfile(file, 20);
    summaries[name] = summary;
    const flame = flameGraph(
      file,
      `${name}: node --cpu-prof of ${path.relative(ROOT, opts.gatewayEntry)} under wrk`,
    );
    fs.writeFileSync(path.join(resultsDir, `flame-${name}.svg`), flame.svg);
    fs.writeFileSync(
      path.join(resultsDir, `flame-${name}.folded.txt`),
      `${flame.folded.split('\n').slice(0, FOLDED_KEPT).join('\n')}\n`,
    );
    fs.writeFileSync(path.join(outDir, `${name}.folded`), flame.folded);
    sections.push(
      `### ${name} (${result.rps} req/s under the profiler, p99 ${result.latencyMs.p99} ms, server CPU ${result.serverCpuUsPerRequest} µs/request, wrk ${result.loadGeneratorCpuPct} % of a core)\n\n` +
        `Flame graph: [flame-${name}.svg](flame-${name}.svg); heaviest folded stacks: [flame-${name}.folded.txt](flame-${name}.folded.txt).\n\n${formatProfile(summary)}`,
    );
  }
  const md = [
    `# Profile data of the hit path (generated)`,
    '',
    `\`npm run bench -- --profile\` on ${new Date().toISOString()}, commit ${gitCommit()}: the gateway under`,
    `\`node --cpu-prof\` (\`${path.relative(ROOT, opts.gatewayEntry)}\`, frames mapped back to src/ and node_modules/ through its`,
    `source map), wrk -t1 -c${CONNECTIONS} for 10 s after a ${WARMUP_S} s warm-up. The reading of these figures and the`,
    'proposals are in profile.md. Raw profiles: `bench/results/profile/*.cpuprofile` (not committed;',
    'open them in Chrome DevTools).',
    '',
    ...sections,
  ].join('\n');
  fs.writeFileSync(path.join(resultsDir, 'profile-data.md'), md);
  fs.writeFileSync(path.join(resultsDir, 'profile.json'), `${JSON.stringify(summaries, null, 2)}\n`);
  formatWithBiome(['bench/results/profile-data.md', 'bench/results/profile.json']);
  process.stdout.write(`${md}\n`);
}

// --- machine and provenance ---

function gitCommit(): string {
  try {
    const sha = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT }).toString().trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src'], { cwd: ROOT })
      .toString()
      .trim();
    return dirty === '' ? sha : `${sha} (src/ has uncommitted changes)`;
  } catch {
    return 'unknown';
  }
}

function machine() {
  const cpuinfo = fs.readFileSync('/proc/cpuinfo', 'utf8');
  const meminfo = fs.readFileSync('/proc/meminfo', 'utf8');
  const memKb = Number(/^MemTotal:\s+(\d+)/m.exec(meminfo)?.[1] ?? 0);
  return {
    nproc: os.availableParallelism(),
    cpu: /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1]?.trim() ?? 'unknown',
    memoryGiB: round(memKb / 1024 / 1024, 1),
    node: process.version,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    loadAverageAtStart: os.loadavg().map((v) => round(v, 2)),
  };
}

// --- the record of a run (bench/results/latest.json) ---

export type HitsResult = Awaited<ReturnType<typeof hits>>;
export type BurstsResult = Awaited<ReturnType<typeof bursts>>;
export type MissResult = Awaited<ReturnType<typeof missOverhead>>;
export type HedgingResult = Awaited<ReturnType<typeof hedging>>;
export type ScaleResult = Awaited<ReturnType<typeof scale>>;
export type StartupResult = Awaited<ReturnType<typeof startup>>;

export interface RunRecord {
  readonly startedAt: string;
  readonly elapsedS: number;
  readonly command: string;
  readonly args: string[];
  /** The gateway file run (`node <file>`); older records lack it (then dist/src/main.js). */
  readonly gatewayEntry?: string;
  readonly commit: string;
  readonly machine: ReturnType<typeof machine>;
  readonly settings: Record<string, unknown>;
  readonly results: {
    hits?: HitsResult;
    bursts?: BurstsResult;
    miss?: MissResult;
    hedging?: HedgingResult;
    scale?: ScaleResult;
    startup?: StartupResult;
  };
}

// --- main ---

async function main(): Promise<void> {
  const node = await startFakeNodeProcess();
  try {
    if (opts.profile) {
      await profile(node);
      return;
    }
    const startedAt = new Date().toISOString();
    const machineInfo = machine();
    const results: RunRecord['results'] = {};
    if (opts.only.includes('startup')) {
      // First, while nothing else has warmed the file-system cache for the gateway more than a build did.
      results.startup = await startup(node);
    }
    if (opts.only.includes('hits')) results.hits = await hits(node);
    if (opts.only.includes('bursts')) results.bursts = await bursts(node);
    if (opts.only.includes('miss')) results.miss = await missOverhead(node);
    if (opts.only.includes('hedging')) results.hedging = await hedging();
    if (opts.only.includes('scale')) results.scale = await scale(node);
    const elapsedS = round((performance.now() - T0) / 1000, 1);
    const run: RunRecord = {
      startedAt,
      elapsedS,
      command: 'npm run bench',
      args: process.argv.slice(2),
      gatewayEntry: path.relative(ROOT, opts.gatewayEntry),
      commit: gitCommit(),
      machine: machineInfo,
      settings: {
        connections: CONNECTIONS,
        warmupS: WARMUP_S,
        durationS: DURATION_S,
        hitRounds: HIT_ROUNDS,
        scaleRounds: SCALE_ROUNDS,
        burst: BURST,
        burstKeys: BURST_KEYS,
        missPairs: MISS_PAIRS,
        slowUpstreamMs: SLOW_UPSTREAM_MS,
        hedgeMs: HEDGE_MS,
        hedgedMisses: HEDGED_MISSES,
        unhedgedMisses: UNHEDGED_MISSES,
        batchSize: BATCH_SIZE,
        upstreamDelayMs: UPSTREAM_DELAY_MS,
        scaleSizes: SCALE_SIZES,
        hotCacheMaxEntries: HOT_CACHE_MAX_ENTRIES,
        scaleSerialConnections: SCALE_SERIAL_CONNECTIONS,
        startups: STARTUPS,
      },
      results,
    };
    const resultsDir = path.join(ROOT, 'bench/results');
    fs.mkdirSync(resultsDir, { recursive: true });
    const complete = opts.only.length === SCENARIOS.length && !opts.quick;
    const jsonFile = path.join(resultsDir, complete ? 'latest.json' : 'partial.json');
    fs.writeFileSync(jsonFile, `${JSON.stringify(run, null, 2)}\n`);
    const written = [path.relative(ROOT, jsonFile)];
    if (opts.saveBaseline) written.push('bench/results/baseline.json');
    if (opts.saveBaseline)
      fs.writeFileSync(path.join(resultsDir, 'baseline.json'), `${JSON.stringify(run, null, 2)}\n`);
    const rows: Row[] = writeReport(run, complete ? path.join(ROOT, 'BENCHMARKS.md') : undefined);
    formatWithBiome(written);
    for (const r of rows) {
      process.stdout.write(
        `${r.status.padEnd(7)} ${r.figure.padEnd(48)} ${r.value.padStart(14)}  ref ${r.reference.padStart(12)}  ${r.ratio.padStart(7)}  ${r.target}\n`,
      );
    }
    log(
      `done in ${elapsedS} s; raw figures in ${path.relative(ROOT, jsonFile)}${complete ? ', report in BENCHMARKS.md' : ''}`,
    );
  } finally {
    await node.stop();
  }
}

const cleanup = (): void => {
  killChildren();
  fs.rmSync(tmpRoot, { recursive: true, force: true });
};
process.on('SIGINT', () => {
  cleanup();
  process.exit(130);
});
main().then(
  () => cleanup(),
  (err: unknown) => {
    process.stderr.write(
      `bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    cleanup();
    process.exit(1);
  },
);
