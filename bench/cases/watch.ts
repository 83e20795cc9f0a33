/**
 * watch: watched reads (POST /subscriptions, GET /subscriptions/{id}/events) at scale, on one
 * gateway (what `npm start` runs, SQLite store) whose upstream is a stand-in node process
 * (bench/watch-node-process.ts) and whose event observer is on, so blocks come as /new_block
 * posts. 10,000 streams, each its own subscription of one read, watch 1,000 distinct reads
 * (10 streams a read): `get-entry(u0…u9)` of 100 contracts, so a block whose transactions call
 * 10 of the contracts changes exactly 100 reads. The streams are held by two client processes
 * over raw sockets (bench/watch-clients.ts).
 *
 * 1. Delivery: three blocks, each changing 100 reads (1,000 streams): the time from the
 *    /new_block post to each affected stream's event (monotonic clock shared by the
 *    processes), p50 / p99 / max over the three; the upstream call-reads each block cost
 *    (goal: exactly 100, the other 900 reads proven unchanged by the observer); that no other
 *    stream got an event. Before them, blocks that change nothing until the dependency
 *    analysis of `get-entry` is known (a block costs no call-read), and one calling every
 *    contract without changing its state, so that the observer knows what `bump` reaches.
 * 2. Idle cost: RSS (and the live heap) after a full collection (bench/memory-probe.mjs,
 *    --expose-gc) with no stream and no subscription, then with 10,000 subscriptions, then
 *    with their 10,000 streams open and idle; goal ≤ 20 KiB a stream, its subscription
 *    included.
 * 3. Hits with idle streams: the read-only hit (RO_PATH) under wrk `-t1 -c64` against the bare
 *    node:http reference answering its bytes, alternating, before any stream and with the
 *    10,000 streams open; goal: the ratio to the reference with streams ≥ 0.95× the ratio
 *    without. On a shared machine that ratio moves with everyone else's work, so the gateway's
 *    own CPU with no request, with and without the streams, is measured as well: what the
 *    idle streams take from the hits when the CPU is the limit; and a `GET /health` every
 *    20 ms meanwhile, whose slowest answer shows the longest the event loop was held.
 *
 *   npm run build && node --import tsx bench/run.ts watch
 *   (or GATEWAY=<bundle> for another build; node --import tsx bench/cases/watch.ts alone)
 */
import { type ChildProcess, fork } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  AnchorMode,
  Cl,
  makeUnsignedContractCall,
  PostConditionMode,
  serializeTransaction,
} from '@stacks/transactions';
import { blockIdentity } from '../../src/devnet/blocks.js';
import { MAINNET_ADDR } from '../../test/support/fixtures.js';
import { type Sample, sample } from '../memory-sample.js';
import {
  type BenchCase,
  cpuMsOf,
  expectOk,
  freePort,
  freshDir,
  gateway,
  httpRequest,
  int,
  log,
  type Measured,
  mark,
  measure,
  median,
  QUICK,
  quantile,
  RO_BODY,
  RO_PATH,
  ROOT,
  type Row,
  round,
  runStandalone,
  type Server,
  sleep,
  startReference,
} from '../support.js';
import type { ClientCommand, ClientStats, OpenResult, StreamSpec } from '../watch-clients.js';
import { monotonicMs } from '../watch-clients.js';
import { WATCH_CONTRACTS, type WatchNodeCommand, watchContract } from '../watch-node-process.js';

const STREAMS = 10_000;
const STREAMS_PER_READ = 10;
const READS = STREAMS / STREAMS_PER_READ;
const IDS_PER_CONTRACT = READS / WATCH_CONTRACTS;
/** Contracts a measured block calls: their reads, and only theirs, change. */
const CHANGED_CONTRACTS = 10;
const CHANGED_READS = CHANGED_CONTRACTS * IDS_PER_CONTRACT;
const AFFECTED_STREAMS = CHANGED_READS * STREAMS_PER_READ;
const MEASURED_BLOCKS = 3;
const CLIENT_PROCESSES = 2;
/** Streams of a client process waiting for their first event at a time (the rest queue). */
const OPEN_PARALLEL = 64;
/** Subscriptions created at a time (keep-alive connections). */
const CREATE_PARALLEL = 16;
const HIT_ROUNDS = QUICK ? 1 : 5;
const HIT_WARMUP_S = 1;
const HIT_S = QUICK ? 3 : 5;
/** How long after the last affected stream's event the others are given to get a stray one. */
const QUIET_MS = 1000;
/** Seconds the gateway's idle CPU is measured over: the heartbeat period of the streams (15 s). */
const IDLE_CPU_S = 15;
/** The node's tip when the gateway starts: the first block posted is its child. */
const FIRST_HEIGHT = 1000;
/** A public key for unsigned transactions (the observer decodes them; nothing checks signatures). */
const PUBLIC_KEY = '0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798';
const GOAL_P99_MS = 500;
const GOAL_KIB_PER_STREAM = 20;
const GOAL_HIT_RATIO = 0.95;

// --- child processes with an IPC channel (the stand-in node, the clients) ---

interface Peer<C> {
  readonly child: ChildProcess;
  /** What the process said when it was ready (the stand-in node: its URL). */
  readonly ready: unknown;
  call<R>(command: C): Promise<R>;
  stop(): Promise<void>;
}

async function forkPeer<C extends object>(file: string): Promise<Peer<C>> {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const child = fork(path.join(ROOT, file), [], {
    cwd: ROOT,
    env,
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let out = '';
  const keep = (chunk: Buffer): void => {
    out = (out + chunk.toString()).slice(-16_384);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let nextId = 1;
  const ready = await new Promise<unknown>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${file} did not start:\n${out}`)), 30_000);
    child.on('message', (msg: { ready?: unknown; id?: number; result?: unknown; error?: string }) => {
      if (msg.ready !== undefined) {
        clearTimeout(timer);
        resolve(msg.ready);
        return;
      }
      const waiter = msg.id === undefined ? undefined : pending.get(msg.id);
      if (waiter === undefined) return;
      pending.delete(msg.id!);
      if (msg.error !== undefined) waiter.reject(new Error(msg.error));
      else waiter.resolve(msg.result);
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`${file} exited:\n${out}`));
      for (const w of pending.values()) w.reject(new Error(`${file} exited:\n${out}`));
    });
  });
  return {
    child,
    ready,
    call: <R>(command: C) =>
      new Promise<R>((resolve, reject) => {
        const id = nextId++;
        pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
        child.send({ id, ...command });
      }),
    stop: async () => {
      if (child.connected) child.disconnect();
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

// --- blocks ---

/** A /new_block payload of the stand-in node's chain (its hashes, so that `?tip=` finds the block). */
function newBlock(height: number, txs: readonly string[]): string {
  const id = blockIdentity(height, height + 800_000);
  const parent = blockIdentity(height - 1, height - 1 + 800_000);
  return JSON.stringify({
    block_height: height,
    block_hash: `0x${id.blockHash}`,
    index_block_hash: `0x${id.indexBlockHash}`,
    parent_index_block_hash: `0x${parent.indexBlockHash}`,
    parent_block_hash: `0x${parent.blockHash}`,
    consensus_hash: `0x${id.consensusHash}`,
    burn_block_height: id.burnBlockHeight,
    burn_block_time: Math.floor(Date.now() / 1000),
    transactions: txs.map((raw_tx, i) => ({
      txid: `0x${(height * 10_000 + i).toString(16).padStart(64, '0')}`,
      tx_index: i,
      raw_tx,
      status: 'success',
    })),
    events: [],
  });
}

let nonce = 0;
/** A call of `bump` on contract `c`: the observer takes the block as touching it. */
async function bumpTx(c: number): Promise<string> {
  const tx = await makeUnsignedContractCall({
    contractAddress: MAINNET_ADDR,
    contractName: watchContract(c),
    functionName: 'bump',
    functionArgs: [Cl.uint(1)],
    publicKey: PUBLIC_KEY,
    network: 'mainnet',
    fee: 1000,
    nonce: nonce++,
    anchorMode: AnchorMode.Any,
    postConditionMode: PostConditionMode.Allow,
  } as never);
  return serializeTransaction(tx);
}

// --- the gateway's own counters ---

interface WatchCounters {
  /** Reads brought to a block, by how (value, error, no-answer, proven). */
  readonly evaluations: Record<string, number>;
  /** The gateway's call-read attempts to its upstream, by outcome (ok, timeout, …). */
  readonly callReadAttempts: Record<string, number>;
  readonly valuesEvents: number;
  readonly streams: number;
  readonly deliverySum: number;
  readonly deliveryCount: number;
}

async function counters(gwUrl: string): Promise<WatchCounters> {
  const text = (await httpRequest(`${gwUrl}/metrics`)).body;
  const evaluations: Record<string, number> = {};
  const callReadAttempts: Record<string, number> = {};
  let valuesEvents = 0;
  let streams = 0;
  let deliverySum = 0;
  let deliveryCount = 0;
  for (const line of text.split('\n')) {
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (line.startsWith('clarity_cache_watch_evaluations_total{')) {
      const result = /result="([^"]+)"/.exec(line)?.[1] ?? '?';
      evaluations[result] = (evaluations[result] ?? 0) + value;
    } else if (
      line.startsWith('clarity_cache_upstream_attempts_total{') &&
      line.includes('kind="call-read"')
    ) {
      const outcome = /outcome="([^"]+)"/.exec(line)?.[1] ?? '?';
      callReadAttempts[outcome] = (callReadAttempts[outcome] ?? 0) + value;
    } else if (line.startsWith('clarity_cache_watch_events_total{') && line.includes('event="values"'))
      valuesEvents += value;
    else if (line.startsWith('clarity_cache_watch_streams ')) streams = value;
    else if (line.startsWith('clarity_cache_watch_delivery_seconds_sum')) deliverySum += value;
    else if (line.startsWith('clarity_cache_watch_delivery_seconds_count')) deliveryCount += value;
  }
  return { evaluations, callReadAttempts, valuesEvents, streams, deliverySum, deliveryCount };
}

const total = (r: Record<string, number>): number => Object.values(r).reduce((a, b) => a + b, 0);
const diff = (a: Record<string, number>, b: Record<string, number>): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const d = (b[k] ?? 0) - (a[k] ?? 0);
    if (d !== 0) out[k] = d;
  }
  return out;
};

async function until(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

// --- the streams ---

/** Stream s watches read floor(s / 10); read r is `get-entry(u(r % 10))` of contract floor(r / 10). */
const readOf = (stream: number): number => Math.floor(stream / STREAMS_PER_READ);
const contractOf = (read: number): number => Math.floor(read / IDS_PER_CONTRACT);
const readBody = (read: number): unknown => ({
  contractAddress: MAINNET_ADDR,
  contractName: watchContract(contractOf(read)),
  functionName: 'get-entry',
  functionArgs: [{ type: 'uint', value: String(read % IDS_PER_CONTRACT) }],
});

async function subscribeAll(gwUrl: string): Promise<string[]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CREATE_PARALLEL });
  const ids: string[] = new Array(STREAMS);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < STREAMS) {
      const s = next++;
      const res = await httpRequest(`${gwUrl}/subscriptions`, {
        body: JSON.stringify({ reads: [readBody(readOf(s))] }),
        agent,
      });
      if (res.status !== 201)
        throw new Error(`POST /subscriptions: HTTP ${res.status} ${res.body.slice(0, 300)}`);
      ids[s] = (JSON.parse(res.body) as { data: { id: string } }).data.id;
    }
  };
  try {
    await Promise.all(Array.from({ length: CREATE_PARALLEL }, worker));
  } finally {
    agent.destroy();
  }
  return ids;
}

// --- memory ---

interface MemoryPoint {
  readonly phase: string;
  readonly sample: Sample;
}

/**
 * The gateway's CPU with nothing asked of it, % of one core, over one heartbeat period (every
 * stream's keep-alive comment is written once in it, and the streams' renewal runs once).
 */
async function idleCpu(gw: Server, label: string): Promise<number> {
  const cpu0 = cpuMsOf(gw.proc.pid);
  const t0 = monotonicMs();
  await sleep(IDLE_CPU_S * 1000);
  const pct = ((cpuMsOf(gw.proc.pid) - cpu0) / (monotonicMs() - t0)) * 100;
  log(`watch: idle CPU, ${label}: ${pct.toFixed(2)} % of a core`);
  return pct;
}

/**
 * The gateway's event loop seen from outside over one heartbeat period: a GET /health every
 * 20 ms on one keep-alive connection, each answer's time. Work done in one go (every stream's
 * comment line written at once, say) shows as a long answer.
 */
async function loopStalls(gw: Server, label: string): Promise<{ p50: number; p99: number; max: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const times: number[] = [];
  try {
    const end = monotonicMs() + IDLE_CPU_S * 1000;
    while (monotonicMs() < end) {
      const t = monotonicMs();
      const res = await httpRequest(`${gw.url}/health`, { agent });
      if (res.status !== 200) throw new Error(`/health: HTTP ${res.status}`);
      times.push(monotonicMs() - t);
      await sleep(Math.max(0, 20 - (monotonicMs() - t)));
    }
  } finally {
    agent.destroy();
  }
  const out = { p50: quantile(times, 0.5), p99: quantile(times, 0.99), max: Math.max(...times) };
  log(
    `watch: /health every 20 ms, ${label}: p50 ${f1(out.p50)} / p99 ${f1(out.p99)} / max ${f1(out.max)} ms`,
  );
  return out;
}

/** A sample after a full collection, once the process has settled (the second of two, 1 s apart). */
async function settledSample(gw: Server, file: string, phase: string): Promise<MemoryPoint> {
  await sleep(1500);
  await sample(gw.proc, file, 0);
  await sleep(1000);
  const s = await sample(gw.proc, file, 0);
  log(`watch: memory ${phase}: RSS ${s.rssMiB} MiB, live heap ${s.liveHeapMiB ?? '?'} MiB`);
  return { phase, sample: s };
}

// --- hits ---

interface HitPhase {
  readonly gw: Measured[];
  readonly ref: Measured[];
}

async function hitPhase(gw: Server, ref: Server, label: string): Promise<HitPhase> {
  const out: HitPhase = { gw: [], ref: [] };
  const spec = { warmupSeconds: HIT_WARMUP_S, durationSeconds: HIT_S };
  for (let round = 0; round < HIT_ROUNDS; round++) {
    // The order alternates, so that a slow patch of the shared machine favours neither.
    const runs: [Server, Measured[]][] = [
      [ref, out.ref],
      [gw, out.gw],
    ];
    if (round % 2 === 1) runs.reverse();
    for (const [server, into] of runs)
      into.push(await measure(server, `${server.url}${RO_PATH}`, RO_BODY, spec));
    log(
      `watch: hits ${label}, round ${round + 1}/${HIT_ROUNDS}: gateway ${int(out.gw[round]!.rps)}, reference ${int(out.ref[round]!.rps)} req/s`,
    );
  }
  return out;
}

/** The median of the per-round ratios gateway / reference (each round's pair ran side by side). */
const roundRatio = (p: HitPhase): number => median(p.gw.map((g, i) => g.rps / p.ref[i]!.rps));

// --- delivery ---

interface BlockDelivery {
  readonly height: number;
  readonly changedContracts: number[];
  readonly answerMs: number;
  /** Per affected stream: ms from the post to its event's arrival. */
  readonly latenciesMs: number[];
  readonly affectedWithEvent: number;
  readonly unaffectedWithEvent: number;
  readonly upstreamCallReads: number;
  readonly callReadAttempts: Record<string, number>;
  readonly evaluations: Record<string, number>;
  readonly valuesEventsWritten: number;
  /** CPU the gateway used from the post to the last affected stream's event (user + system, ms). */
  readonly gatewayCpuMs: number;
  /** The gateway's own histogram: block received to every event written (ms). */
  readonly gatewayDeliveredMs: number;
}

/** Ensures the processes may hold the sockets: the children inherit this process's limit. */
async function ensureOpenFiles(need: number): Promise<number> {
  const limits = fs.readFileSync('/proc/self/limits', 'utf8');
  const soft = Number(/^Max open files\s+(\d+)/m.exec(limits)?.[1] ?? 0);
  if (soft >= need) return soft;
  const { execFileSync } = await import('node:child_process');
  try {
    // The soft limit up to `need` (the hard one is the ceiling an unprivileged process has).
    execFileSync('prlimit', ['--pid', String(process.pid), `--nofile=${need}:`]);
  } catch (err) {
    throw new Error(`ulimit -n is ${soft}, ${need} are needed and it could not be raised: ${String(err)}`);
  }
  return need;
}

async function run() {
  // The gateway holds every stream's socket, wrk's 64 and its own; a client process half the streams.
  const openFiles = await ensureOpenFiles(STREAMS + 2048);
  const dir = freshDir('watch');
  const probeFile = path.join(dir, 'memory.json');
  const node = await forkPeer<WatchNodeCommand>('bench/watch-node-process.ts');
  const clients: Peer<ClientCommand>[] = [];
  const posts = new http.Agent({ keepAlive: true, maxSockets: 1 });
  let gw: Server | undefined;
  let ref: Server | undefined;
  try {
    for (let i = 0; i < CLIENT_PROCESSES; i++)
      clients.push(await forkPeer<ClientCommand>('bench/watch-clients.ts'));
    const callReads = () => node.call<number>({ cmd: 'count', kind: 'call-read' });
    let height = FIRST_HEIGHT - 1;
    // The gateway's first tip comes from the node's /v2/info: the first block posted is its child.
    await node.call({ cmd: 'tip', height });
    const observerPort = await freePort();
    gw = await gateway(
      node.ready as string,
      dir,
      {
        EVENT_OBSERVER_PORT: String(observerPort),
        EVENT_OBSERVER_NETWORK: 'mainnet',
        // Blocks come from the observer only: no tip is asked of the node while the case runs.
        CHAIN_TIP_MAX_AGE_MS: '600000',
        WATCH_MAX_STREAMS_ANONYMOUS: String(2 * STREAMS),
        WATCH_MAX_STREAMS_PER_KEY: String(2 * STREAMS),
        HTTP_MAX_CONNECTIONS: String(STREAMS + 1024),
        MEMORY_PROBE_FILE: probeFile,
        MEMORY_PROBE_GC: '1',
      },
      ['--expose-gc', '--import', pathToFileURL(path.join(ROOT, 'bench/memory-probe.mjs')).href],
    );
    const gwUrl = gw.url;
    const observerUrl = `http://127.0.0.1:${observerPort}/new_block`;

    /** Posts the next block (its state changes told to the node first); t0 is taken just before the post. */
    const post = async (txs: readonly string[], changes: readonly number[] = []) => {
      height++;
      if (changes.length > 0) await node.call({ cmd: 'change', contracts: [...changes], height });
      await node.call({ cmd: 'tip', height });
      const payload = newBlock(height, txs);
      const t0 = monotonicMs();
      const res = await httpRequest(observerUrl, { body: payload, agent: posts });
      const answerMs = monotonicMs() - t0;
      if (res.status !== 200)
        throw new Error(`/new_block ${height}: HTTP ${res.status} ${res.body.slice(0, 300)}`);
      return { height, t0, answerMs };
    };
    /** Posts a block and waits until every watched read was brought to it (evaluated or proven). */
    const bringAll = async (txs: readonly string[]) => {
      const before = await counters(gwUrl);
      const calls = await callReads();
      const b = await post(txs);
      let now = before;
      await until(
        `block ${b.height} brought to every watched read`,
        async () => {
          now = await counters(gwUrl);
          return total(now.evaluations) - total(before.evaluations) >= READS;
        },
        60_000,
      );
      return {
        height: b.height,
        ms: round(monotonicMs() - b.t0, 1),
        callReads: (await callReads()) - calls,
        callReadAttempts: diff(before.callReadAttempts, now.callReadAttempts),
        evaluations: diff(before.evaluations, now.evaluations),
      };
    };
    const clientSum = async (command: ClientCommand): Promise<number> =>
      (await Promise.all(clients.map((c) => c.call<number>(command)))).reduce((a, b) => a + b, 0);
    const clientStats = () => Promise.all(clients.map((c) => c.call<ClientStats>({ cmd: 'stats' })));

    // The first block, with no stream yet; then the hit cached and its reference started.
    await post([]);
    const roBytes = await expectOk(`${gwUrl}${RO_PATH}`, RO_BODY);
    if ((await expectOk(`${gwUrl}${RO_PATH}`, RO_BODY)) !== roBytes) throw new Error('hit differs from miss');
    ref = await startReference({ [RO_PATH]: roBytes }, freshDir('watch-reference'));

    // 3 (first half): hits before any stream.
    const hitsWithout = await hitPhase(gw, ref, 'no stream');

    // 2: memory with nothing watched, with the subscriptions, with their streams.
    const memory: MemoryPoint[] = [await settledSample(gw, probeFile, 'no stream, no subscription')];
    const idleCpuWithout = await idleCpu(gw, 'no stream');
    const stallsWithout = await loopStalls(gw, 'no stream');
    let t = monotonicMs();
    const ids = await subscribeAll(gwUrl);
    const subscribeS = (monotonicMs() - t) / 1000;
    log(`watch: ${int(STREAMS)} subscriptions in ${subscribeS.toFixed(1)} s`);
    memory.push(await settledSample(gw, probeFile, `${int(STREAMS)} subscriptions, no stream`));

    t = monotonicMs();
    const opened = await Promise.all(
      clients.map((c, i) => {
        const streams: StreamSpec[] = [];
        for (let s = i; s < STREAMS; s += clients.length)
          streams.push({ key: s, path: `/subscriptions/${ids[s]}/events` });
        return c.call<OpenResult>({
          cmd: 'open',
          port: Number(new URL(gwUrl).port),
          streams,
          parallel: OPEN_PARALLEL,
        });
      }),
    );
    const openS = (monotonicMs() - t) / 1000;
    const failed = opened.flatMap((o) => o.failed);
    if (failed.length > 0)
      throw new Error(`${failed.length} streams did not open, e.g. ${JSON.stringify(failed.slice(0, 3))}`);
    const streamsOpen = (await counters(gwUrl)).streams;
    log(
      `watch: ${int(STREAMS)} streams open in ${openS.toFixed(1)} s (the gateway counts ${int(streamsOpen)})`,
    );
    if (streamsOpen !== STREAMS)
      throw new Error(`the gateway counts ${streamsOpen} open streams, not ${STREAMS}`);

    // The dependency analysis of get-entry starts at the first block a read is brought to and is
    // known by a later one. A read whose evaluation failed (no answer) is evaluated again at the
    // next block, proven or not: empty blocks until one costs no call-read (every read proven).
    const warm: Awaited<ReturnType<typeof bringAll>>[] = [];
    const untilAllProven = async (): Promise<void> => {
      const deadline = monotonicMs() + 120_000;
      do {
        if (monotonicMs() > deadline)
          throw new Error(`the watched reads were still not all proven after ${warm.length} warm-up blocks`);
        await sleep(250);
        warm.push(await bringAll([]));
      } while (warm[warm.length - 1]!.callReads > 0);
    };
    await untilAllProven();
    // A block calling every contract without changing its state: the observer learns what
    // `bump` reaches (as it knows the calls of a chain it has followed for a while).
    warm.push(
      await bringAll(await Promise.all(Array.from({ length: WATCH_CONTRACTS }, (_, c) => bumpTx(c)))),
    );
    await untilAllProven();
    for (const w of warm)
      log(
        `watch: warm-up block ${w.height} (${w.ms} ms): ${w.callReads} call-reads (attempts ${JSON.stringify(w.callReadAttempts)}), ${JSON.stringify(w.evaluations)}`,
      );
    const warmStats = await clientStats();
    const eventsBeforeDelivery = warmStats.reduce((a, s) => a + s.valuesEvents, 0);
    if (eventsBeforeDelivery !== STREAMS)
      throw new Error(
        `${eventsBeforeDelivery} values events before the measured blocks, not one a stream (${STREAMS})`,
      );

    memory.push(await settledSample(gw, probeFile, `${int(STREAMS)} idle streams`));
    const idleCpuWith = await idleCpu(gw, `${int(STREAMS)} idle streams`);
    const stallsWith = await loopStalls(gw, `${int(STREAMS)} idle streams`);

    // 3 (second half): hits beside the idle streams.
    const hitsWith = await hitPhase(gw, ref, `${int(STREAMS)} idle streams`);
    const afterHits = await clientStats();
    if (afterHits.some((s) => s.closedAfterOpen > 0))
      throw new Error(`streams closed under load: ${JSON.stringify(afterHits)}`);

    // 1: delivery.
    const deliveries: BlockDelivery[] = [];
    for (let j = 0; j < MEASURED_BLOCKS; j++) {
      const changed = Array.from(
        { length: CHANGED_CONTRACTS },
        (_, k) => j + k * (WATCH_CONTRACTS / CHANGED_CONTRACTS),
      );
      const txs = await Promise.all(changed.map((c) => bumpTx(c)));
      const before = await counters(gwUrl);
      const calls = await callReads();
      const cpu0 = cpuMsOf(gw.proc.pid);
      const b = await post(txs, changed);
      // The clients are asked, not the gateway: nothing but the delivery runs there meanwhile.
      const deadline = monotonicMs() + 10_000;
      while (
        (await clientSum({ cmd: 'count', height: b.height })) < AFFECTED_STREAMS &&
        monotonicMs() < deadline
      )
        await sleep(20);
      const gatewayCpuMs = cpuMsOf(gw.proc.pid) - cpu0;
      await sleep(QUIET_MS);
      const events = (
        await Promise.all(clients.map((c) => c.call<[number, number][]>({ cmd: 'events', height: b.height })))
      ).flat();
      const after = await counters(gwUrl);
      const isAffected = (s: number): boolean => changed.includes(contractOf(readOf(s)));
      const latenciesMs = events.filter(([s]) => isAffected(s)).map(([, at]) => at - b.t0);
      const d: BlockDelivery = {
        height: b.height,
        changedContracts: changed,
        answerMs: round(b.answerMs, 2),
        latenciesMs,
        affectedWithEvent: latenciesMs.length,
        unaffectedWithEvent: events.length - latenciesMs.length,
        upstreamCallReads: (await callReads()) - calls,
        callReadAttempts: diff(before.callReadAttempts, after.callReadAttempts),
        evaluations: diff(before.evaluations, after.evaluations),
        gatewayCpuMs: round(gatewayCpuMs, 0),
        valuesEventsWritten: after.valuesEvents - before.valuesEvents,
        gatewayDeliveredMs: round(
          ((after.deliverySum - before.deliverySum) /
            Math.max(1, after.deliveryCount - before.deliveryCount)) *
            1000,
          1,
        ),
      };
      deliveries.push(d);
      log(
        `watch: block ${d.height}: ${d.affectedWithEvent}/${AFFECTED_STREAMS} affected streams got it, p50 ${quantile(latenciesMs, 0.5).toFixed(1)} / p99 ${quantile(latenciesMs, 0.99).toFixed(1)} / max ${Math.max(...latenciesMs).toFixed(1)} ms; ${d.unaffectedWithEvent} others; ${d.upstreamCallReads} call-reads (attempts ${JSON.stringify(d.callReadAttempts)}); ${JSON.stringify(d.evaluations)}; gateway's own ${d.gatewayDeliveredMs} ms, CPU ${d.gatewayCpuMs} ms`,
      );
      await sleep(500);
    }

    // Memory once the streams are gone (informational).
    await Promise.all(clients.map((c) => c.call({ cmd: 'close' })));
    await until('the streams closed', async () => (await counters(gwUrl)).streams === 0, 30_000);
    memory.push(await settledSample(gw, probeFile, 'streams closed (subscriptions kept)'));

    return report({
      openFiles,
      subscribeS,
      openS,
      warm,
      memory,
      idleCpuPct: [idleCpuWithout, idleCpuWith],
      stalls: [stallsWithout, stallsWith],
      hitsWithout,
      hitsWith,
      deliveries,
    });
  } finally {
    posts.destroy();
    await Promise.all(clients.map((c) => c.stop()));
    await node.stop();
    await gw?.proc.stop(5000);
    await ref?.proc.stop(5000);
  }
}

interface Stalls {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

interface Figures {
  readonly openFiles: number;
  readonly subscribeS: number;
  readonly openS: number;
  readonly warm: readonly {
    height: number;
    ms: number;
    callReads: number;
    callReadAttempts: Record<string, number>;
    evaluations: Record<string, number>;
  }[];
  readonly memory: readonly MemoryPoint[];
  /** The gateway's idle CPU with no stream and with the streams open, % of one core. */
  readonly idleCpuPct: readonly [number, number];
  /** /health answer times (ms) over a heartbeat period, with no stream and with the streams open. */
  readonly stalls: readonly [Stalls, Stalls];
  readonly hitsWithout: HitPhase;
  readonly hitsWith: HitPhase;
  readonly deliveries: readonly BlockDelivery[];
}

const f1 = (n: number): string => n.toFixed(1);

function report(f: Figures) {
  const all = f.deliveries.flatMap((d) => d.latenciesMs);
  const p50 = quantile(all, 0.5);
  const p99 = quantile(all, 0.99);
  const max = Math.max(...all);
  const everyAffected = f.deliveries.every((d) => d.affectedWithEvent === AFFECTED_STREAMS);
  const calls = f.deliveries.map((d) => d.upstreamCallReads);
  const stray = f.deliveries.reduce((a, d) => a + d.unaffectedWithEvent, 0);
  const [m0, mSubs, mStreams, mClosed] = f.memory.map((m) => m.sample) as [Sample, Sample, Sample, Sample];
  const kib = (from: Sample, to: Sample): number => ((to.rssMiB - from.rssMiB) * 1024) / STREAMS;
  const heapKib = (from: Sample, to: Sample): number =>
    (((to.liveHeapMiB ?? Number.NaN) - (from.liveHeapMiB ?? Number.NaN)) * 1024) / STREAMS;
  const perStream = kib(m0, mStreams);
  const without = roundRatio(f.hitsWithout);
  const withStreams = roundRatio(f.hitsWith);
  const hitRatio = withStreams / without;
  const rps = (p: HitPhase, side: 'gw' | 'ref'): number => median(p[side].map((m) => m.rps));
  const rows: Row[] = [
    {
      figure: `delivery: \`/new_block\` posted → each affected stream's event, ${MEASURED_BLOCKS} blocks × ${int(AFFECTED_STREAMS)} of ${int(STREAMS)} streams (p50 / p99 / max)`,
      value: `${f1(p50)} / ${f1(p99)} / ${f1(max)} ms`,
      reference: '—',
      ratio: '—',
      target: `p99 ≤ ${GOAL_P99_MS} ms`,
      status: mark(everyAffected && p99 <= GOAL_P99_MS),
    },
    {
      figure: `upstream call-reads per block changing ${CHANGED_READS} of the ${int(READS)} watched reads`,
      value: calls.join(' / '),
      reference: '—',
      ratio: '—',
      target: `exactly ${CHANGED_READS}`,
      status: mark(calls.every((c) => c === CHANGED_READS)),
    },
    {
      figure: `streams of unchanged reads sent an event (${MEASURED_BLOCKS} blocks × ${int(STREAMS - AFFECTED_STREAMS)})`,
      value: `${stray}`,
      reference: '—',
      ratio: '—',
      target: '0',
      status: mark(stray === 0),
    },
    {
      figure: `RSS per idle stream, its subscription included (0 → ${int(STREAMS)} streams, after a full GC)`,
      value: `${f1(perStream)} KiB`,
      reference: `RSS ${m0.rssMiB} → ${mStreams.rssMiB} MiB`,
      ratio: '—',
      target: `≤ ${GOAL_KIB_PER_STREAM} KiB`,
      status: mark(perStream <= GOAL_KIB_PER_STREAM),
    },
    {
      figure: 'of which the subscription (stored, no stream) / the open stream',
      value: `${f1(kib(m0, mSubs))} / ${f1(kib(mSubs, mStreams))} KiB`,
      reference: `live heap ${f1(heapKib(m0, mSubs))} / ${f1(heapKib(mSubs, mStreams))} KiB`,
      ratio: '—',
      target: '—',
      status: '—',
    },
    {
      figure: `gateway CPU with no request, over one heartbeat period (${IDLE_CPU_S} s): ${int(STREAMS)} idle streams`,
      value: `${f.idleCpuPct[1].toFixed(2)} % of a core`,
      reference: `${f.idleCpuPct[0].toFixed(2)} % (no stream)`,
      ratio: '—',
      target: '—',
      status: '—',
    },
    {
      figure: `\`GET /health\` every 20 ms over one heartbeat period, ${int(STREAMS)} idle streams (p50 / p99 / max)`,
      value: `${f1(f.stalls[1].p50)} / ${f1(f.stalls[1].p99)} / ${f1(f.stalls[1].max)} ms`,
      reference: `${f1(f.stalls[0].p50)} / ${f1(f.stalls[0].p99)} / ${f1(f.stalls[0].max)} ms (no stream)`,
      ratio: '—',
      target: '—',
      status: '—',
    },
    {
      figure: 'read-only hit, no stream open',
      value: `${int(rps(f.hitsWithout, 'gw'))} req/s`,
      reference: `${int(rps(f.hitsWithout, 'ref'))} req/s`,
      ratio: `${without.toFixed(3)}×`,
      target: '—',
      status: '—',
    },
    {
      figure: `read-only hit, ${int(STREAMS)} idle streams open (ratio: its ratio to the reference against the one with no stream)`,
      value: `${int(rps(f.hitsWith, 'gw'))} req/s (${withStreams.toFixed(3)}× its reference)`,
      reference: `${int(rps(f.hitsWith, 'ref'))} req/s`,
      ratio: `${hitRatio.toFixed(3)}×`,
      target: `≥ ${GOAL_HIT_RATIO}×`,
      status: mark(hitRatio >= GOAL_HIT_RATIO),
    },
  ];
  const summary = (m: Measured) => ({
    rps: m.rps,
    p50: m.latencyMs.p50,
    p99: m.latencyMs.p99,
    serverCpuUsPerRequest: m.serverCpuUsPerRequest,
    loadGeneratorCpuPct: m.loadGeneratorCpuPct,
  });
  return {
    settings: {
      streams: STREAMS,
      distinctReads: READS,
      contracts: WATCH_CONTRACTS,
      changedReadsPerBlock: CHANGED_READS,
      measuredBlocks: MEASURED_BLOCKS,
      clientProcesses: CLIENT_PROCESSES,
      openFilesLimit: f.openFiles,
      hitRounds: HIT_ROUNDS,
      hitWarmupS: HIT_WARMUP_S,
      hitS: HIT_S,
      connections: 64,
      quietMs: QUIET_MS,
    },
    rows,
    notes: [
      `One gateway (what \`npm start\` runs, SQLite store, \`LOG_LEVEL=warn\`, event observer on, \`WATCH_MAX_STREAMS_*\` raised), its`,
      `upstream a stand-in node process (bench/watch-node-process.ts): ${WATCH_CONTRACTS} contracts whose \`get-entry(id)\` changes at the`,
      `blocks said to call them. ${int(STREAMS)} subscriptions of one read each, ${STREAMS_PER_READ} a read (${int(READS)} distinct reads), their`,
      `streams held over raw sockets by ${CLIENT_PROCESSES} client processes (bench/watch-clients.ts). Delivery: ${MEASURED_BLOCKS} blocks each calling`,
      `${CHANGED_CONTRACTS} contracts (${CHANGED_READS} reads, ${int(AFFECTED_STREAMS)} streams), after empty blocks until the dependency analysis is known`,
      'and one block calling every contract; the time from just before the `/new_block` post to the arrival of',
      "each event's bytes at its client (one monotonic clock for every process); call-reads counted at the node.",
      'Memory: VmRSS after a full collection (bench/memory-probe.mjs, `--expose-gc`), settled. Hits: wrk `-t1 -c64`,',
      `${HIT_WARMUP_S} s warm-up then ${HIT_S} s, ${HIT_ROUNDS} rounds alternating with the bare reference, before any subscription and with`,
      'the streams open; the figure compares the gateway-to-reference ratios of the two phases. Idle CPU: the',
      `gateway's CPU time (/proc, every thread) over ${IDLE_CPU_S} s with no request, with no stream and with the streams open;`,
      `then, as long again, a \`GET /health\` every 20 ms, whose slowest answers show work done in one go.`,
    ],
    results: {
      subscribeS: round(f.subscribeS, 1),
      openStreamsS: round(f.openS, 1),
      warmUpBlocks: f.warm,
      memory: f.memory,
      idleCpuPct: { noStream: round(f.idleCpuPct[0], 2), idleStreams: round(f.idleCpuPct[1], 2) },
      healthMs: { noStream: f.stalls[0], idleStreams: f.stalls[1] },
      delivery: {
        p50Ms: round(p50, 1),
        p99Ms: round(p99, 1),
        maxMs: round(max, 1),
        blocks: f.deliveries.map((d) => ({
          ...d,
          latenciesMs: undefined,
          p50Ms: round(quantile(d.latenciesMs, 0.5), 1),
          p99Ms: round(quantile(d.latenciesMs, 0.99), 1),
          maxMs: round(Math.max(...d.latenciesMs), 1),
          minMs: round(Math.min(...d.latenciesMs), 1),
        })),
      },
      hits: {
        withoutStreams: {
          ratio: round(without, 3),
          gw: f.hitsWithout.gw.map(summary),
          ref: f.hitsWithout.ref.map(summary),
        },
        withStreams: {
          ratio: round(withStreams, 3),
          gw: f.hitsWith.gw.map(summary),
          ref: f.hitsWith.ref.map(summary),
        },
      },
      memoryAfterClose: mClosed,
    },
  };
}

export const watch: BenchCase = { title: 'watched reads: delivery, idle streams, hits beside them', run };
runStandalone(import.meta.filename, watch);
