/**
 * Cache hits while the event observer reads large payloads (docs/events.md, "Reading payloads
 * off the main thread"), on the production bundle (NODE_ENV production, LOG_LEVEL warn,
 * CACHE_STORE memory), its upstream a fake node in this process:
 *
 * - hit latency (wrk -t1 -c64, one cached read-only call) while ~100 MB /new_block payloads
 *   (2,000 serialized contract calls and ~100,000 print events) are posted to the observer one
 *   after the other, each as soon as the one before was applied, against the same hits
 *   undisturbed in the same run, rounds alternating; goal: p99 under 50 ms during the payloads;
 * - the time to the node's 200 and to the tip having moved, per payload;
 * - the gateway's RSS before the first payload, its peak while they are read, and after they
 *   were (a settle without load, then a full collection of the main thread); goal: back near
 *   its level before.
 *
 *   npm run build && node --import tsx bench/run.ts observer-payload --no-report
 *   (PAYLOAD_MB, PAYLOADS, ROUNDS, SETTLE_S, CONNECTIONS to change the defaults)
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { makeUnsignedContractCall, serializeTransaction } from '@stacks/transactions';
import { type FakeNode, startFakeNode } from '../../test/support/fake-node.js';
import type { LoadResult } from '../load.js';
import { sample } from '../memory-sample.js';
import {
  type BenchCase,
  freePort,
  freshDir,
  httpRequest,
  int,
  log,
  mark,
  median,
  memoryOf,
  QUICK,
  ROOT,
  type Row,
  requireGatewayEntry,
  round,
  runLoad,
  runStandalone,
  sleep,
  spawnNode,
  waitForHttp,
} from '../support.js';

const PAYLOAD_MB = Number(process.env.PAYLOAD_MB ?? 100);
const PAYLOADS = Number(process.env.PAYLOADS ?? 3);
const ROUNDS = Number(process.env.ROUNDS ?? (QUICK ? 1 : 3));
const SETTLE_S = Number(process.env.SETTLE_S ?? (QUICK ? 5 : 20));
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 64);
const P99_GOAL_MS = 50;
/** RSS after, against before: at most this much more (the worker thread's own baseline included). */
const RSS_GOAL_MIB = 64;

const ADDR = 'SP3K8BC0PPEVCV7NZ6QSRWPQ2JE9E5B6N3PA0KBR9';
const PUBLIC_KEY = '0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798';
const CONTRACTS = 100;
const START_HEIGHT = 1000;
const ABI = {
  functions: [{ name: 'get-n', access: 'read_only', args: [], outputs: { type: 'uint128' } }],
  variables: [],
  maps: [],
  fungible_tokens: [],
  non_fungible_tokens: [],
  epoch: 'Epoch31',
  clarity_version: 'Clarity3',
};
const SOURCE =
  '(define-data-var n uint u0)\n(define-public (bump) (ok (var-set n (+ (var-get n) u1))))\n(define-read-only (get-n) (var-get n))\n';

const hashOf = (n: number): string => n.toString(16).padStart(64, '0');

async function calls(): Promise<string[]> {
  const out: string[] = [];
  for (let nonce = 0; nonce < 2000; nonce++) {
    const tx = await makeUnsignedContractCall({
      contractAddress: ADDR,
      contractName: `c${nonce % CONTRACTS}`,
      functionName: 'bump',
      functionArgs: [],
      publicKey: PUBLIC_KEY,
      network: 'mainnet',
      fee: 1000,
      nonce,
    });
    out.push(serializeTransaction(tx));
  }
  return out;
}

/** A /new_block of about `megabytes`: the calls, then print events of ~1 KB naming the contracts. */
function blockBody(height: number, txs: readonly string[], megabytes: number): Buffer {
  const raw = `0x${'ab'.repeat(450)}`;
  const event = (i: number) =>
    `{"txid":"0x${hashOf(i)}","event_index":${i},"committed":true,"type":"contract_event","contract_event":{"contract_identifier":"${ADDR}.c${i % CONTRACTS}","topic":"print","value":null,"raw_value":"${raw}"}}`;
  const head = JSON.stringify({
    block_height: height,
    block_hash: `0x${hashOf(height + 1_000_000)}`,
    index_block_hash: `0x${hashOf(height)}`,
    parent_index_block_hash: `0x${hashOf(height - 1)}`,
    parent_block_hash: `0x${hashOf(height - 1 + 1_000_000)}`,
    burn_block_height: 800_000 + height,
    burn_block_hash: `0x${hashOf(height + 2_000_000)}`,
    transactions: txs.map((raw_tx, i) => ({
      txid: `0x${hashOf(i)}`,
      tx_index: i,
      raw_tx,
      status: 'success',
    })),
  });
  const count = Math.max(1, Math.round((megabytes * 1024 * 1024 - head.length) / event(0).length));
  const events: string[] = [];
  for (let i = 0; i < count; i++) events.push(event(i));
  return Buffer.from(`${head.slice(0, -1)},"events":[${events.join(',')}]}`);
}

function post(url: string, body: Buffer | string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function observedHeight(gatewayUrl: string): Promise<number | undefined> {
  const res = await httpRequest(`${gatewayUrl}/ready`, { timeoutMs: 5000 }).catch(() => undefined);
  if (res === undefined) return undefined;
  try {
    const ready = JSON.parse(res.body) as {
      data?: { checks?: { observer?: { lastBlock?: { height: number } } } };
    };
    return ready.data?.checks?.observer?.lastBlock?.height;
  } catch {
    return undefined;
  }
}

interface PayloadTiming {
  readonly height: number;
  readonly bytes: number;
  /** From the start of the POST to the node's 200 (the whole body sent and read). */
  readonly answerMs: number;
  /** From the start of the POST to /ready showing the block (read in the worker, tip moved). */
  readonly appliedMs: number;
}

/** Post a body to the observer and wait until the gateway shows its block as the last one. */
async function postAndApply(observer: string, gatewayUrl: string, height: number, body: Buffer) {
  const t0 = performance.now();
  const res = await post(`${observer}/new_block`, body);
  if (res.status !== 200) throw new Error(`observer answered ${res.status}`);
  const answerMs = performance.now() - t0;
  const deadline = t0 + 120_000;
  while ((await observedHeight(gatewayUrl)) !== height) {
    if (performance.now() > deadline) throw new Error(`block ${height} not applied within 120 s`);
    await sleep(20);
  }
  return {
    height,
    bytes: body.length,
    answerMs: round(answerMs, 1),
    appliedMs: round(performance.now() - t0, 1),
  } satisfies PayloadTiming;
}

/** RSS of `pid` sampled every 50 ms until `stop()`: the highest seen. */
function rssSampler(pid: number) {
  let peak = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      peak = Math.max(peak, memoryOf(pid).rssMiB);
      await sleep(50);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return peak;
    },
  };
}

interface Round {
  readonly undisturbed: LoadResult;
  readonly during: LoadResult;
  readonly payloads: PayloadTiming[];
  /** From the first POST to the last block applied. */
  readonly spanMs: number;
  readonly peakRssMiB: number;
}

async function measure() {
  const entry = requireGatewayEntry();
  const node: FakeNode = await startFakeNode({ tipHeight: START_HEIGHT - 1 });
  const dir = freshDir('observer-payload');
  const probeFile = path.join(dir, 'memory.json');
  try {
    for (let c = 0; c < CONTRACTS; c++) {
      node.setAbi(ADDR, `c${c}`, ABI);
      node.setSource(ADDR, `c${c}`, SOURCE);
    }
    node.setAbi(ADDR, 'cold', ABI);
    node.setSource(ADDR, 'cold', SOURCE);
    node.setReadOnly(ADDR, 'cold', 'get-n', { okay: true, result: `0x01${'0'.repeat(31)}1` });
    const port = await freePort();
    const observerPort = await freePort();
    const proc = spawnNode(['--expose-gc', '--import', path.join(ROOT, 'bench/memory-probe.mjs'), entry], {
      NODE_ENV: 'production',
      LOG_LEVEL: 'warn',
      PORT: String(port),
      HOST: '127.0.0.1',
      CACHE_STORE: 'memory',
      STACKS_API_URL_MAINNET: node.url,
      STACKS_API_URL_TESTNET: node.url,
      UPSTREAM_RATE_LIMIT_PER_MINUTE: '1000000',
      EVENT_OBSERVER_PORT: String(observerPort),
      EVENT_OBSERVER_NETWORK: 'mainnet',
      MEMORY_PROBE_FILE: probeFile,
      MEMORY_PROBE_GC: '1',
    });
    const url = `http://127.0.0.1:${port}`;
    const observer = `http://127.0.0.1:${observerPort}`;
    await waitForHttp(`${url}/health`, proc);
    const hitUrl = `${url}/contract-calls/read-only/${ADDR}/cold/get-n`;
    const hitBody = JSON.stringify({ functionArgs: [] });
    for (let i = 0; i < 3; i++) await post(hitUrl, hitBody);
    // A first small block: the run starts, and the calls' contracts are analysed (sources fetched).
    const txs = await calls();
    let height = START_HEIGHT;
    await postAndApply(observer, url, height, blockBody(height, txs, 1));
    await runLoad({
      url: hitUrl,
      method: 'POST',
      body: hitBody,
      connections: CONNECTIONS,
      warmupSeconds: 0,
      durationSeconds: 2,
    });
    await sleep(2000);
    const before = await sample(proc, probeFile, 0);
    log(`RSS before: ${before.rssMiB} MiB (heap ${before.heapUsedMiB} MiB)`);

    // Bodies are built before each run, outside it.
    const bodies = (count: number): Buffer[] =>
      Array.from({ length: count }, (_, i) => blockBody(height + 1 + i, txs, PAYLOAD_MB));
    const spec = {
      url: hitUrl,
      method: 'POST' as const,
      body: hitBody,
      connections: CONNECTIONS,
      warmupSeconds: 0,
    };
    /** PAYLOADS payloads one after the other, under a load run of `seconds` started first. */
    const disturbed = async (seconds: number) => {
      const batch = bodies(PAYLOADS);
      const peak = rssSampler(proc.pid);
      const load = runLoad({ ...spec, durationSeconds: seconds });
      await sleep(300); // wrk connected and loading
      const t0 = performance.now();
      const payloads: PayloadTiming[] = [];
      for (const body of batch) payloads.push(await postAndApply(observer, url, ++height, body));
      const spanMs = round(performance.now() - t0, 0);
      const during = await load;
      return { during, payloads, spanMs, peakRssMiB: await peak.stop() };
    };

    // The first payload, no load: the worker starts.
    const firstPeak = rssSampler(proc.pid);
    const firstBody = bodies(1)[0]!;
    const first = await postAndApply(observer, url, ++height, firstBody);
    const firstPeakMiB = await firstPeak.stop();
    log(
      `first payload (worker started): answered ${first.answerMs} ms, applied ${first.appliedMs} ms, RSS peak ${firstPeakMiB} MiB`,
    );
    // Calibration, unmeasured: how long PAYLOADS payloads take under the load; each measured
    // run then lasts that long and a second, so that the payloads fill it.
    const calibration = await disturbed(Math.ceil((3 * PAYLOADS * first.appliedMs) / 1000) + 2);
    const seconds = Math.max(3, Math.ceil(calibration.spanMs / 1000) + 1);
    log(`calibration: ${PAYLOADS} payloads under load in ${calibration.spanMs} ms; runs of ${seconds} s`);

    const rounds: Round[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const undisturbed = await runLoad({ ...spec, durationSeconds: seconds });
      const { during, payloads, spanMs, peakRssMiB } = await disturbed(seconds);
      rounds.push({ undisturbed, during, payloads, spanMs, peakRssMiB });
      log(
        `round ${r + 1}: p99 undisturbed ${undisturbed.latencyMs.p99} ms, during ${during.latencyMs.p99} ms; ` +
          `${Math.round(undisturbed.rps)} vs ${Math.round(during.rps)} req/s; applied ${payloads.map((p) => p.appliedMs).join(', ')} ms ` +
          `(all ${PAYLOADS} in ${spanMs} ms of the ${seconds} s run); RSS peak ${peakRssMiB} MiB`,
      );
    }

    // After: no load for SETTLE_S seconds, then a full collection of the main thread's heap.
    const settle: number[] = [];
    for (let s = 0; s < SETTLE_S; s++) {
      await sleep(1000);
      settle.push(memoryOf(proc.pid).rssMiB);
    }
    const after = await sample(proc, probeFile, SETTLE_S);
    const hwmMiB = memoryOf(proc.pid).hwmMiB;
    log(
      `RSS after ${SETTLE_S} s: ${settle.at(-1)} MiB; after a GC of the main thread: ${after.rssMiB} MiB; VmHWM ${hwmMiB} MiB`,
    );
    const stopped = await proc.stop(5000);
    if (stopped !== 0) log(`gateway exited ${stopped}:\n${proc.output().slice(-2000)}`);

    const med = (pick: (r: Round) => number) => median(rounds.map(pick));
    const results = {
      payloadBytes: first.bytes,
      measuredSeconds: seconds,
      calibration: { spanMs: calibration.spanMs, payloads: calibration.payloads },
      hit: {
        undisturbed: {
          p50: med((r) => r.undisturbed.latencyMs.p50),
          p99: med((r) => r.undisturbed.latencyMs.p99),
          max: med((r) => r.undisturbed.latencyMs.max),
          rps: Math.round(med((r) => r.undisturbed.rps)),
        },
        during: {
          p50: med((r) => r.during.latencyMs.p50),
          p99: med((r) => r.during.latencyMs.p99),
          max: med((r) => r.during.latencyMs.max),
          rps: Math.round(med((r) => r.during.rps)),
        },
      },
      payload: {
        first,
        answerMs: med((r) => median(r.payloads.map((p) => p.answerMs))),
        appliedMs: med((r) => median(r.payloads.map((p) => p.appliedMs))),
        spanMs: med((r) => r.spanMs),
      },
      rssMiB: {
        before: before.rssMiB,
        peak: Math.max(firstPeakMiB, calibration.peakRssMiB, ...rounds.map((r) => r.peakRssMiB)),
        vmHwm: hwmMiB,
        afterSettle: settle.at(-1) ?? Number.NaN,
        afterGc: after.rssMiB,
        settle,
      },
      heapMiB: { before: before.heapUsedMiB, after: after.heapUsedMiB, liveAfter: after.liveHeapMiB },
      rounds: rounds.map((r) => ({
        undisturbed: {
          p50: r.undisturbed.latencyMs.p50,
          p99: r.undisturbed.latencyMs.p99,
          max: r.undisturbed.latencyMs.max,
          rps: r.undisturbed.rps,
        },
        during: {
          p50: r.during.latencyMs.p50,
          p99: r.during.latencyMs.p99,
          max: r.during.latencyMs.max,
          rps: r.during.rps,
        },
        payloads: r.payloads,
        spanMs: r.spanMs,
        peakRssMiB: r.peakRssMiB,
        loadGeneratorCpuPct: {
          undisturbed: r.undisturbed.loadGeneratorCpuPct,
          during: r.during.loadGeneratorCpuPct,
        },
      })),
    };
    return results;
  } finally {
    await node.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

type Results = Awaited<ReturnType<typeof measure>>;

async function run() {
  const results = await measure();
  return {
    settings: {
      payloadMb: PAYLOAD_MB,
      payloadsPerRound: PAYLOADS,
      rounds: ROUNDS,
      connections: CONNECTIONS,
      settleS: SETTLE_S,
    },
    rows: rows(results),
    notes: [
      'Gateway: the production bundle (`dist/clarity-cache.mjs`, `NODE_ENV=production`, `LOG_LEVEL=warn`, `CACHE_STORE=memory`,',
      '`EVENT_OBSERVER_PORT` set), preloaded with bench/memory-probe.mjs; its upstream a fake node in the bench process. Hits: wrk',
      `\`-t1 -c${CONNECTIONS}\` on one cached read-only call while ${PAYLOADS} payloads of ~${PAYLOAD_MB} MB (2,000 serialized contract calls,`,
      '~1 KB print events) are posted one after the other, each once the one before was applied (/ready shows it); each run lasts',
      'as long as an unmeasured calibration run took for the same, plus a second; the same run undisturbed before each,',
      `${ROUNDS} round(s), medians. RSS from /proc: before the first large payload (no worker yet), the highest sampled every`,
      `50 ms while payloads are read, and after ${SETTLE_S} s without load and a full collection of the main thread's heap.`,
    ],
    results,
  };
}

function rows(r: Results): Row[] {
  const mib = (n: number) => `${n.toFixed(0)} MiB`;
  const afterUp = r.rssMiB.afterGc - r.rssMiB.before;
  return [
    {
      figure: `read-only hit p99 while ~${PAYLOAD_MB} MB \`/new_block\` payloads are read and applied`,
      value: `${r.hit.during.p99} ms`,
      reference: `${r.hit.undisturbed.p99} ms (undisturbed)`,
      ratio: `${(r.hit.during.p99 / r.hit.undisturbed.p99).toFixed(2)}×`,
      target: `< ${P99_GOAL_MS} ms`,
      status: mark(r.hit.during.p99 < P99_GOAL_MS),
    },
    {
      figure: 'the same hits: p50',
      value: `${r.hit.during.p50} ms`,
      reference: `${r.hit.undisturbed.p50} ms (undisturbed)`,
      ratio: `${(r.hit.during.p50 / r.hit.undisturbed.p50).toFixed(2)}×`,
      target: '—',
      status: '—',
    },
    {
      figure: 'the same hits: throughput',
      value: `${int(r.hit.during.rps)} req/s`,
      reference: `${int(r.hit.undisturbed.rps)} req/s (undisturbed)`,
      ratio: `${(r.hit.during.rps / r.hit.undisturbed.rps).toFixed(3)}×`,
      target: '—',
      status: '—',
    },
    {
      figure: `one ~${PAYLOAD_MB} MB payload under the hit load: answered 200 / applied (tip moved); all ${PAYLOADS} one after the other`,
      value: `${int(r.payload.answerMs)} / ${int(r.payload.appliedMs)} ms; ${int(r.payload.spanMs)} ms`,
      reference: `first, no load, worker started: ${int(r.payload.first.answerMs)} / ${int(r.payload.first.appliedMs)} ms`,
      ratio: '—',
      target: '—',
      status: '—',
    },
    {
      figure: 'gateway RSS: before the first payload → peak while reading → after (settle, main-thread GC)',
      value: `${mib(r.rssMiB.before)} → ${mib(r.rssMiB.peak)} → ${mib(r.rssMiB.afterGc)}`,
      reference: `before: ${mib(r.rssMiB.before)}`,
      ratio: `${afterUp < 0 ? '−' : '+'}${mib(Math.abs(afterUp))}`,
      target: `after ≤ before + ${RSS_GOAL_MIB} MiB`,
      status: mark(afterUp <= RSS_GOAL_MIB),
    },
  ];
}

export const observerPayload: BenchCase = {
  title: 'cache hits while the observer reads 100 MB payloads',
  run,
};
runStandalone(import.meta.filename, observerPayload);
