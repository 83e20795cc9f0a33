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
  round,
  runStandalone,
  sequentialMisses,
  startFakeNodeProcess,
  x,
} from '../support.js';

const MISSES = QUICK ? 60 : 300;
const WARM = 10;
const UPSTREAM_DELAY_MS = 20;
const GOAL_MS = 1.5;

async function run() {
  const node = await startFakeNodeProcess();
  const gw = await gateway(node.url, freshDir('miss-overhead'));
  try {
    await expectOk(`${gw.url}${ABI_PATH}`);
    await node.call({ cmd: 'delay', ms: UPSTREAM_DELAY_MS, kind: 'call-read' });
    await node.call({ cmd: 'resetStats' });
    log(`miss-overhead: ${MISSES} misses through the gateway and ${MISSES} direct calls, alternating`);
    const { viaGateway, direct } = await sequentialMisses(gw.url, node.url, MISSES, WARM);
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
    await gw.proc.stop();
    await node.stop();
  }
}

export const missOverhead: BenchCase = { title: 'miss overhead over a 20 ms node', run };
runStandalone(import.meta.filename, missOverhead);
