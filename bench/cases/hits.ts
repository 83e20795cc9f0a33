/**
 * hits: read-only cache hits and the decode endpoint against the bare node:http reference
 * (bench/reference-server.ts) answering the same bytes, alternating, measured in the same run:
 * wrk -t1 -c64, 2 s warm-up then 8 s, five rounds (quick: one round of 1 s + 3 s), medians; each
 * ratio the median of the per-round ratios. Also the Fastify floor (bench/fastify-floor.ts), and
 * where the gateway has them (probed first, else "n/a (route absent)"): the maxBlocks hit, the
 * node-compatible hit, the batch. Gateway: what `npm start` runs (package.json "main"), SQLite
 * store, LOG_LEVEL=warn. Goals: read-only ≥ 0.85× and p99 ≤ 1.30×, decode ≥ 0.80×,
 * node-compatible ≥ 0.90× the bare server answering its bytes; maxBlocks and batch items
 * ≥ 0.90× the plain hit; batch vs 20 singles ≤ 0.30×.
 *
 *   npm run build && node --import tsx bench/cases/hits.ts
 */
import http from 'node:http';
import { MAINNET_ADDR } from '../../test/support/fixtures.js';
import { CONTRACT } from '../fake-node-process.js';
import {
  type BenchCase,
  CONNECTIONS,
  cpuOf,
  DECODE_BODY,
  DECODE_PATH,
  DURATION_S,
  ENTRY_PATH,
  entryBody,
  expectOk,
  type FakeNodeProc,
  freshDir,
  gateway,
  httpRequest,
  int,
  log,
  type Measured,
  mark,
  measure,
  medianRound,
  memoryOf,
  ms,
  type PickFigure,
  pairedRatio,
  QUICK,
  RO_BODY,
  RO_PATH,
  type Row,
  runStandalone,
  type Server,
  startFakeNodeProcess,
  startReference,
  WARMUP_S,
  x,
} from '../support.js';

/**
 * Rounds of the hit comparison (gateway and reference alternate); the median round counts. Five:
 * on a shared 2-core machine one round in three or four is disturbed by someone else's work.
 */
const HIT_ROUNDS = QUICK ? 1 : 5;

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
/** docs/node-routes.md: the node's own route and body shape. */
const NODE_PATH = `/v2/contracts/call-read/${MAINNET_ADDR}/${CONTRACT}/get-info`;
const NODE_BODY = JSON.stringify({ sender: MAINNET_ADDR, arguments: [] });
/** docs/batch.md: 20 distinct cached calls in one batch. */
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

async function hitsCase(node: FakeNodeProc) {
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

// --- the figures ---

const RPS: PickFigure = (r) => r.rps;
const P50: PickFigure = (r) => r.latencyMs.p50;
const P99: PickFigure = (r) => r.latencyMs.p99;
const CPU: PickFigure = (r) => r.serverCpuUsPerRequest;
const cpuPair = (
  g: { rounds: readonly { loadGeneratorCpuPct: number }[] } | undefined,
  r: { rounds: readonly { loadGeneratorCpuPct: number }[] } | undefined,
): string => `${cpuOf(g)} / ${cpuOf(r)}`;
const NA = 'n/a (route absent)';

type Hits = Awaited<ReturnType<typeof hitsCase>>;

function rows(hits: Hits): Row[] {
  const out: Row[] = [];
  for (const [name, pair, targets] of [
    ['read-only hit (tuple)', hits.readOnly, true],
    ['decode (tuple hex)', hits.decode, false],
  ] as const) {
    const g = pair.gateway;
    const r = pair.reference;
    const rpsRatio = pairedRatio(g, r, RPS);
    const p99Ratio = pairedRatio(g, r, P99);
    const loadCpu = cpuPair(g, r);
    out.push({
      loadCpu,
      figure: `${name}: throughput`,
      value: `${int(g.rps)} req/s`,
      reference: `${int(r.rps)} req/s`,
      ratio: x(rpsRatio),
      target: targets ? '≥ 0.85×' : '≥ 0.80×',
      status: mark(rpsRatio >= (targets ? 0.85 : 0.8)),
    });
    out.push({
      loadCpu,
      figure: `${name}: server CPU per request`,
      value: `${g.cpuUsPerRequest.toFixed(0)} µs`,
      reference: `${r.cpuUsPerRequest.toFixed(0)} µs`,
      ratio: x(pairedRatio(g, r, CPU)),
      target: '—',
      status: '—',
    });
    out.push({
      loadCpu,
      figure: `${name}: p50 latency`,
      value: ms(g.p50, 3),
      reference: ms(r.p50, 3),
      ratio: x(pairedRatio(g, r, P50)),
      target: '—',
      status: '—',
    });
    out.push({
      loadCpu,
      figure: `${name}: p99 latency`,
      value: ms(g.p99, 3),
      reference: ms(r.p99, 3),
      ratio: x(p99Ratio),
      target: targets ? '≤ 1.30×' : '—',
      status: targets ? mark(p99Ratio <= 1.3) : '—',
    });
  }
  const floor = hits.readOnly.fastifyFloor;
  {
    const r = hits.readOnly.reference;
    const info = { target: 'info', status: '—', loadCpu: cpuPair(floor, r) };
    out.push(
      {
        ...info,
        figure: 'Fastify floor, no gateway work: throughput',
        value: `${int(floor.rps)} req/s`,
        reference: `${int(r.rps)} req/s`,
        ratio: x(pairedRatio(floor, r, RPS)),
      },
      {
        ...info,
        figure: 'Fastify floor, no gateway work: server CPU per request',
        value: `${floor.cpuUsPerRequest.toFixed(0)} µs`,
        reference: `${r.cpuUsPerRequest.toFixed(0)} µs`,
        ratio: x(pairedRatio(floor, r, CPU)),
      },
      {
        ...info,
        figure: 'Fastify floor, no gateway work: p99 latency',
        value: ms(floor.p99, 3),
        reference: ms(r.p99, 3),
        ratio: x(pairedRatio(floor, r, P99)),
      },
    );
  }
  out.push(...featureRows(hits));
  return out;
}

/** maxBlocks hit, node-compatible hit and batch (docs/freshness.md, docs/node-routes.md, docs/batch.md), or n/a rows. */
function featureRows(hits: Hits): Row[] {
  const plain = hits.readOnly.gateway;
  const bare = hits.readOnly.reference;
  const out: Row[] = [];
  const absentRow = (figure: string, target: string): Row => ({
    figure,
    value: '—',
    reference: '—',
    ratio: '—',
    target,
    status: NA,
  });
  const mb = hits.maxBlocks;
  if (mb === undefined || 'absent' in mb)
    out.push(absentRow('hit with cacheControl.maxBlocks: 1000: throughput', '≥ 0.90× plain hit'));
  else {
    out.push(
      {
        figure: 'hit with cacheControl.maxBlocks: 1000: throughput',
        value: `${int(mb.gateway.rps)} req/s`,
        reference: `${int(plain.rps)} req/s (plain hit)`,
        ratio: x(pairedRatio(mb.gateway, plain, RPS)),
        target: '≥ 0.90× plain hit',
        status: mark(pairedRatio(mb.gateway, plain, RPS) >= 0.9),
        loadCpu: cpuPair(mb.gateway, plain),
      },
      {
        figure: 'hit with cacheControl.maxBlocks: 1000: throughput vs bare',
        value: `${int(mb.gateway.rps)} req/s`,
        reference: `${int(bare.rps)} req/s (bare)`,
        ratio: x(pairedRatio(mb.gateway, bare, RPS)),
        target: 'info',
        status: '—',
        loadCpu: cpuPair(mb.gateway, bare),
      },
    );
  }
  const nc = hits.nodeCompat;
  if (nc === undefined || 'absent' in nc)
    out.push(
      absentRow('node-compatible hit (POST /v2/contracts/call-read/…): throughput', '≥ 0.90× plain hit'),
    );
  else {
    out.push(
      {
        figure: 'node-compatible hit (POST /v2/contracts/call-read/…): throughput',
        value: `${int(nc.gateway.rps)} req/s`,
        reference: `${int(plain.rps)} req/s (plain hit)`,
        ratio: x(pairedRatio(nc.gateway, plain, RPS)),
        target: '≥ 0.90× plain hit',
        status: mark(pairedRatio(nc.gateway, plain, RPS) >= 0.9),
        loadCpu: cpuPair(nc.gateway, plain),
      },
      {
        figure: 'node-compatible hit: throughput vs bare answering its bytes',
        value: `${int(nc.gateway.rps)} req/s`,
        reference: `${int(nc.reference.rps)} req/s (bare)`,
        ratio: x(pairedRatio(nc.gateway, nc.reference, RPS)),
        target: '≥ 0.90×',
        status: mark(pairedRatio(nc.gateway, nc.reference, RPS) >= 0.9),
        loadCpu: cpuPair(nc.gateway, nc.reference),
      },
    );
  }
  const b = hits.batch;
  if (b === undefined || 'absent' in b) {
    out.push(
      absentRow('batch of 20 cached calls: items/s', '≥ 0.90× plain hit'),
      absentRow('batch of 20 vs 20 singles, one keep-alive connection: time', '≤ 0.30×'),
    );
  } else {
    const items = b.gateway.rps * b.size;
    const serialRatio = pairedRatio(b.serial.batch, b.serial.singles, P50, 1 / b.size);
    out.push(
      {
        figure: `batch of ${b.size} cached calls: items/s (${int(b.gateway.rps)} batches/s)`,
        value: `${int(items)} items/s`,
        reference: `${int(plain.rps)} req/s (plain hit)`,
        ratio: x(pairedRatio(b.gateway, plain, RPS, b.size)),
        target: '≥ 0.90× plain hit',
        status: mark(pairedRatio(b.gateway, plain, RPS, b.size) >= 0.9),
        loadCpu: cpuPair(b.gateway, plain),
      },
      {
        figure: `batch of ${b.size}: throughput vs bare answering its ${b.responseBytes} bytes`,
        value: `${int(b.gateway.rps)} req/s`,
        reference: `${int(b.reference.rps)} req/s (bare)`,
        ratio: x(pairedRatio(b.gateway, b.reference, RPS)),
        target: 'info',
        status: '—',
        loadCpu: cpuPair(b.gateway, b.reference),
      },
      {
        figure: `batch of ${b.size} vs ${b.size} singles, one keep-alive connection: time (p50)`,
        value: ms(b.serial.batch.p50, 3),
        reference: `${ms(b.size * b.serial.singles.p50, 3)} (${b.size} × ${ms(b.serial.singles.p50, 3)})`,
        ratio: x(serialRatio),
        target: '≤ 0.30×',
        status: mark(serialRatio <= 0.3),
        loadCpu: cpuPair(b.serial.batch, b.serial.singles),
      },
    );
  }
  return out;
}

const perRound = (g: readonly { rps: number }[], r: readonly { rps: number }[]): string =>
  g.map((round, i) => (r[i] === undefined ? '—' : x(round.rps / r[i]!.rps))).join(' / ');

/** How the 1b figures are taken, or which routes were absent. */
function featureText(hits: Hits): string[] {
  const absent = [
    ['maxBlocks hit', hits.maxBlocks],
    ['node-compatible hit', hits.nodeCompat],
    ['batch', hits.batch],
  ]
    .filter(([, f]) => f === undefined || (typeof f === 'object' && 'absent' in f))
    .map(([n]) => n);
  return [
    '**1b. Hits of the newer routes** (measured only when a probe shows the route answers, else',
    '"n/a (route absent)"): the read-only hit with `"cacheControl":{"maxBlocks":1000}` (docs/freshness.md;',
    'the probe checks its second answer is a hit), `POST /v2/contracts/call-read/…/get-info` with the',
    "node's body `{sender, arguments: []}` (docs/node-routes.md), and `POST /contract-calls/batch` with 20 distinct `get-entry`",
    'calls cached beforehand through the single endpoint (the probe checks every item is a hit). They',
    'run in the same rounds as the plain hit, alternating with it and with the bare reference answering the same',
    'bytes. Batch against singles: one keep-alive connection (`wrk -c1`), batches of 20 against the same 20 calls',
    'sent one per request, alternating; figure: batch p50 / (20 × single p50).',
    ...(absent.length > 0 ? [`Absent in this gateway: ${absent.join(', ')}.`] : []),
    ...[
      ['maxBlocks hit', hits.maxBlocks],
      ['node-compatible hit', hits.nodeCompat],
      ['batch', hits.batch],
    ].flatMap(([n, f]) =>
      typeof f === 'object' && f !== null && 'upstreamCalls' in f
        ? [`Upstream calls while the ${n} was under load: ${f.upstreamCalls} (0 = every answer a hit).`]
        : [],
    ),
    '',
  ];
}

const loadCpu = (rounds: readonly { loadGeneratorCpuPct: number }[]): string =>
  rounds.map((r) => `${r.loadGeneratorCpuPct} %`).join(' / ');

function notes(hits: Hits): string[] {
  return [
    '**1. Cache hits.** `POST /contract-calls/read-only/SP3K…/demo/get-info` with `{"functionArgs":[]}`',
    `(a ${hits.responseBytes.readOnly}-byte answer: the decoded 10-field tuple of test/support/fixtures.ts, served`,
    'from the hot tier after one warm-up miss) and `POST /contract-calls/decode-clarity-value` with the same',
    `tuple as hex (${hits.responseBytes.decode}-byte answer). The reference is bench/reference-server.ts: bare`,
    '`node:http` that reads and `JSON.parse`s the body and answers the very bytes the gateway answered.',
    `${HIT_ROUNDS} rounds, gateway and reference alternating who goes first; each figure is the median of`,
    "its rounds, and each ratio the median of the per-round ratios (a round's gateway run against the",
    'reference run next to it), so that a disturbed stretch of the shared machine skews one pair, not the ratio.',
    "Latencies are wrk's (its histogram keeps microseconds). Server CPU per request is the server",
    "process's user + system time (/proc/<pid>/stat) over the measured run divided by its answers: it",
    'depends far less on what else the shared machine is doing than throughput does. The load generator',
    `used ${loadCpu(hits.readOnly.reference.rounds)} of a core against the bare server and`,
    `${loadCpu(hits.readOnly.gateway.rounds)} against the gateway (read-only; near 100 % it is itself the limit`,
    'and the throughput ratio understates the gap to the Node ceiling).',
    `Throughput ratio of each round (gateway / reference of the same round): read-only ${perRound(hits.readOnly.gateway.rounds, hits.readOnly.reference.rounds)};`,
    `decode ${perRound(hits.decode.gateway.rounds, hits.decode.reference.rounds)}. The spread shows how much the shared machine moved during the run.`,
    'The Fastify floor (bench/fastify-floor.ts, read-only path only) is Fastify 5 set up as the gateway is',
    '(pino at `warn`, so a child logger per request; UUID request ids; the same route pattern) answering the',
    'same bytes with no gateway work at all: the best a gateway built on this framework set-up can do.',
    `Upstream calls during the whole scenario: ${hits.upstreamCalls} (${hits.warmUpstreamCalls ?? '?'} of them warming up, before any load). Gateway RSS`,
    `after it: ${hits.gatewayMemory.rssMiB} MiB.`,
    '',
    ...featureText(hits),
  ];
}

async function run() {
  const node = await startFakeNodeProcess();
  try {
    const results = await hitsCase(node);
    return {
      settings: {
        connections: CONNECTIONS,
        warmupS: WARMUP_S,
        durationS: DURATION_S,
        hitRounds: HIT_ROUNDS,
        batchSize: BATCH_SIZE,
      },
      rows: rows(results),
      notes: notes(results),
      results,
    };
  } finally {
    await node.stop();
  }
}

export const hits: BenchCase = { title: 'cache hits vs the Node ceiling, 64 connections', run };
runStandalone(import.meta.filename, hits);
