/**
 * miss-overhead: what the gateway adds to a cache miss. The fake Stacks node
 * (bench/fake-node-process.ts, a bare node:http server in its own process) answers every
 * call-read after 20 ms. 300 sequential misses through the gateway (`get-entry` with a fresh
 * argument each, the ABI cached first, one keep-alive connection) and 300 sequential call-reads
 * straight to the fake node (another keep-alive connection), alternating which goes first, after
 * 10 unmeasured of each. Figure: p50(gateway) − p50(direct); ratio: p50(gateway) / p50(direct),
 * the direct node being the reference measured in the same run. Gateway: what `npm start` runs
 * (package.json "main"), SQLite store, LOG_LEVEL=warn. Goal: ≤ 1.5 ms.
 *
 *   npm run build && node --import tsx bench/cases/miss-overhead.ts
 */
import http from 'node:http';
import {
  ABI_PATH,
  type BenchCase,
  expectOk,
  freshDir,
  gateway,
  log,
  mark,
  median,
  ms,
  QUICK,
  quantile,
  rotate,
  round,
  runStandalone,
  startFakeNodeProcess,
  timedDirect,
  timedMiss,
  x,
} from '../support.js';

const MISSES = QUICK ? 60 : 300;
const WARM = 10;
const UPSTREAM_DELAY_MS = 20;
const GOAL_MS = 1.5;

async function run() {
  const node = await startFakeNodeProcess();
  const gw = await gateway(node.url, freshDir('miss-overhead'));
  const agents = [0, 1].map(() => new http.Agent({ keepAlive: true, maxSockets: 1 }));
  try {
    await expectOk(`${gw.url}${ABI_PATH}`);
    await node.call({ cmd: 'delay', ms: UPSTREAM_DELAY_MS, kind: 'call-read' });
    await node.call({ cmd: 'resetStats' });
    const viaGateway: number[] = [];
    const direct: number[] = [];
    log(`miss-overhead: ${MISSES} misses through the gateway and ${MISSES} direct calls, alternating`);
    for (let i = 0; i < MISSES + WARM; i++) {
      const id = 7_000_000_000n + BigInt(i);
      let g = 0;
      let d = 0;
      const steps = [
        async () => {
          g = await timedMiss(gw.url, id, agents[0]!);
        },
        async () => {
          d = await timedDirect(node.url, id, agents[1]!);
        },
      ];
      for (const step of rotate(steps, i)) await step();
      if (i >= WARM) {
        viaGateway.push(g);
        direct.push(d);
      }
    }
    const callRead = await node.count('call-read');
    const gwP50 = median(viaGateway);
    const directP50 = median(direct);
    const overhead = gwP50 - directP50;
    const paired = viaGateway.map((g, i) => g - direct[i]!);
    return {
      settings: { misses: MISSES, warm: WARM, upstreamDelayMs: UPSTREAM_DELAY_MS },
      rows: [
        {
          figure: `p50 miss − p50 direct call (node ${UPSTREAM_DELAY_MS} ms, ${MISSES} each)`,
          value: ms(overhead, 3),
          reference: `${ms(directP50, 3)} (direct p50)`,
          ratio: x(gwP50 / directP50, 3),
          target: `≤ ${GOAL_MS} ms`,
          status: mark(overhead <= GOAL_MS),
        },
      ],
      notes: [
        `The fake node delays every call-read by ${UPSTREAM_DELAY_MS} ms. ${MISSES} misses through the gateway (fresh`,
        `\`get-entry\` arguments, ABI cached) and ${MISSES} call-reads straight to the node, one at a time, alternating`,
        `(after ${WARM} unmeasured of each). Gateway p50/p90 ${ms(gwP50, 3)} / ${ms(quantile(viaGateway, 0.9), 3)};`,
        `direct p50/p90 ${ms(directP50, 3)} / ${ms(quantile(direct, 0.9), 3)}; per-pair difference p50/p90`,
        `${ms(median(paired), 3)} / ${ms(quantile(paired, 0.9), 3)}. Call-reads at the node: ${callRead}`,
        '(one per miss and one per direct call).',
      ],
      results: {
        misses: viaGateway.length,
        upstreamDelayMs: UPSTREAM_DELAY_MS,
        gatewayMs: { p50: round(gwP50, 3), p90: round(quantile(viaGateway, 0.9), 3) },
        directMs: { p50: round(directP50, 3), p90: round(quantile(direct, 0.9), 3) },
        overheadMs: round(overhead, 3),
        pairedOverheadMs: { p50: round(median(paired), 3), p90: round(quantile(paired, 0.9), 3) },
        callRead,
      },
    };
  } finally {
    for (const a of agents) a.destroy();
    await gw.proc.stop();
    await node.stop();
  }
}

export const missOverhead: BenchCase = { title: 'miss overhead over a 20 ms node', run };
runStandalone(import.meta.filename, missOverhead);
