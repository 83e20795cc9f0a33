/**
 * bursts: 1,000 concurrent cold requests for one key, then for 100 keys, while the fake node
 * (bench/fake-node-process.ts) holds every call-read; the upstream calls that reach it, against
 * the number of keys. Gateway: what `npm start` runs (package.json "main"), SQLite store,
 * LOG_LEVEL=warn, UPSTREAM_TIMEOUT_MS=60000. Goal: one upstream call per key, every answer 200.
 *
 *   npm run build && node --import tsx bench/cases/bursts.ts
 */
import http from 'node:http';
import {
  ABI_PATH,
  type BenchCase,
  ENTRY_PATH,
  entryBody,
  expectOk,
  type FakeNodeProc,
  freshDir,
  gateway,
  log,
  mark,
  type Row,
  round,
  runStandalone,
  sleep,
  startFakeNodeProcess,
  x,
} from '../support.js';

const BURST = 1000;
const BURST_KEYS = 100;

interface BurstResult {
  readonly requests: number;
  readonly distinctKeys: number;
  readonly callRead: number;
  readonly otherUpstream: number;
  readonly statuses: Record<string, number>;
  /** Responses that arrived before the upstream was let go: must be 0 for a fair test. */
  readonly answeredBeforeRelease: number;
  readonly heldAtUpstream: number;
  readonly wallMs: number;
}

/**
 * Fire `BURST` requests at once, each on a connection of its own, while the fake node holds
 * every call-read; release once every request has been written and the gateway had time to
 * read them, then count what reached the node.
 */
async function burst(gwUrl: string, node: FakeNodeProc, ids: readonly bigint[]): Promise<BurstResult> {
  await node.call({ cmd: 'resetStats' });
  await node.call({ cmd: 'gate', kind: 'call-read' });
  const t0 = performance.now();
  let written = 0;
  let released = false;
  let answeredBeforeRelease = 0;
  const statuses: Record<string, number> = {};
  const answers = ids.map(
    (id) =>
      new Promise<void>((resolve) => {
        const body = entryBody(id);
        const req = http.request(
          `${gwUrl}${ENTRY_PATH}`,
          { method: 'POST', agent: false, headers: { 'content-type': 'application/json' }, timeout: 60_000 },
          (res) => {
            if (!released) answeredBeforeRelease += 1;
            res.resume();
            res.on('end', () => {
              const key = String(res.statusCode);
              statuses[key] = (statuses[key] ?? 0) + 1;
              resolve();
            });
          },
        );
        req.on('finish', () => {
          written += 1;
        });
        req.on('timeout', () => req.destroy(new Error('timeout')));
        req.on('error', (err) => {
          statuses[err.message] = (statuses[err.message] ?? 0) + 1;
          resolve();
        });
        req.end(body);
      }),
  );
  // Every request on the wire, at least one at the node, then a quiet second for the gateway
  // to read the rest (bounded: 20 s).
  const deadline = performance.now() + 20_000;
  while ((written < ids.length || (await node.count('call-read')) === 0) && performance.now() < deadline) {
    await sleep(10);
  }
  await sleep(1000);
  const heldAtUpstream = await node.count('call-read');
  released = true;
  await node.call({ cmd: 'release' });
  await Promise.all(answers);
  const wallMs = performance.now() - t0;
  const callRead = await node.count('call-read');
  const total = await node.count();
  return {
    requests: ids.length,
    distinctKeys: new Set(ids).size,
    callRead,
    otherUpstream: total - callRead,
    statuses,
    answeredBeforeRelease,
    heldAtUpstream,
    wallMs: round(wallMs, 0),
  };
}

async function burstsCase(node: FakeNodeProc) {
  // A long upstream timeout: the held call must not time out and be retried while the gate is shut.
  const gw = await gateway(node.url, freshDir('bursts'), { UPSTREAM_TIMEOUT_MS: '60000' });
  try {
    await expectOk(`${gw.url}${ABI_PATH}`); // the ABI is cached first: the bursts count call-reads
    log(`bursts: ${BURST} identical cold requests`);
    const identical = await burst(
      gw.url,
      node,
      Array.from({ length: BURST }, () => 1_000_000_000n),
    );
    log(`bursts: ${BURST} cold requests over ${BURST_KEYS} keys`);
    const distinct = await burst(
      gw.url,
      node,
      Array.from({ length: BURST }, (_, i) => 2_000_000_000n + BigInt(i % BURST_KEYS)),
    );
    return { identical, distinct };
  } finally {
    await gw.proc.stop();
  }
}

type Bursts = Awaited<ReturnType<typeof burstsCase>>;

function rows(bursts: Bursts): Row[] {
  const out: Row[] = [];
  for (const [name, b, expected] of [
    ['1,000 identical cold requests', bursts.identical, 1],
    ['1,000 cold requests over 100 keys', bursts.distinct, 100],
  ] as const) {
    const all200 = (b.statuses['200'] ?? 0) === b.requests;
    const fair = b.answeredBeforeRelease === 0;
    out.push({
      figure: `${name}: upstream calls`,
      value: `${b.callRead + b.otherUpstream}`,
      reference: `${expected} (keys)`,
      ratio: x((b.callRead + b.otherUpstream) / expected),
      target: `= ${expected}, all 200`,
      status: mark(b.callRead + b.otherUpstream === expected && all200 && fair),
    });
  }
  return out;
}

function notes(bursts: Bursts): string[] {
  const d = (b: typeof bursts.identical): string =>
    `${b.callRead} call-read + ${b.otherUpstream} other upstream requests; statuses ${JSON.stringify(b.statuses)};` +
    ` ${b.heldAtUpstream} held at the node when released; ${b.answeredBeforeRelease} answered before release;` +
    ` ${b.wallMs} ms`;
  return [
    `**2. Cold bursts.** ${BURST} \`POST …/get-entry\` requests, each on a connection of its own, fired`,
    'at once while the fake node holds every call-read (its gate). Once every request is written and at',
    'least one call reached the node, one more quiet second lets the gateway read them all, then the gate',
    "opens and the node's counters are read after the last answer. The ABI is cached before (its fetch is",
    'not part of the count); UPSTREAM_TIMEOUT_MS=60000 so that the held call is not retried. The gateway',
    'pools 16 upstream connections, so in the 100-key burst at most 16 calls are held at once.',
    '',
    `- identical: ${d(bursts.identical)}`,
    `- 100 keys: ${d(bursts.distinct)}`,
    '',
  ];
}

async function run() {
  const node = await startFakeNodeProcess();
  try {
    const results = await burstsCase(node);
    return {
      settings: { burst: BURST, burstKeys: BURST_KEYS },
      rows: rows(results),
      notes: notes(results),
      results,
    };
  } finally {
    await node.stop();
  }
}

export const bursts: BenchCase = { title: 'cold bursts', run };
runStandalone(import.meta.filename, bursts);
