/**
 * independent: every goal measured the way an outside reviewer measured it, each one a ratio to a
 * reference measured in the same run, so that their figures can be reproduced here as they are.
 *
 * The protocol:
 * - The gateway is started as a user starts it: `npm start` in the repository root (which builds
 *   dist/ first when the bundle is older than its sources), NODE_ENV=production, LOG_LEVEL=warn,
 *   HOST=127.0.0.1, a fresh DATA_DIR, both STACKS_API_URL_* on the stand-in node
 *   (bench/fake-node-process.ts) and the default store (SQLite with its memory hot tier: no
 *   CACHE_STORE). Every other variable of the gateway is removed from the environment it inherits.
 *   The only extra settings: UPSTREAM_RATE_LIMIT_PER_MINUTE=100000000 on the gateway that makes
 *   misses (its rows say so) and API_KEYS_FILE on the keys-on gateway. `GATEWAY=<bundle.mjs>`
 *   runs `node <bundle>` instead of `npm start`, same environment (e.g. the bundle of a clean
 *   export). CPU and RSS are those of the node process that runs the gateway (npm's child), not
 *   of npm.
 * - Load: `wrk -t1 -c64 -d5s`, no warm-up, three rounds, the gateway and its reference taking
 *   turns (the gateway first in rounds 1 and 3, second in round 2); each figure is the median of
 *   its three rounds and the ratio is the ratio of the medians. QUICK=1: one round of 2 s.
 * - The hit reference: a bare node:http server in its own process (bench/reference-server.ts)
 *   that reads and JSON.parses the body and answers the gateway's exact bytes, captured first
 *   and checked to be what the reference answers. The miss reference: bench/proxy-reference.ts,
 *   a bare node:http server forwarding method, path and body to the stand-in over an undici Pool.
 *
 * The goals:
 * 1. Read-only hit (`POST /contract-calls/read-only/{mainnet}/demo/get-info`, no arguments):
 *    throughput ≥ 0.85× the reference, p99 ≤ 1.3× the reference's p99.
 * 2. `POST /contract-calls/decode-clarity-value`: throughput ≥ 0.85×.
 * 3. Node-compatible hit (`POST /v2/contracts/call-read/{mainnet}/demo/get-info`, the node's own
 *    request shape): throughput ≥ 0.90×.
 * 4. Three bodies in turn on one path (`get-entry` u1, u2, u3, the reference keyed by path and
 *    body): throughput ≥ 0.85×.
 * 5. The read-only hit of goal 1 with API keys on (a keys file with one key whose quotas are out
 *    of reach, every request carrying it) against a gateway without keys (same requests, same
 *    header): ≥ 0.95×. The keys-on answer must carry `RateLimit` and `Clarity-Cache-Cost`.
 * 6. Miss overhead: the stand-in answers every call-read after 20 ms; 300 sequential misses (one
 *    connection, a fresh `get-entry` argument each) through the gateway and 300 call-reads
 *    straight to the stand-in, alternating, after 10 unmeasured of each:
 *    p50(gateway) − p50(direct) ≤ 1.5 ms.
 * 7. Distinct misses per second, the stand-in answering at once: the node-compatible `get-entry`
 *    with a fresh random 32-hex-digit uint per request, through the gateway and through the proxy
 *    reference (the identical request forwarded): ≥ 0.5×. Informational, no goal: the same rate
 *    on the gateway's own read-only route (random decimal ids) against the same proxy figure.
 *    Any non-2xx answer or socket error fails the case; the stand-in's requests per miss are
 *    reported.
 * 8. Scale: a SQLite file seeded with 1,000,000 entries (keys built as the gateway builds them)
 *    before the gateway starts, and one with 10,000: RSS of the 1M gateway after uniform random
 *    hits over all its entries ≤ 256 MiB; those uniform hits ≥ 0.5× the throughput of one hot
 *    key asked over and over on the same gateway; their p99 ≤ 1.5× the p99 of uniform hits over
 *    the 10k gateway. INDEPENDENT_SCALE=<n> seeds n entries instead of 1M (for trying it out).
 *
 *   QUICK=1 node --import tsx bench/cases/independent.ts     (one round of 2 s: a trial run)
 *   node --import tsx bench/run.ts independent --no-report   (the protocol: about 6 minutes)
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { VARIABLES } from '../../src/config/variables.js';
import { MAINNET_ADDR } from '../../test/support/fixtures.js';
import { CONTRACT } from '../fake-node-process.js';
import type { LoadSpec } from '../load.js';
import { seedEntries } from '../seed.js';
import {
  ABI_PATH,
  type BenchCase,
  cleanup,
  cpuOf,
  DECODE_BODY,
  DECODE_PATH,
  ENTRY_PATH,
  entryBody,
  expectOk,
  type FakeNodeProc,
  freePort,
  freshDir,
  type HitFigures,
  int,
  log,
  type Measured,
  mark,
  measure,
  median,
  medianRound,
  memoryOf,
  ms,
  type Proc,
  QUICK,
  quantile,
  RO_BODY,
  RO_PATH,
  ROOT,
  type Row,
  round,
  runStandalone,
  type Server,
  sequentialMisses,
  sleep,
  spawnNode,
  startFakeNodeProcess,
  startReference,
  waitForHttp,
  x,
} from '../support.js';

const ROUNDS = QUICK ? 1 : 3;
const SECONDS = QUICK ? 2 : 5;
const CONNECTIONS = 64;
const START_TIMEOUT_MS = 180_000;
const MISS_RATE_LIMIT = '100000000';
const SCALE_ENTRIES = Number(process.env.INDEPENDENT_SCALE ?? 1_000_000);
const SMALL_ENTRIES = 10_000;
const MISSES = QUICK ? 60 : 300;
const MISS_WARM = 10;
const UPSTREAM_DELAY_MS = 20;
const API_KEY = `bench-${randomBytes(16).toString('hex')}`;

const V2_INFO_PATH = `/v2/contracts/call-read/${MAINNET_ADDR}/${CONTRACT}/get-info`;
const V2_INFO_BODY = JSON.stringify({ sender: MAINNET_ADDR, arguments: [] });
const V2_ENTRY_PATH = `/v2/contracts/call-read/${MAINNET_ADDR}/${CONTRACT}/get-entry`;
/** A node-compatible get-entry body around a uint's 32 hex digits (`0x01` is the uint type byte). */
const V2_ENTRY_PREFIX = `{"sender":"${MAINNET_ADDR}","arguments":["0x01`;
const V2_ENTRY_SUFFIX = '"]}';
const v2EntryBody = (digits: string): string => `${V2_ENTRY_PREFIX}${digits}${V2_ENTRY_SUFFIX}`;

// --- the gateway, started as a user starts it ---

/** The gateway's own variables are not inherited: it sees only what the protocol sets. */
const GATEWAY_VARIABLES = new Set(VARIABLES.map((v) => v.name));

/** Process groups of gateways still running, ended on exit whatever happened. */
const groups = new Set<number>();
// A detached group outlives its parent: SIGTERM (which alone would skip the exit handlers)
// ends the run the way a failure does, so that no gateway is left running.
process.once('SIGTERM', () => {
  cleanup();
  process.exit(143);
});
process.on('exit', () => {
  for (const pgid of groups) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

/** The pids below `pid` (every thread's children), depth first. */
function descendants(pid: number): number[] {
  const out: number[] = [];
  let tasks: string[] = [];
  try {
    tasks = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const task of tasks) {
    let children = '';
    try {
      children = fs.readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8');
    } catch {
      continue;
    }
    for (const c of children.split(' ').filter((s) => s !== '')) {
      out.push(Number(c), ...descendants(Number(c)));
    }
  }
  return out;
}

const cmdline = (pid: number): string => {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return '';
  }
};

const alive = (pid: number): boolean => fs.existsSync(`/proc/${pid}`);

interface UserGateway extends Server {
  readonly label: string;
  stop(): Promise<void>;
}

async function startAsUser(
  label: string,
  upstream: string,
  dataDir: string,
  extra: Record<string, string> = {},
): Promise<UserGateway> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(env)) if (GATEWAY_VARIABLES.has(name)) delete env[name];
  delete env.NODE_OPTIONS;
  Object.assign(env, {
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    STACKS_API_URL_MAINNET: upstream,
    STACKS_API_URL_TESTNET: upstream,
    ...extra,
  });
  const bundle = process.env.GATEWAY;
  // Detached: a process group of its own (npm, its shell, node), ended as a whole.
  const child: ChildProcess =
    bundle === undefined
      ? spawn('npm', ['start'], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn(process.execPath, [path.resolve(bundle)], {
          cwd: ROOT,
          env,
          detached: true,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
  const pgid = child.pid ?? -1;
  groups.add(pgid);
  let out = '';
  const keep = (chunk: Buffer): void => {
    out = (out + chunk.toString()).slice(-65_536);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let gatewayPid = pgid;
  const stop = async (): Promise<void> => {
    if (!groups.has(pgid)) return;
    const signal = (s: NodeJS.Signals): void => {
      try {
        process.kill(-pgid, s);
      } catch {
        // already gone
      }
    };
    signal('SIGTERM');
    const deadline = performance.now() + 10_000;
    while (
      (alive(gatewayPid) || (child.exitCode === null && child.signalCode === null)) &&
      performance.now() < deadline
    )
      await sleep(50);
    signal('SIGKILL');
    groups.delete(pgid);
  };
  const proc: Proc = {
    child,
    get pid() {
      return gatewayPid;
    },
    exited,
    output: () => out,
    stop: async () => {
      await stop();
      return child.exitCode;
    },
  };
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitForHttp(`${url}/contract-calls/known-contracts`, proc, { timeoutMs: START_TIMEOUT_MS });
    if (bundle === undefined) {
      // The node process itself, not the shell npm runs it through.
      const node = descendants(pgid).find((pid) => {
        const argv = cmdline(pid).split(' ');
        return path.basename(argv[0] ?? '') === 'node' && argv.includes('scripts/start.mjs');
      });
      if (node === undefined)
        throw new Error(`${label}: no node process running scripts/start.mjs under npm (pid ${pgid})`);
      gatewayPid = node;
    }
  } catch (err) {
    await stop();
    throw err;
  }
  log(`${label}: gateway on ${url}, pid ${gatewayPid} (${cmdline(gatewayPid).trim()})`);
  return { label, url, proc, stop };
}

// --- requests and load ---

interface Answer {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
}

function post(url: string, body: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', ...headers },
        timeout: 30_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString('utf8'),
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

async function postOk(url: string, body: string, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await post(url, body, headers);
  if (res.status !== 200) throw new Error(`${url}: HTTP ${res.status} ${res.body.slice(0, 300)}`);
  return res;
}

/** One protocol run: wrk -t1 -c64, no warm-up, SECONDS; any error or timeout fails the case. */
async function run1(server: Server, url: string, body: string, extra: Partial<LoadSpec> = {}) {
  const m = await measure(server, url, body, {
    connections: CONNECTIONS,
    warmupSeconds: 0,
    durationSeconds: SECONDS,
    ...extra,
  });
  if (m.timeouts > 0) throw new Error(`${url}: ${m.timeouts} timeouts under load`);
  return m;
}

/**
 * ROUNDS rounds of two runs, the first one (the gateway) first in odd rounds and second in even
 * rounds; returns each side's rounds.
 */
async function alternate(
  label: string,
  a: () => Promise<Measured>,
  b: () => Promise<Measured>,
): Promise<[Measured[], Measured[]]> {
  const as: Measured[] = [];
  const bs: Measured[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const runs = [async () => as.push(await a()), async () => bs.push(await b())];
    if (i % 2 === 1) runs.reverse();
    for (const r of runs) await r();
    log(`${label} round ${i + 1}/${ROUNDS}: ${as.at(-1)!.rps} vs ${bs.at(-1)!.rps} req/s`);
  }
  return [as, bs];
}

const goalText = (goal: number, below = false): string => `${below ? '≤' : '≥'} ${goal.toFixed(2)}×`;

function rpsRow(figure: string, g: HitFigures, r: HitFigures, goal: number, refLabel = ''): Row {
  const ratio = g.rps / r.rps;
  return {
    figure,
    value: `${int(g.rps)} req/s`,
    reference: `${int(r.rps)} req/s${refLabel}`,
    ratio: x(ratio),
    target: goalText(goal),
    status: mark(ratio >= goal),
    loadCpu: `${cpuOf(g)} / ${cpuOf(r)}`,
  };
}

/** The figures of a side, without the per-round detail's noise for the record. */
const brief = (f: HitFigures) => ({
  rps: f.rps,
  p50: f.p50,
  p99: f.p99,
  cpuUsPerRequest: f.cpuUsPerRequest,
  rounds: f.rounds.map((m) => ({
    rps: m.rps,
    ok: m.ok,
    non2xx: m.non2xx,
    errors: m.errors,
    p50: m.latencyMs.p50,
    p99: m.latencyMs.p99,
    serverCpuPct: m.serverCpuPct,
    loadGeneratorCpuPct: m.loadGeneratorCpuPct,
  })),
});

const nonOk = (f: HitFigures): number => f.rounds.reduce((n, m) => n + m.non2xx + m.errors + m.timeouts, 0);

// --- goals 1 to 5: hits ---

async function hitGoals(node: FakeNodeProc) {
  const gw = await startAsUser('hits', node.url, freshDir('independent-hits'));
  const keysDir = freshDir('independent-keys');
  const keysFile = path.join(keysDir, 'keys.json');
  fs.writeFileSync(
    keysFile,
    JSON.stringify([
      {
        name: 'bench',
        key: API_KEY,
        requestsPerMinute: 100_000_000,
        unitsPerMinute: 100_000_000,
        unitsPerMonth: 100_000_000,
      },
    ]),
  );
  const gwKeys = await startAsUser('keys-on', node.url, keysDir, { API_KEYS_FILE: keysFile });
  const refs: Server[] = [];
  try {
    // Capture the gateway's bytes: the first request of each is a miss that stores the entry.
    const capture = async (p: string, body: string): Promise<Answer> => {
      await postOk(`${gw.url}${p}`, body);
      return postOk(`${gw.url}${p}`, body);
    };
    const ro = await capture(RO_PATH, RO_BODY);
    const decode = await capture(DECODE_PATH, DECODE_BODY);
    const v2 = await capture(V2_INFO_PATH, V2_INFO_BODY);
    const bodies = [1, 2, 3].map(entryBody);
    const rotating: Record<string, string> = {};
    for (const body of bodies) rotating[`${ENTRY_PATH}\n${body}`] = (await capture(ENTRY_PATH, body)).body;
    const contentTypes = new Set([ro, decode, v2].map((a) => String(a.headers['content-type'])));

    const plain = await startReference(
      { [RO_PATH]: ro.body, [DECODE_PATH]: decode.body, [V2_INFO_PATH]: v2.body },
      freshDir('independent-ref'),
    );
    refs.push(plain);
    const byBody = await startReference(
      { [ENTRY_PATH]: rotating[`${ENTRY_PATH}\n${bodies[0]}`]!, ...rotating },
      freshDir('independent-ref-rotating'),
    );
    refs.push(byBody);
    // bench/reference-server.ts always says `application/json; charset=utf-8`; the media type must
    // match, a charset parameter the gateway leaves out (its node-compatible route) is recorded.
    const typeDiffers: string[] = [];
    const mediaType = (h: string | undefined): string => String(h).split(';')[0]!.trim();
    const same = async (ref: Server, p: string, body: string, want: Answer | string): Promise<void> => {
      const got = await postOk(`${ref.url}${p}`, body);
      const bytes = typeof want === 'string' ? want : want.body;
      if (got.body !== bytes) throw new Error(`reference bytes differ on ${p}`);
      if (typeof want === 'string' || got.headers['content-type'] === want.headers['content-type']) return;
      if (mediaType(got.headers['content-type']) !== mediaType(want.headers['content-type']))
        throw new Error(
          `reference content type on ${p}: ${got.headers['content-type']}, gateway: ${want.headers['content-type']}`,
        );
      typeDiffers.push(
        `${p.split('/').slice(0, 3).join('/')}…: gateway \`${want.headers['content-type']}\`, reference \`${got.headers['content-type']}\``,
      );
    };
    await same(plain, RO_PATH, RO_BODY, ro);
    await same(plain, DECODE_PATH, DECODE_BODY, decode);
    await same(plain, V2_INFO_PATH, V2_INFO_BODY, v2);
    for (const body of bodies) await same(byBody, ENTRY_PATH, body, rotating[`${ENTRY_PATH}\n${body}`]!);

    // Keys on: metered and under the unit quotas, else the figure measures something else.
    const keyHeader = { 'x-api-key': API_KEY };
    await postOk(`${gwKeys.url}${RO_PATH}`, RO_BODY, keyHeader);
    const metered = await postOk(`${gwKeys.url}${RO_PATH}`, RO_BODY, keyHeader);
    if (metered.headers.ratelimit === undefined || metered.headers['clarity-cache-cost'] === undefined)
      throw new Error(
        `keys-on hit carries no RateLimit / Clarity-Cache-Cost: ${JSON.stringify(metered.headers)}`,
      );
    if (metered.body !== ro.body) throw new Error('keys-on answer differs from keys-off');
    await postOk(`${gw.url}${RO_PATH}`, RO_BODY, keyHeader);
    const callReads0 = await node.count('call-read');

    const [roG, roR] = await alternate(
      'read-only hit',
      () => run1(gw, `${gw.url}${RO_PATH}`, RO_BODY),
      () => run1(plain, `${plain.url}${RO_PATH}`, RO_BODY),
    );
    const [decG, decR] = await alternate(
      'decode',
      () => run1(gw, `${gw.url}${DECODE_PATH}`, DECODE_BODY),
      () => run1(plain, `${plain.url}${DECODE_PATH}`, DECODE_BODY),
    );
    const [v2G, v2R] = await alternate(
      'node-compatible hit',
      () => run1(gw, `${gw.url}${V2_INFO_PATH}`, V2_INFO_BODY),
      () => run1(plain, `${plain.url}${V2_INFO_PATH}`, V2_INFO_BODY),
    );
    const [rotG, rotR] = await alternate(
      'three bodies',
      () => run1(gw, `${gw.url}${ENTRY_PATH}`, '', { bodies }),
      () => run1(byBody, `${byBody.url}${ENTRY_PATH}`, '', { bodies }),
    );
    const [onG, offG] = await alternate(
      'keys on / off',
      () => run1(gwKeys, `${gwKeys.url}${RO_PATH}`, RO_BODY, { headers: keyHeader }),
      () => run1(gw, `${gw.url}${RO_PATH}`, RO_BODY, { headers: keyHeader }),
    );
    const upstreamCallsUnderLoad = (await node.count('call-read')) - callReads0;
    if (upstreamCallsUnderLoad !== 0)
      throw new Error(`hits: ${upstreamCallsUnderLoad} call-reads reached the stand-in under load`);
    return {
      contentTypes: [...contentTypes],
      typeDiffers,
      memory: { hits: memoryOf(gw.proc.pid), keysOn: memoryOf(gwKeys.proc.pid) },
      readOnly: { gateway: medianRound(roG), reference: medianRound(roR) },
      decode: { gateway: medianRound(decG), reference: medianRound(decR) },
      nodeCompatible: { gateway: medianRound(v2G), reference: medianRound(v2R) },
      rotating: { gateway: medianRound(rotG), reference: medianRound(rotR) },
      keys: { on: medianRound(onG), off: medianRound(offG) },
      meteredHeaders: {
        ratelimit: String(metered.headers.ratelimit),
        cost: String(metered.headers['clarity-cache-cost']),
      },
    };
  } finally {
    for (const r of refs) await r.proc.stop();
    await gwKeys.stop();
    await gw.stop();
  }
}

type Hits = Awaited<ReturnType<typeof hitGoals>>;

function hitRows(h: Hits): Row[] {
  const roP99 = h.readOnly.gateway.p99 / h.readOnly.reference.p99;
  return [
    rpsRow(
      '1. read-only hit (get-info, npm start, c64, 5 s × 3 alternating, ratio of medians): throughput',
      h.readOnly.gateway,
      h.readOnly.reference,
      0.85,
    ),
    {
      figure: '1. read-only hit: p99 latency',
      value: ms(h.readOnly.gateway.p99, 3),
      reference: ms(h.readOnly.reference.p99, 3),
      ratio: x(roP99),
      target: goalText(1.3, true),
      status: mark(roP99 <= 1.3),
    },
    rpsRow('2. decode-clarity-value: throughput', h.decode.gateway, h.decode.reference, 0.85),
    rpsRow(
      '3. node-compatible hit (/v2/contracts/call-read …/get-info): throughput',
      h.nodeCompatible.gateway,
      h.nodeCompatible.reference,
      0.9,
    ),
    rpsRow(
      '4. three bodies in turn on one path (get-entry u1, u2, u3): throughput',
      h.rotating.gateway,
      h.rotating.reference,
      0.85,
    ),
    rpsRow(
      '5. read-only hit, API keys on (keys file, X-API-Key) vs keys off (same header)',
      h.keys.on,
      h.keys.off,
      0.95,
      ' (keys off)',
    ),
  ];
}

// --- goals 6 and 7: misses ---

async function startProxy(upstream: string): Promise<Server> {
  const port = await freePort();
  const proc = spawnNode(['--import', 'tsx', 'bench/proxy-reference.ts'], {
    PORT: String(port),
    UPSTREAM: upstream,
  });
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}${V2_INFO_PATH}`, proc, { body: V2_INFO_BODY });
  return { url, proc };
}

async function missGoals(node: FakeNodeProc) {
  const gw = await startAsUser('misses', node.url, freshDir('independent-misses'), {
    UPSTREAM_RATE_LIMIT_PER_MINUTE: MISS_RATE_LIMIT,
  });
  const proxy = await startProxy(node.url);
  try {
    await expectOk(`${gw.url}${ABI_PATH}`);
    // 6. Sequential misses over a 20 ms stand-in.
    await node.call({ cmd: 'delay', ms: UPSTREAM_DELAY_MS, kind: 'call-read' });
    log(`misses: ${MISSES} sequential misses through the gateway and ${MISSES} direct, alternating`);
    const { viaGateway, direct } = await sequentialMisses(gw.url, node.url, MISSES, MISS_WARM);
    await node.call({ cmd: 'clearFaults' });

    // 7. Distinct misses per second, the stand-in answering at once. The proxy must forward the
    // request the gateway answers, with the same answer bytes.
    const probe = v2EntryBody(randomBytes(16).toString('hex'));
    const gwProbe = await postOk(`${gw.url}${V2_ENTRY_PATH}`, probe);
    const proxyProbe = await postOk(
      `${proxy.url}${V2_ENTRY_PATH}`,
      v2EntryBody(randomBytes(16).toString('hex')),
    );
    const sameBytes = gwProbe.body === proxyProbe.body;
    const spreadHex = { prefix: V2_ENTRY_PREFIX, suffix: V2_ENTRY_SUFFIX, digits: 32 };
    const spread = {
      count: 2_000_000_000,
      prefix: '{"functionArgs":[{"type":"uint","value":"',
      suffix: '"}]}',
    };
    const upstream = { calls: 0, callReads: 0, answered: 0 };
    /** A gateway run, with what the stand-in saw during it. */
    const counted = async (f: () => Promise<Measured>): Promise<Measured> => {
      const all0 = await node.count();
      const cr0 = await node.count('call-read');
      const m = await f();
      upstream.calls += (await node.count()) - all0;
      upstream.callReads += (await node.count('call-read')) - cr0;
      upstream.answered += m.ok + m.non2xx;
      return m;
    };
    const gwV2: Measured[] = [];
    const gwRo: Measured[] = [];
    const px: Measured[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const runs = [
        async () =>
          gwV2.push(
            await counted(() =>
              run1(gw, `${gw.url}${V2_ENTRY_PATH}`, '', { spreadHex: { ...spreadHex, seed: seedOf() } }),
            ),
          ),
        async () =>
          px.push(
            await run1(proxy, `${proxy.url}${V2_ENTRY_PATH}`, '', {
              spreadHex: { ...spreadHex, seed: seedOf() },
            }),
          ),
        async () => gwRo.push(await run1(gw, `${gw.url}${ENTRY_PATH}`, '', { spread })),
      ];
      if (i % 2 === 1) runs.reverse();
      for (const r of runs) await r();
      log(
        `distinct misses round ${i + 1}/${ROUNDS}: gateway ${gwV2.at(-1)!.rps}, proxy ${px.at(-1)!.rps}, gateway read-only route ${gwRo.at(-1)!.rps} req/s`,
      );
    }
    return {
      overhead: {
        misses: viaGateway.length,
        gatewayMs: { p50: round(median(viaGateway), 3), p90: round(quantile(viaGateway, 0.9), 3) },
        directMs: { p50: round(median(direct), 3), p90: round(quantile(direct, 0.9), 3) },
      },
      distinct: {
        gateway: medianRound(gwV2),
        proxy: medianRound(px),
        gatewayReadOnly: medianRound(gwRo),
        sameBytes,
        upstreamPerMiss: round(upstream.calls / Math.max(1, upstream.answered), 3),
        callReadsPerMiss: round(upstream.callReads / Math.max(1, upstream.answered), 3),
      },
      memory: memoryOf(gw.proc.pid),
    };
  } finally {
    await node.call({ cmd: 'clearFaults' }).catch(() => undefined);
    await proxy.proc.stop();
    await gw.stop();
  }
}

const seedOf = (): number => randomBytes(4).readUInt32BE(0) >>> 1;

type Misses = Awaited<ReturnType<typeof missGoals>>;

function missRows(m: Misses): Row[] {
  const overhead = m.overhead.gatewayMs.p50 - m.overhead.directMs.p50;
  const d = m.distinct;
  const ratio = d.gateway.rps / d.proxy.rps;
  const roRatio = d.gatewayReadOnly.rps / d.proxy.rps;
  return [
    {
      figure: `6. p50 miss − p50 direct call (stand-in ${UPSTREAM_DELAY_MS} ms, ${m.overhead.misses} sequential each; UPSTREAM_RATE_LIMIT_PER_MINUTE=${MISS_RATE_LIMIT})`,
      value: ms(overhead, 3),
      reference: `${ms(m.overhead.directMs.p50, 3)} (direct p50)`,
      ratio: x(m.overhead.gatewayMs.p50 / m.overhead.directMs.p50, 3),
      target: '≤ 1.5 ms',
      status: mark(overhead <= 1.5),
    },
    {
      figure: `7. distinct misses/s, node-compatible get-entry, random 32-hex uint (UPSTREAM_RATE_LIMIT_PER_MINUTE=${MISS_RATE_LIMIT}; non-2xx ${nonOk(d.gateway)} / ${nonOk(d.proxy)}; ${d.upstreamPerMiss} stand-in requests per miss)`,
      value: `${int(d.gateway.rps)} req/s`,
      reference: `${int(d.proxy.rps)} req/s (proxy)`,
      ratio: x(ratio),
      target: goalText(0.5),
      status: mark(ratio >= 0.5),
      loadCpu: `${cpuOf(d.gateway)} / ${cpuOf(d.proxy)}`,
    },
    {
      figure: `7. (informational) distinct misses/s on the read-only route, random decimal ids (non-2xx ${nonOk(d.gatewayReadOnly)})`,
      value: `${int(d.gatewayReadOnly.rps)} req/s`,
      reference: `${int(d.proxy.rps)} req/s (proxy, node-compatible)`,
      ratio: x(roRatio),
      target: '—',
      status: '—',
      loadCpu: `${cpuOf(d.gatewayReadOnly)} / ${cpuOf(d.proxy)}`,
    },
  ];
}

// --- goal 8: scale ---

async function scaleGoals(node: FakeNodeProc) {
  const sizes = [SCALE_ENTRIES, SMALL_ENTRIES];
  const dirs = sizes.map((n) => freshDir(`independent-scale-${n}`));
  const seedMs: number[] = [];
  for (let i = 0; i < sizes.length; i++) {
    log(`scale: seeding ${int(sizes[i]!)} entries`);
    seedMs.push(await seedEntries(dirs[i]!, sizes[i]!));
  }
  const started: UserGateway[] = [];
  try {
    // One after the other: a stale bundle is then built once, by the first.
    for (let i = 0; i < sizes.length; i++)
      started.push(await startAsUser(`scale ${int(sizes[i]!)}`, node.url, dirs[i]!));
    const [big, small] = started as [UserGateway, UserGateway];
    const callReads0 = await node.count('call-read');
    for (const [gw, n] of [
      [big, SCALE_ENTRIES],
      [small, SMALL_ENTRIES],
    ] as const) {
      await expectOk(`${gw.url}${ENTRY_PATH}`, entryBody(0));
      await expectOk(`${gw.url}${ENTRY_PATH}`, entryBody(n - 1));
    }
    if ((await node.count('call-read')) !== callReads0)
      throw new Error('scale: a seeded key missed (key layout mismatch)');
    const idle = memoryOf(big.proc.pid);
    const spreadOver = (n: number) => ({
      spread: { count: n, prefix: '{"functionArgs":[{"type":"uint","value":"', suffix: '"}]}' },
    });
    const hotBody = entryBody(Math.floor(SCALE_ENTRIES / 2));
    const runs = {
      uniform: [] as Measured[],
      hot: [] as Measured[],
      small: [] as Measured[],
    };
    const steps = [
      async () =>
        runs.uniform.push(await run1(big, `${big.url}${ENTRY_PATH}`, '', spreadOver(SCALE_ENTRIES))),
      async () => runs.hot.push(await run1(big, `${big.url}${ENTRY_PATH}`, hotBody)),
      async () =>
        runs.small.push(await run1(small, `${small.url}${ENTRY_PATH}`, '', spreadOver(SMALL_ENTRIES))),
    ];
    for (let i = 0; i < ROUNDS; i++) {
      for (const step of i % 2 === 0 ? steps : [...steps].reverse()) await step();
      log(
        `scale round ${i + 1}/${ROUNDS}: ${int(SCALE_ENTRIES)} uniform ${runs.uniform.at(-1)!.rps}, hot key ${runs.hot.at(-1)!.rps}, ${int(SMALL_ENTRIES)} uniform ${runs.small.at(-1)!.rps} req/s`,
      );
    }
    const misses = (await node.count('call-read')) - callReads0;
    if (misses !== 0) throw new Error(`scale: ${misses} requests missed the cache`);
    return {
      entries: SCALE_ENTRIES,
      smallEntries: SMALL_ENTRIES,
      seedMs: seedMs.map((v) => round(v, 0)),
      dbFileMiB: dirs.map((d) => round(fs.statSync(path.join(d, 'clarity-cache.db')).size / 1024 / 1024, 1)),
      memoryIdle: idle,
      memory: memoryOf(big.proc.pid),
      smallMemory: memoryOf(small.proc.pid),
      uniform: medianRound(runs.uniform),
      hot: medianRound(runs.hot),
      small: medianRound(runs.small),
    };
  } finally {
    for (const gw of started) await gw.stop();
  }
}

type Scale = Awaited<ReturnType<typeof scaleGoals>>;

function scaleRows(s: Scale): Row[] {
  const label = s.entries >= 1_000_000 ? `${s.entries / 1_000_000}M` : `${int(s.entries)}`;
  const p99 = s.uniform.p99 / s.small.p99;
  return [
    {
      figure: `8. ${label} entries: RSS of the gateway after uniform random hits over all of them`,
      value: `${s.memory.rssMiB.toFixed(1)} MiB`,
      reference: `${s.smallMemory.rssMiB.toFixed(1)} MiB (10k)`,
      ratio: x(s.memory.rssMiB / s.smallMemory.rssMiB),
      target: '≤ 256 MiB',
      status: mark(s.memory.rssMiB <= 256),
    },
    rpsRow(
      `8. ${label} entries: uniform random hits vs one hot key (same gateway)`,
      s.uniform,
      s.hot,
      0.5,
      ' (hot key)',
    ),
    {
      figure: `8. ${label} entries: uniform hits p99 vs uniform hits over 10k entries`,
      value: ms(s.uniform.p99, 3),
      reference: `${ms(s.small.p99, 3)} (10k)`,
      ratio: x(p99),
      target: goalText(1.5, true),
      status: mark(p99 <= 1.5),
      loadCpu: `${cpuOf(s.uniform)} / ${cpuOf(s.small)}`,
    },
  ];
}

async function run() {
  const node = await startFakeNodeProcess();
  try {
    const hits = await hitGoals(node);
    const misses = await missGoals(node);
    const scale = await scaleGoals(node);
    const d = misses.distinct;
    return {
      settings: {
        start: process.env.GATEWAY === undefined ? 'npm start' : `node ${process.env.GATEWAY}`,
        env: 'NODE_ENV=production LOG_LEVEL=warn HOST=127.0.0.1, default store (SQLite + hot tier)',
        connections: CONNECTIONS,
        warmupS: 0,
        durationS: SECONDS,
        rounds: ROUNDS,
        ratio: 'ratio of medians',
        missRateLimitPerMinute: MISS_RATE_LIMIT,
        sequentialMisses: MISSES,
        upstreamDelayMs: UPSTREAM_DELAY_MS,
        scaleEntries: SCALE_ENTRIES,
        smallEntries: SMALL_ENTRIES,
      },
      rows: [...hitRows(hits), ...missRows(misses), ...scaleRows(scale)],
      notes: [
        'The gateway started as `npm start` (NODE_ENV=production, LOG_LEVEL=warn, default store), every load',
        `\`wrk -t1 -c64 -d${SECONDS}s\` without warm-up, ${ROUNDS} round(s) with the gateway first in odd rounds and`,
        'second in even ones; each ratio is the ratio of the medians. Hit references answer the gateway’s',
        `captured bytes (content type ${hits.contentTypes.join(', ')}); every hit run saw no call-read at the stand-in.`,
        ...(hits.typeDiffers.length === 0
          ? []
          : [`Content types that differ only by a charset parameter: ${hits.typeDiffers.join('; ')}.`]),
        `Keys on: RateLimit \`${hits.meteredHeaders.ratelimit}\`, Clarity-Cache-Cost ${hits.meteredHeaders.cost}.`,
        `Sequential misses: gateway p50/p90 ${ms(misses.overhead.gatewayMs.p50, 3)} / ${ms(misses.overhead.gatewayMs.p90, 3)},`,
        `direct ${ms(misses.overhead.directMs.p50, 3)} / ${ms(misses.overhead.directMs.p90, 3)}.`,
        `Distinct misses: ${d.callReadsPerMiss} call-reads and ${d.upstreamPerMiss} stand-in requests per answered miss (the`,
        `stand-in also counts the up to ${CONNECTIONS} requests still in flight when wrk stopped, which wrk does not); the`,
        `gateway’s and the proxy’s answers to a node-compatible miss are ${d.sameBytes ? 'the same bytes' : 'different bytes'}.`,
        `Scale: seeding ${scale.seedMs.map((v) => `${(v / 1000).toFixed(1)} s`).join(' / ')}, DB files ${scale.dbFileMiB.join(' / ')} MiB;`,
        `RSS of the ${int(scale.entries)}-entry gateway idle ${scale.memoryIdle.rssMiB} MiB, after load ${scale.memory.rssMiB} MiB (peak ${scale.memory.hwmMiB} MiB).`,
      ],
      results: {
        hits: {
          contentTypes: hits.contentTypes,
          typeDiffers: hits.typeDiffers,
          memory: hits.memory,
          readOnly: { gateway: brief(hits.readOnly.gateway), reference: brief(hits.readOnly.reference) },
          decode: { gateway: brief(hits.decode.gateway), reference: brief(hits.decode.reference) },
          nodeCompatible: {
            gateway: brief(hits.nodeCompatible.gateway),
            reference: brief(hits.nodeCompatible.reference),
          },
          rotating: { gateway: brief(hits.rotating.gateway), reference: brief(hits.rotating.reference) },
          keys: { on: brief(hits.keys.on), off: brief(hits.keys.off), headers: hits.meteredHeaders },
        },
        misses: {
          overhead: misses.overhead,
          distinct: {
            gateway: brief(d.gateway),
            proxy: brief(d.proxy),
            gatewayReadOnly: brief(d.gatewayReadOnly),
            sameBytes: d.sameBytes,
            upstreamPerMiss: d.upstreamPerMiss,
            callReadsPerMiss: d.callReadsPerMiss,
          },
          memory: misses.memory,
        },
        scale: {
          ...scale,
          uniform: brief(scale.uniform),
          hot: brief(scale.hot),
          small: brief(scale.small),
        },
      },
    };
  } finally {
    await node.stop();
  }
}

export const independent: BenchCase = {
  title: 'every goal by the independent protocol (npm start, wrk c64 5 s × 3, ratio of medians)',
  run,
};
runStandalone(import.meta.filename, independent);
