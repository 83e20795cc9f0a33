/**
 * startup: process start to the first answered request (a decode), against spawn to exit of
 * `node -e ""` measured alternately, five runs each, medians; and the unbundled tsc output
 * (dist/src/main.js) when `npm start` runs a bundle. Goal: ≤ 1000 ms.
 *
 *   npm run build && node --import tsx bench/cases/startup.ts
 */
import fs from 'node:fs';
import path from 'node:path';
import {
  type BenchCase,
  DECODE_BODY,
  DECODE_PATH,
  type FakeNodeProc,
  freePort,
  freshDir,
  gatewayEnv,
  log,
  mark,
  median,
  ms,
  ROOT,
  type Row,
  requireGatewayEntry,
  round,
  runStandalone,
  spawnNode,
  startFakeNodeProcess,
  timeToExit,
  timeToFirstAnswer,
  UNBUNDLED,
  x,
} from '../support.js';

const STARTUPS = 5;

async function startupCase(node: FakeNodeProc) {
  const gateway: number[] = [];
  const reference: number[] = [];
  // The unbundled tsc output too, when npm start runs a bundle: what the bundling saves.
  const unbundledEntry = path.join(ROOT, UNBUNDLED);
  const compareUnbundled = requireGatewayEntry() !== unbundledEntry && fs.existsSync(unbundledEntry);
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
    gateway.push(await firstAnswer(requireGatewayEntry()));
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

type Startup = Awaited<ReturnType<typeof startupCase>>;

function rows(startup: Startup): Row[] {
  const out: Row[] = [];
  out.push({
    figure: `spawn → first 200, median of ${startup.runs}`,
    value: ms(startup.gatewayMs.median, 0),
    reference: `${ms(startup.nodeEmptyMs.median, 0)} (node -e "")`,
    ratio: x(startup.gatewayMs.median / startup.nodeEmptyMs.median),
    target: '≤ 1000 ms',
    status: mark(startup.gatewayMs.median <= 1000),
  });
  if (startup.unbundledMs !== undefined) {
    out.push({
      figure: `unbundled tsc output (dist/src/main.js), median of ${startup.runs}`,
      value: ms(startup.unbundledMs.median, 0),
      reference: `${ms(startup.nodeEmptyMs.median, 0)} (node -e "")`,
      ratio: x(startup.unbundledMs.median / startup.nodeEmptyMs.median),
      target: 'info',
      status: '—',
    });
  }
  return out;
}

function notes(startup: Startup): string[] {
  const entry = path.relative(ROOT, requireGatewayEntry());
  return [
    `**5. Start-up.** \`node ${entry}\` spawned with an empty DATA_DIR; from just before \`spawn()\``,
    'to the first 200 answer to a decode request, retried immediately on every refused connection.',
    `${startup.runs} runs, median. Reference: spawn to exit of \`node -e ""\`, alternating with them.`,
    `Gateway runs: ${startup.gatewayMs.all.join(', ')} ms; node -e "": ${startup.nodeEmptyMs.all.join(', ')} ms` +
      (startup.unbundledMs === undefined ? '.' : `; unbundled: ${startup.unbundledMs.all.join(', ')} ms.`),
    '',
  ];
}

async function run() {
  const node = await startFakeNodeProcess();
  try {
    const results = await startupCase(node);
    return { settings: { startups: STARTUPS }, rows: rows(results), notes: notes(results), results };
  } finally {
    await node.stop();
  }
}

export const startup: BenchCase = { title: 'start-up', run };
runStandalone(import.meta.filename, startup);
