/**
 * miss: the gateway's latency on a miss minus the upstream's own, the fake node (bench/
 * fake-node-process.ts) delaying every call-read by 50 ms: 150 pairs (quick: 30) after 10
 * unmeasured, one request at a time; and the same through a pool of three upstreams (where the
 * gateway takes upstream lists), in the same loop. Gateway: what `npm start` runs (package.json
 * "main"), SQLite store, LOG_LEVEL=warn. Goals: ≤ 2 ms over the upstream; the pool adds ≤ 0.2 ms.
 *
 *   npm run build && node --import tsx bench/cases/miss.ts
 */
import http from 'node:http';
import {
  ABI_PATH,
  type BenchCase,
  expectOk,
  type FakeNodeProc,
  freshDir,
  gateway,
  log,
  mark,
  median,
  ms,
  QUICK,
  quantile,
  type Row,
  rotate,
  round,
  runStandalone,
  startFakeNodeProcess,
  timedDirect,
  timedMiss,
  tryGateway,
  x,
} from '../support.js';

const MISS_PAIRS = QUICK ? 30 : 150;
const UPSTREAM_DELAY_MS = 50;

async function missCase(node: FakeNodeProc) {
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

type Miss = Awaited<ReturnType<typeof missCase>>;

function rows(miss: Miss): Row[] {
  const out: Row[] = [];
  out.push({
    figure: `miss latency − upstream latency, median (upstream ${miss.upstreamDelayMs} ms)`,
    value: ms(miss.overheadMs),
    reference: ms(miss.upstreamMs.p50),
    ratio: x(miss.gatewayMs.p50 / miss.upstreamMs.p50),
    target: '≤ 2 ms',
    status: mark(miss.overheadMs <= 2),
  });
  const pool = miss.pool;
  if (pool === undefined || 'absent' in pool) {
    out.push({
      figure: 'pool of three healthy upstreams: added miss overhead',
      value: '—',
      reference: '—',
      ratio: '—',
      target: '≤ 0.2 ms',
      status: pool === undefined ? '—' : 'n/a (no upstream lists)',
    });
  } else {
    out.push({
      figure: 'pool of three healthy upstreams: added miss overhead (pool − one, per-iteration median)',
      value: ms(pool.addedMs, 3),
      reference: `${ms(miss.overheadMs)} (one upstream's overhead)`,
      ratio: x(pool.gatewayMs.p50 / miss.gatewayMs.p50),
      target: '≤ 0.2 ms',
      status: mark(pool.addedMs <= 0.2),
    });
  }
  return out;
}

function notes(miss: Miss): string[] {
  return [
    `**3. Miss overhead.** The fake node delays every call-read by ${miss.upstreamDelayMs} ms. ${miss.pairs} pairs`,
    '(after 10 unmeasured), one request at a time over one keep-alive connection each: a gateway miss',
    '(`get-entry` with a fresh argument, the ABI already cached) and the same call-read sent straight to the',
    'fake node, alternating which goes first. Figure: median(gateway) − median(upstream).',
    `Gateway p50/p90 ${ms(miss.gatewayMs.p50)} / ${ms(miss.gatewayMs.p90)}; upstream p50/p90`,
    `${ms(miss.upstreamMs.p50)} / ${ms(miss.upstreamMs.p90)}; per-pair difference p50/p90`,
    `${ms(miss.pairedOverheadMs.p50)} / ${ms(miss.pairedOverheadMs.p90)}. Call-reads at the node:`,
    `${miss.callRead} (one per miss and one per direct call).`,
    '',
    miss.pool === undefined || 'absent' in miss.pool
      ? `Pool of three: ${miss.pool === undefined ? 'not measured' : `n/a: ${miss.pool.absent}`}.`
      : `Pool of three: a second gateway with STACKS_API_URL_MAINNET listing this node and two more fake nodes, each ` +
        `delaying call-reads by ${miss.upstreamDelayMs} ms, measured in the same loop (triples: one-upstream miss, pool miss, ` +
        `direct call, rotating who goes first). Pool p50/p90 ${ms(miss.pool.gatewayMs.p50)} / ${ms(miss.pool.gatewayMs.p90)}, ` +
        `overhead over the direct median ${ms(miss.pool.overheadMs)}; per-iteration pool − one p50 ${ms(miss.pool.addedMs, 3)}. ` +
        `Call-reads per node: ${miss.pool.callReadPerNode.join(' / ')}.`,
    '',
  ];
}

async function run() {
  const node = await startFakeNodeProcess();
  try {
    const results = await missCase(node);
    return {
      settings: { missPairs: MISS_PAIRS, upstreamDelayMs: UPSTREAM_DELAY_MS },
      rows: rows(results),
      notes: notes(results),
      results,
    };
  } finally {
    await node.stop();
  }
}

export const miss: BenchCase = { title: 'miss overhead (50 ms node), one upstream and a pool of three', run };
runStandalone(import.meta.filename, miss);
