/**
 * Two figures in one run, each against a reference measured in the same run (wrk -t1 -c64,
 * -d5s, medians of seven rounds), on the production bundle
 * (dist/clarity-cache.mjs, or GATEWAY=<file>; NODE_ENV production, LOG_LEVEL warn):
 *
 * 1. Access control: the read-only cache hit with API keys off, and with a keys file and the
 *    request's valid X-API-Key (every request goes through the admission path's key lookup and
 *    quotas: requestsPerMinute, unitsPerMinute and unitsPerMonth, all far above the load, so
 *    every answer is metered and carries RateLimit headers). Goal: keys, metering and unit quotas
 *    on cost at most 5% of the hit throughput of keys off.
 * 2. The event observer: a simulated chain of 200 blocks over 100 contracts, each block touching
 *    2 of them, each contract read with `maxBlocks: 0` after every block; the hit rate with the
 *    observer (proof of currency) against the plain block rule, and the upstream calls saved.
 *    Then a 2,000-transaction block: the time to answer /new_block and to apply it, and the hit
 *    throughput while it is applied against undisturbed.
 *
 *   npm run build && node --import tsx bench/cases/access-and-observer.ts
 *   (or node --import tsx bench/run.ts access-and-observer; ONLY=access or ONLY=observer for one part)
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import {
  AnchorMode,
  Cl,
  makeUnsignedContractCall,
  PostConditionMode,
  serializeTransaction,
} from '@stacks/transactions';
import { type FakeNode, startFakeNode } from '../../test/support/fake-node.js';
import type { LoadResult, LoadSpec } from '../load.js';
import {
  type BenchCase,
  freePort,
  freshDir,
  gatewayEntry,
  median,
  ROOT,
  type Row,
  runLoad,
  runStandalone,
  spawnNode,
  startReference,
  waitForHttp,
} from '../support.js';

const ENTRY = gatewayEntry();
const ROUNDS = Number(process.env.ROUNDS ?? 7);
const SECONDS = Number(process.env.SECONDS ?? 5);
/** Seconds of each load run of the hits-during-blocks measurement (one block posted a second). */
const DURING_S = 5;
const ADDR = 'SP3K8BC0PPEVCV7NZ6QSRWPQ2JE9E5B6N3PA0KBR9';
const ABI = {
  functions: [
    {
      name: 'get-balance',
      access: 'read_only',
      args: [{ name: 'who', type: 'principal' }],
      outputs: { type: { response: { ok: 'uint128', error: 'none' } } },
    },
    { name: 'get-n', access: 'read_only', args: [], outputs: { type: 'uint128' } },
  ],
  variables: [],
  maps: [],
  fungible_tokens: [],
  non_fungible_tokens: [],
  epoch: 'Epoch31',
  clarity_version: 'Clarity3',
};
const KEY = `bench-${randomBytes(16).toString('hex')}`;

function log(msg: string): void {
  process.stderr.write(`[bench] ${msg}\n`);
}

async function gateway(upstream: string, env: Record<string, string>) {
  const port = await freePort();
  const proc = spawnNode([ENTRY], {
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    PORT: String(port),
    HOST: '127.0.0.1',
    CACHE_STORE: 'memory',
    STACKS_API_URL_MAINNET: upstream,
    STACKS_API_URL_TESTNET: upstream,
    UPSTREAM_RATE_LIMIT_PER_MINUTE: '1000000',
    ...env,
  });
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/health`, proc);
  return { url, proc };
}

function post(url: string, body: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>(
    (resolve, reject) => {
      const req = http.request(
        url,
        { method: 'POST', headers: { 'content-type': 'application/json', ...headers } },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c) => {
            text += c;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
        },
      );
      req.on('error', reject);
      req.end(body);
    },
  );
}

const spec = (url: string, body: string, headers?: Record<string, string>): LoadSpec => ({
  url,
  method: 'POST',
  body,
  connections: 64,
  warmupSeconds: 1,
  durationSeconds: SECONDS,
  ...(headers === undefined ? {} : { headers }),
});

function summary(r: LoadResult) {
  return { rps: Math.round(r.rps), p99: r.latencyMs.p99 };
}

/**
 * How the keys-on figure is measured, and why (BENCHMARKS.md has the figures behind each point):
 * - Each round starts its three processes (keys off, keys on, the reference) afresh, and loads
 *   them one after the other in an order that rotates from round to round. Identical processes
 *   of one bundle differ by up to 6% in hit throughput from one start to the next (four keys-on
 *   processes of one bundle read 0.957, 0.905, 0.962 and 0.907 of one keys-off process), so a
 *   pair started once for the whole run measured which processes it drew as much as the code.
 * - The servers run on one CPU and wrk on another (taskset, when there is one and two CPUs), so
 *   that neither takes the other's core.
 * - The goal's figure is the median of the rounds' keys-on/keys-off ratios: the two loads of a
 *   round are seconds apart, while this shared machine's speed swings by up to 2x over a run, so
 *   a paired ratio compares the code under the same conditions. The ratio of the medians is kept
 *   in the results as well.
 */
async function accessCase(node: FakeNode) {
  const path_ = `/contract-calls/read-only/${ADDR}/bench/get-balance`;
  const body = JSON.stringify({ functionArgs: [{ type: 'principal', value: ADDR }] });
  const tmp = freshDir('access-and-observer');
  const keysFile = path.join(tmp, 'keys.json');
  fs.writeFileSync(
    keysFile,
    JSON.stringify([
      {
        name: 'bench',
        key: KEY,
        requestsPerMinute: 100_000_000,
        unitsPerMinute: 100_000_000,
        unitsPerMonth: 100_000_000,
      },
    ]),
  );
  const cpus = pinning();
  const rounds: { off: LoadResult; on: LoadResult; ref: LoadResult }[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const off = await gateway(node.url, {});
    const on = await gateway(node.url, { API_KEYS_FILE: keysFile, API_KEYS_REQUIRED: 'true' });
    // Warm: miss, hit (offered to the fast lane), lane.
    let answer = '';
    for (let j = 0; j < 3; j++) answer = (await post(off.url + path_, body)).body;
    let metered: Awaited<ReturnType<typeof post>> | undefined;
    for (let j = 0; j < 3; j++) metered = await post(on.url + path_, body, { 'x-api-key': KEY });
    // Keys on must be metered and under the unit quotas, else the figure measures something else.
    const rl = String(metered?.headers['ratelimit'] ?? '');
    if (
      metered?.headers['clarity-cache-cost'] !== '1' ||
      !rl.includes('"units"') ||
      !rl.includes('"units-month"')
    )
      throw new Error(`keys-on hit not metered under unit quotas: ${JSON.stringify(metered?.headers)}`);
    const reference = await startReference({ [path_]: answer }, tmp);
    const servers = [off, on, reference];
    if (cpus !== undefined)
      for (const s of servers) execFileSync('taskset', ['-a', '-p', '-c', cpus.servers, String(s.proc.pid)]);
    const load = cpus === undefined ? {} : { cpus: cpus.load };
    const runs = {
      ref: () => runLoad({ ...spec(reference.url + path_, body), ...load }),
      off: () => runLoad({ ...spec(off.url + path_, body), ...load }),
      on: () => runLoad({ ...spec(on.url + path_, body, { 'x-api-key': KEY }), ...load }),
    };
    const order = (['ref', 'off', 'on'] as const).map((_, j, all) => all[(i + j) % all.length]!);
    const got: Partial<Record<'ref' | 'off' | 'on', LoadResult>> = {};
    for (const name of order) got[name] = await runs[name]();
    await Promise.all(servers.map((s) => s.proc.stop(5000)));
    const { ref, off: o, on: k } = got as Record<'ref' | 'off' | 'on', LoadResult>;
    rounds.push({ off: o, on: k, ref });
    log(
      `access round ${i + 1}: ref ${ref.rps} off ${o.rps} on ${k.rps} rps (on/off ${(k.rps / o.rps).toFixed(3)})`,
    );
  }
  const med = (pick: (r: (typeof rounds)[number]) => LoadResult) => median(rounds.map((r) => pick(r).rps));
  const ref = med((r) => r.ref);
  const offRps = med((r) => r.off);
  const onRps = med((r) => r.on);
  return {
    referenceRps: Math.round(ref),
    keysOffRps: Math.round(offRps),
    keysOnRps: Math.round(onRps),
    keysOffRatio: +(offRps / ref).toFixed(3),
    keysOnRatio: +(onRps / ref).toFixed(3),
    // The goal's figure: the median of the paired ratios (see above); then the ratio of medians.
    keysOnVsOff: +median(rounds.map((r) => r.on.rps / r.off.rps)).toFixed(3),
    keysOnVsOffOfMedians: +(onRps / offRps).toFixed(3),
    p99Ms: {
      reference: median(rounds.map((r) => r.ref.latencyMs.p99)),
      keysOff: median(rounds.map((r) => r.off.latencyMs.p99)),
      keysOn: median(rounds.map((r) => r.on.latencyMs.p99)),
    },
    pinned: cpus ?? 'no',
    rounds: rounds.map((r) => ({ ref: summary(r.ref), off: summary(r.off), on: summary(r.on) })),
  };
}

/** The servers' CPU and the load generators' (the last and the first), when they can be kept apart. */
function pinning(): { servers: string; load: string } | undefined {
  const n = os.availableParallelism();
  if (n < 2 || !fs.existsSync('/usr/bin/taskset')) return undefined;
  return { servers: String(n - 1), load: '0' };
}

/** A /new_block payload in the node's shape (src/devnet/event-dispatcher.ts writes the same). */
function block(height: number, hash: string, parent: string, txs: string[]) {
  return {
    block_height: height,
    block_hash: `0x${hash}`,
    index_block_hash: `0x${hash}`,
    parent_index_block_hash: `0x${parent}`,
    parent_block_hash: `0x${parent}`,
    burn_block_height: 800_000 + height,
    burn_block_hash: `0x${hash}`,
    burn_block_time: Math.floor(Date.now() / 1000),
    transactions: txs.map((raw_tx, i) => ({
      txid: `0x${i.toString(16).padStart(64, '0')}`,
      tx_index: i,
      raw_tx,
      status: 'success',
    })),
    events: [],
  };
}

async function callTx(contract: string, nonce: number): Promise<string> {
  const tx = await makeUnsignedContractCall({
    contractAddress: ADDR,
    contractName: contract,
    functionName: 'bump',
    functionArgs: [Cl.uint(1)],
    publicKey: '0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798',
    network: 'mainnet',
    fee: 1000,
    nonce,
    anchorMode: AnchorMode.Any,
    postConditionMode: PostConditionMode.Allow,
  } as never);
  return serializeTransaction(tx);
}

const hashOf = (height: number): string => height.toString(16).padStart(64, '0');

async function observerCase(node: FakeNode) {
  const CONTRACTS = Number(process.env.CONTRACTS ?? 100);
  const BLOCKS = Number(process.env.BLOCKS ?? 200);
  const source =
    '(define-data-var n uint u0)\n(define-public (bump (x uint)) (ok (var-set n (+ (var-get n) x))))\n(define-read-only (get-n) (var-get n))\n';
  for (let c = 0; c < CONTRACTS; c++) {
    node.setAbi(ADDR, `c${c}`, ABI);
    node.setReadOnly(ADDR, `c${c}`, 'get-n', { okay: true, result: `0x${'01'}${'0'.repeat(31)}1` });
    node.setSource(ADDR, `c${c}`, source);
  }
  const results: Record<string, unknown> = {};
  for (const withObserver of [false, true]) {
    const observerPort = await freePort();
    // The node is at the block before the first one posted, as the chain the observer follows
    // (the gateway believes its first tip from the node's /v2/info at start-up).
    node.setTipHeight(999);
    // The same knowledge of the tip for both: pushed by the observer at once, or (plain rule)
    // asked of /v2/info whenever an answer depends on it (CHAIN_TIP_MAX_AGE_MS=0), so that the
    // plain rule never answers an entry older than the tip as current.
    const gw = await gateway(
      node.url,
      withObserver
        ? {
            CHAIN_TIP_MAX_AGE_MS: '600000',
            EVENT_OBSERVER_PORT: String(observerPort),
            EVENT_OBSERVER_NETWORK: 'mainnet',
          }
        : { CHAIN_TIP_MAX_AGE_MS: '0' },
    );
    const postBlock = async (height: number, txs: string[]) => {
      node.setTipHeight(height);
      if (withObserver) {
        const res = await post(
          `http://127.0.0.1:${observerPort}/new_block`,
          JSON.stringify(block(height, hashOf(height), hashOf(height - 1), txs)),
        );
        if (res.status !== 200) throw new Error(`observer answered ${res.status}`);
      }
    };
    const read = (c: number) =>
      post(
        `${gw.url}/contract-calls/read-only/${ADDR}/c${c}/get-n`,
        JSON.stringify({ functionArgs: [], cacheControl: { maxBlocks: 0 } }),
      );
    let height = 1000;
    await postBlock(height, []);
    for (let c = 0; c < CONTRACTS; c++) await read(c);
    const before = node.count('call-read');
    let hits = 0;
    let reads = 0;
    let nonce = 0;
    for (let b = 0; b < BLOCKS; b++) {
      height++;
      const touched = [(b * 7) % CONTRACTS, (b * 13 + 1) % CONTRACTS];
      await postBlock(height, await Promise.all(touched.map((c) => callTx(`c${c}`, nonce++))));
      // Wait until the gateway applied the block (its tip moved): /ready shows the observer's last block.
      if (withObserver) {
        for (let i = 0; i < 1000; i++) {
          const ready = JSON.parse(
            await new Promise<string>((resolve) =>
              http.get(`${gw.url}/ready`, (res) => {
                let t = '';
                res.on('data', (c) => {
                  t += c;
                });
                res.on('end', () => resolve(t));
              }),
            ),
          );
          if (ready.data?.checks?.observer?.lastBlock?.height === height) break;
          await new Promise((r) => setImmediate(r));
        }
      }
      for (let c = 0; c < CONTRACTS; c++) {
        const res = await read(c);
        reads++;
        if (String(res.headers['cache-status'] ?? '').includes('hit')) hits++;
      }
    }
    const upstreamCalls = node.count('call-read') - before;
    results[withObserver ? 'withObserver' : 'plainBlockRule'] = { hits, reads, upstreamCalls };
    if (withObserver) {
      // A block of 2,000 contract calls: time to the node's 200, and to the tip having moved.
      const txs: string[] = [];
      for (let i = 0; i < 2000; i++) txs.push(await callTx(`c${i % CONTRACTS}`, nonce++));
      height++;
      node.setTipHeight(height);
      const payload = JSON.stringify(block(height, hashOf(height), hashOf(height - 1), txs));
      const t0 = performance.now();
      const answered = await post(`http://127.0.0.1:${observerPort}/new_block`, payload);
      const answerMs = performance.now() - t0;
      let appliedMs = Number.NaN;
      for (let i = 0; i < 100_000; i++) {
        const r = JSON.parse(
          await new Promise<string>((resolve) =>
            http.get(`${gw.url}/ready`, (res) => {
              let t = '';
              res.on('data', (c) => {
                t += c;
              });
              res.on('end', () => resolve(t));
            }),
          ),
        );
        if (r.data?.checks?.observer?.lastBlock?.height === height) {
          appliedMs = performance.now() - t0;
          break;
        }
      }
      results['block2000'] = {
        status: answered.status,
        payloadBytes: payload.length,
        answerMs: Math.round(answerMs * 10) / 10,
        appliedMs: Math.round(appliedMs * 10) / 10,
      } as never;
      log(
        `2,000-transaction block: answered in ${answerMs.toFixed(1)} ms, applied in ${appliedMs.toFixed(1)} ms`,
      );
      // Hits of one cached read while 2,000-transaction blocks arrive one a second (a chain far
      // faster than Stacks), against the same hits undisturbed: wrk over DURING_S seconds each,
      // alternating, three rounds; the blocks are built before the load starts.
      const hitBody = JSON.stringify({ functionArgs: [] });
      const hitUrl = `${gw.url}/contract-calls/read-only/${ADDR}/c0/get-n`;
      await post(hitUrl, hitBody);
      const blocks: string[] = [];
      const undisturbed: number[] = [];
      const disturbed: number[] = [];
      let blocksApplied = 0;
      for (let round = 0; round < 3; round++) {
        blocks.length = 0;
        for (let b = 0; b < DURING_S; b++) {
          const bt: string[] = [];
          for (let i = 0; i < 2000; i++) bt.push(await callTx(`c${1 + (i % (CONTRACTS - 1))}`, nonce++));
          height++;
          blocks.push(JSON.stringify(block(height, hashOf(height), hashOf(height - 1), bt)));
        }
        const quiet = await runLoad({
          ...spec(hitUrl, hitBody),
          warmupSeconds: 0,
          durationSeconds: DURING_S,
        });
        undisturbed.push(quiet.rps);
        const loadRun = runLoad({ ...spec(hitUrl, hitBody), warmupSeconds: 0, durationSeconds: DURING_S });
        const poster = (async () => {
          for (const payload of blocks) {
            const t = performance.now();
            const res = await post(`http://127.0.0.1:${observerPort}/new_block`, payload);
            if (res.status === 200) blocksApplied++;
            const left = 1000 - (performance.now() - t);
            if (left > 0) await new Promise((resolve) => setTimeout(resolve, left));
          }
        })();
        const busy = await loadRun;
        await poster;
        disturbed.push(busy.rps);
        log(
          `hits during blocks, round ${round + 1}: undisturbed ${Math.round(quiet.rps)}, during ${Math.round(busy.rps)} req/s`,
        );
      }
      results['hitsDuringBlocks'] = {
        undisturbed: Math.round(median(undisturbed)),
        during: Math.round(median(disturbed)),
        ratio: Math.round((median(disturbed) / median(undisturbed)) * 1000) / 1000,
        blocksPosted: blocksApplied,
        seconds: DURING_S,
      } as never;
    }
    log(`observer=${withObserver}: ${hits}/${reads} hits, ${upstreamCalls} upstream calls`);
    await gw.proc.stop(5000);
  }
  return results;
}

type Access = Awaited<ReturnType<typeof accessCase>>;
type Observer = Awaited<ReturnType<typeof observerCase>>;
interface ObserverCounts {
  hits: number;
  reads: number;
  upstreamCalls: number;
}
interface HitsDuringBlocks {
  undisturbed: number;
  during: number;
  ratio: number;
  blocksPosted: number;
  seconds: number;
}
interface Block2000 {
  status: number;
  payloadBytes: number;
  answerMs: number;
  appliedMs: number;
}

const int = (n: number): string => Math.round(n).toLocaleString('en-US');
const mark = (ok: boolean): string => (ok ? 'MET' : 'MISSED');

function rows(access: Access | undefined, observer: Observer | undefined): Row[] {
  const out: Row[] = [];
  if (access !== undefined) {
    out.push(
      {
        figure: 'read-only hit, API keys off',
        value: `${int(access.keysOffRps)} req/s`,
        reference: `${int(access.referenceRps)} req/s`,
        ratio: `${access.keysOffRatio.toFixed(3)}×`,
        target: '≥ 0.85×',
        status: mark(access.keysOffRatio >= 0.85),
      },
      {
        figure: 'read-only hit, API keys on (keys file, `API_KEYS_REQUIRED=true`, valid `X-API-Key`)',
        value: `${int(access.keysOnRps)} req/s`,
        reference: `${int(access.referenceRps)} req/s`,
        ratio: `${access.keysOnRatio.toFixed(3)}×`,
        target: '—',
        status: '—',
      },
      {
        figure: 'keys, metering and unit quotas on against keys off',
        value: `${int(access.keysOnRps)} req/s`,
        reference: `${int(access.keysOffRps)} req/s (keys off; median of paired ratios)`,
        ratio: `${access.keysOnVsOff.toFixed(3)}×`,
        target: '≥ 0.95×',
        status: mark(access.keysOnVsOff >= 0.95),
      },
    );
  }
  if (observer !== undefined) {
    const w = observer['withObserver'] as ObserverCounts | undefined;
    const p = observer['plainBlockRule'] as ObserverCounts | undefined;
    const b = observer['block2000'] as Block2000 | undefined;
    if (w !== undefined && p !== undefined) {
      const rate = w.hits / w.reads;
      out.push(
        {
          figure: 'hit rate, `maxBlocks: 0`, blocks × contracts, 2 touched per block, with the observer',
          value: `${w.hits} / ${w.reads} = ${(rate * 100).toFixed(1)} %`,
          reference: `plain block rule: ${p.hits} / ${p.reads}`,
          ratio: '—',
          target: '≥ 95 %',
          status: mark(rate >= 0.95),
        },
        {
          figure: `upstream calls for those ${int(w.reads)} reads`,
          value: `${w.upstreamCalls}`,
          reference: `plain block rule: ${p.upstreamCalls}`,
          ratio: `${(w.upstreamCalls / p.upstreamCalls).toFixed(3)}×`,
          target: '—',
          status: '—',
        },
      );
    }
    if (b !== undefined) {
      out.push(
        {
          figure: `\`/new_block\` of 2,000 contract calls (${int(b.payloadBytes)} bytes): answered`,
          value: `${b.answerMs} ms`,
          reference: '—',
          ratio: '—',
          target: '< 50 ms',
          status: mark(b.status === 200 && b.answerMs < 50),
        },
        {
          figure: 'the same block: applied (tip moved)',
          value: `${b.appliedMs} ms`,
          reference: '—',
          ratio: '—',
          target: '< 500 ms',
          status: mark(b.appliedMs < 500),
        },
      );
    }
    const d = (observer as Record<string, unknown> | undefined)?.['hitsDuringBlocks'] as
      | HitsDuringBlocks
      | undefined;
    if (d !== undefined) {
      out.push({
        figure: `hits of a cached read while 2,000-transaction blocks arrive one a second (${d.blocksPosted} blocks over ${d.seconds} s × 3 rounds)`,
        value: `${int(d.during)} req/s`,
        reference: `${int(d.undisturbed)} req/s (undisturbed)`,
        ratio: `${d.ratio.toFixed(3)}×`,
        target: '≥ 0.90×',
        status: mark(d.ratio >= 0.9),
      });
    }
  }
  return out;
}

async function run() {
  if (!fs.existsSync(ENTRY)) throw new Error('run npm run build first');
  const node = await startFakeNode();
  try {
    node.setAbi(ADDR, 'bench', ABI);
    node.setReadOnly(ADDR, 'bench', 'get-balance', {
      okay: true,
      result: '0x070100000000000000000000000000000064',
    });
    const cases = (process.env.ONLY ?? 'access,observer').split(',');
    const access = cases.includes('access') ? await accessCase(node) : undefined;
    const observer = cases.includes('observer') ? await observerCase(node) : undefined;
    return {
      settings: {
        rounds: ROUNDS,
        seconds: SECONDS,
        connections: 64,
        warmupS: 1,
        contracts: Number(process.env.CONTRACTS ?? 100),
        blocks: Number(process.env.BLOCKS ?? 200),
        only: cases,
      },
      rows: rows(access, observer),
      notes: [
        `Gateway: the production bundle (\`${path.relative(ROOT, ENTRY)}\`, \`NODE_ENV=production\`, \`LOG_LEVEL=warn\`,`,
        "`CACHE_STORE=memory`); reference: bench/reference-server.ts answering the gateway's bytes. Access: wrk",
        `\`-t1 -c64\`, 1 s warm-up then ${SECONDS} s, ${ROUNDS} rounds, each with three freshly started servers loaded in turn (on one CPU, wrk on another; order rotating),`,
        "medians (keys on against off: the median of the rounds' paired ratios). Observer: a simulated chain, each contract read with `maxBlocks: 0` after every block, with the",
        'observer (proof of currency) against the plain block rule (`CHAIN_TIP_MAX_AGE_MS=0`); then a',
        '2,000-transaction block: the time to answer `/new_block` and to apply it. See the hand-written section',
        'at the top for the reading of these figures.',
      ],
      results: {
        ...(access === undefined ? {} : { access }),
        ...(observer === undefined ? {} : { observer }),
      },
    };
  } finally {
    await node.close();
  }
}

export const accessAndObserver: BenchCase = { title: 'access control and the event observer', run };
runStandalone(import.meta.filename, accessAndObserver);
