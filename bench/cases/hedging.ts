/**
 * hedging: misses against two upstreams, the preferred one (first of STACKS_API_URL_MAINNET)
 * answering after 2 s and the other after 50 ms, with and without UPSTREAM_HEDGE_MS=100 (where the
 * gateway takes upstream lists); the reference is the fast node called directly in the same loop.
 * Gateway: what `npm start` runs (package.json "main"), SQLite store, LOG_LEVEL=warn. Reported, no goal.
 *
 *   npm run build && node --import tsx bench/cases/hedging.ts
 */
import http from 'node:http';
import {
  ABI_PATH,
  type BenchCase,
  expectOk,
  freshDir,
  log,
  median,
  ms,
  QUICK,
  quantile,
  type Row,
  rotate,
  round,
  runStandalone,
  type Server,
  startFakeNodeProcess,
  timedDirect,
  timedMiss,
  tryGateway,
  x,
} from '../support.js';

const UPSTREAM_DELAY_MS = 50;
const SLOW_UPSTREAM_MS = 2000;
const HEDGE_MS = 100;
const HEDGED_MISSES = QUICK ? 6 : 30;
const UNHEDGED_MISSES = QUICK ? 3 : 10;

async function hedgingCase() {
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

type Hedging = Awaited<ReturnType<typeof hedgingCase>>;

function rows(hedging: Hedging): Row[] {
  const out: Row[] = [];
  if ('absent' in hedging) {
    out.push({
      figure: 'miss p50 / p99 with and without UPSTREAM_HEDGE_MS',
      value: '—',
      reference: '—',
      ratio: '—',
      target: 'info',
      status: 'n/a (no upstream lists)',
    });
  } else {
    for (const [name, f] of [
      ['without hedging', hedging.withoutHedging],
      [`UPSTREAM_HEDGE_MS=${hedging.hedgeMs}`, hedging.withHedging],
    ] as const) {
      out.push({
        figure: `${name}: miss p50 (${f.misses} misses)`,
        value: ms(f.p50),
        reference: `${ms(hedging.fastNodeMs.p50)} (fast node)`,
        ratio: x(f.p50Ratio),
        target: 'info',
        status: '—',
      });
      out.push({
        figure: `${name}: miss p99 (${f.misses} misses)`,
        value: ms(f.p99),
        reference: `${ms(hedging.fastNodeMs.p50)} (fast node)`,
        ratio: x(f.p99Ratio),
        target: 'info',
        status: '—',
      });
    }
  }
  return out;
}

function notes(hedging: Hedging): string[] {
  return [
    'absent' in hedging
      ? `**3b. Two upstreams, one slow.** n/a: ${hedging.absent}.`
      : [
          `**3b. Two upstreams, one slow.** Two more fake nodes: the first of the list answers every call-read after`,
          `${hedging.slowMs} ms, the second after ${UPSTREAM_DELAY_MS} ms. Two gateways on \`STACKS_API_URL_MAINNET=<slow>,<fast>\`,`,
          `one without hedging and one with UPSTREAM_HEDGE_MS=${hedging.hedgeMs}; sequential misses (fresh arguments, ABI cached),`,
          `alternating with direct calls to the fast node, whose median (${ms(hedging.fastNodeMs.p50)}) is the reference.`,
          `${hedging.withoutHedging.misses} misses without hedging (each may take ${hedging.slowMs / 1000} s), ${hedging.withHedging.misses} with; with so few`,
          'samples the p99 is the slowest miss. Call-reads at the slow / fast node:',
          `${hedging.callReads.slow} / ${hedging.callReads.fast}.`,
        ].join('\n'),
    '',
  ];
}

async function run() {
  const results = await hedgingCase();
  return {
    settings: {
      slowUpstreamMs: SLOW_UPSTREAM_MS,
      hedgeMs: HEDGE_MS,
      hedgedMisses: HEDGED_MISSES,
      unhedgedMisses: UNHEDGED_MISSES,
      upstreamDelayMs: UPSTREAM_DELAY_MS,
    },
    rows: rows(results),
    notes: notes(results),
    results,
  };
}

export const hedging: BenchCase = { title: 'two upstreams, the preferred one 2 s slow', run };
runStandalone(import.meta.filename, hedging);
