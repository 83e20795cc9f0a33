/**
 * The event observer on real recorded traffic (test/fixtures/observer-recordings/): how often
 * an answer of a contract that no block touches stays current by proof across the blocks real
 * Stacks nodes posted. Every recording is posted, in order, to the observer of the production
 * bundle (a gateway of its own per recording, in front of the fake node); after each block is
 * applied, the contract is read with `maxBlocks: 0`. A rate, not a speed: no wrk.
 *
 * Reported per recording and over all: blocks after which the read was a hit / blocks, and the
 * breaks by cause as the recorded chain itself shows them (test/support/observer-recordings.ts
 * chainBreaks: the first block, a height gap, a parent that is not the previous block, an
 * unusable payload, a burnchain operation, an undecodable transaction, a call into a contract
 * whose source the node cannot give). Goal: a hit after every block that is not a break.
 *
 *   npm run build && node --import tsx bench/run.ts observer-recorded --no-report
 */
import http from 'node:http';
import { startFakeNode } from '../../test/support/fake-node.js';
import { MAINNET_ADDR, TESTNET_ADDR } from '../../test/support/fixtures.js';
import {
  type BreakCause,
  chainBreaks,
  loadRecording,
  type RecordedBlock,
  type RecordedPost,
  recordingNames,
  recordingNetwork,
  replay,
  UNTOUCHED_READ,
  usablePayload,
} from '../../test/support/observer-recordings.js';
import { parseMetrics } from '../../test/support/prom.js';
import {
  type BenchCase,
  freePort,
  log,
  type Row,
  requireGatewayEntry,
  runStandalone,
  spawnNode,
  waitForHttp,
} from '../support.js';

const { name: READ_NAME, fn: READ_FN, source: READ_SOURCE, abi: READ_ABI } = UNTOUCHED_READ;
/** Bound of every wait for the gateway to apply a payload. */
const APPLY_TIMEOUT_MS = 10_000;

interface RecordingResult {
  readonly network: string;
  readonly heights: string;
  readonly posts: number;
  readonly blocks: number;
  readonly hits: number;
  /** Blocks that are no break: the goal is a hit after each. */
  readonly expectedHits: number;
  readonly breaks: Partial<Record<BreakCause, number>>;
  /** Blocks whose outcome differs from the goal (height, causes, hit). */
  readonly unexpected: { height: number; causes: BreakCause[]; hit: boolean }[];
  readonly non200: number;
  readonly rejected: number;
  readonly upstreamReads: number;
}

function get(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent: false }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => {
          text += c;
        });
        res.on('end', () => resolve(text));
      })
      .on('error', reject);
  });
}

function postJson(url: string, body: string) {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>(
    (resolve, reject) => {
      const req = http.request(
        url,
        { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } },
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

/** Sum of a metric's samples (every label set). */
async function metricSum(gatewayUrl: string, name: string): Promise<number> {
  return parseMetrics(await get(`${gatewayUrl}/metrics`))
    .filter((s) => s.name === name)
    .reduce((n, s) => n + s.value, 0);
}

async function replayOne(
  name: string,
  node: Awaited<ReturnType<typeof startFakeNode>>,
  entry: string,
): Promise<RecordingResult> {
  const recording = loadRecording(name);
  const network = recordingNetwork(recording);
  const address = network === 'mainnet' ? MAINNET_ADDR : TESTNET_ADDR;
  const readContract = `${address}.${READ_NAME}`;
  const blocks = chainBreaks(recording, { readContract, knownSources: new Set([readContract]) });
  const fresh = blocks.filter((b) => !b.duplicate);
  node.setAbi(address, READ_NAME, READ_ABI);
  node.setSource(address, READ_NAME, READ_SOURCE);
  node.setReadOnly(address, READ_NAME, READ_FN, { okay: true, result: UNTOUCHED_READ.result });
  node.setTipHeight(fresh[0]!.height);
  node.resetStats();
  const port = await freePort();
  const observerPort = await freePort();
  const proc = spawnNode([entry], {
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    PORT: String(port),
    HOST: '127.0.0.1',
    CACHE_STORE: 'memory',
    STACKS_API_URL_MAINNET: node.url,
    STACKS_API_URL_TESTNET: node.url,
    UPSTREAM_RATE_LIMIT_PER_MINUTE: '1000000',
    CHAIN_TIP_MAX_AGE_MS: '600000',
    EVENT_OBSERVER_PORT: String(observerPort),
    EVENT_OBSERVER_NETWORK: network,
  });
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitForHttp(`${url}/health`, proc);
    const readsBefore = node.count('call-read');
    // What the gateway has applied: every usable /new_block shows in blocks_total (any
    // outcome), every unusable payload in rejected_total; a usable burn block changes nothing.
    let blocksPosted = 0;
    let unusablePosted = 0;
    const untilHandled = async (_count: number, post: RecordedPost) => {
      if (!usablePayload(post)) unusablePosted++;
      else if (post.path === '/new_block') blocksPosted++;
      else return;
      const deadline = Date.now() + APPLY_TIMEOUT_MS;
      for (;;) {
        const applied = await metricSum(url, 'clarity_cache_observer_blocks_total');
        const rejected = await metricSum(url, 'clarity_cache_observer_rejected_total');
        if (applied >= blocksPosted && rejected >= unusablePosted) return;
        if (Date.now() > deadline) throw new Error(`${name}: payload at line ${post.line} not applied`);
        await new Promise((resolve) => setImmediate(resolve));
      }
    };
    const seen: { height: number; causes: BreakCause[]; hit: boolean }[] = [];
    const answers = await replay(recording, blocks, {
      observerUrl: `http://127.0.0.1:${observerPort}`,
      untilHandled,
      afterBlock: async (block: RecordedBlock) => {
        if (block.duplicate) return;
        node.setTipHeight(block.height);
        const res = await postJson(
          `${url}/contract-calls/read-only/${address}/${READ_NAME}/${READ_FN}`,
          JSON.stringify({ functionArgs: [], cacheControl: { maxBlocks: 0 } }),
        );
        if (res.status !== 200) throw new Error(`${name}: read after block ${block.height}: ${res.status}`);
        const hit = String(res.headers['cache-status'] ?? '').includes('hit');
        seen.push({ height: block.height, causes: [...block.causes], hit });
        // The read's dependencies are analysed in the background once it is first stored, from
        // the source the node gives: wait for that source to be asked, then for two round trips
        // of the gateway, before the next block (in service this takes a block's time).
        if (seen.length === 1) {
          const sourcePath = `/v2/contracts/source/${address}/${READ_NAME}`;
          const deadline = Date.now() + APPLY_TIMEOUT_MS;
          while (!node.requests.some((r) => r.path === sourcePath)) {
            if (Date.now() > deadline) throw new Error(`${name}: the read's source was never asked`);
            await get(`${url}/health`);
          }
          await get(`${url}/ready`);
          await get(`${url}/ready`);
        }
      },
    });
    const breaks: Partial<Record<BreakCause, number>> = {};
    for (const s of seen) for (const c of s.causes) breaks[c] = (breaks[c] ?? 0) + 1;
    const result: RecordingResult = {
      network,
      heights: `${fresh[0]!.height}..${fresh[fresh.length - 1]!.height}`,
      posts: recording.posts.length,
      blocks: seen.length,
      hits: seen.filter((s) => s.hit).length,
      expectedHits: seen.filter((s) => s.causes.length === 0).length,
      breaks,
      unexpected: seen.filter((s) => s.hit !== (s.causes.length === 0)),
      non200: answers.filter((a) => a.status !== 200).length,
      rejected: await metricSum(url, 'clarity_cache_observer_rejected_total'),
      upstreamReads: node.count('call-read') - readsBefore,
    };
    log(
      `${name}: ${result.hits}/${result.blocks} blocks kept the read a hit; breaks ${JSON.stringify(breaks)}`,
    );
    return result;
  } finally {
    await proc.stop(5000);
  }
}

const pct = (a: number, b: number): string => (b === 0 ? '—' : `${((a / b) * 100).toFixed(1)} %`);
const causesText = (breaks: Partial<Record<BreakCause, number>>): string =>
  Object.entries(breaks)
    .map(([cause, n]) => `${cause} ${n}`)
    .join(', ') || 'none';

async function run() {
  const entry = requireGatewayEntry();
  const node = await startFakeNode();
  try {
    const perRecording: Record<string, RecordingResult> = {};
    for (const name of recordingNames()) perRecording[name] = await replayOne(name, node, entry);
    const all = Object.values(perRecording);
    const sum = (pick: (r: RecordingResult) => number) => all.reduce((n, r) => n + pick(r), 0);
    const breaks: Partial<Record<BreakCause, number>> = {};
    for (const r of all)
      for (const [cause, n] of Object.entries(r.breaks))
        breaks[cause as BreakCause] = (breaks[cause as BreakCause] ?? 0) + n;
    const total = {
      blocks: sum((r) => r.blocks),
      hits: sum((r) => r.hits),
      expectedHits: sum((r) => r.expectedHits),
      non200: sum((r) => r.non200),
      rejected: sum((r) => r.rejected),
      upstreamReads: sum((r) => r.upstreamReads),
      breaks,
    };
    const rows: Row[] = Object.entries(perRecording).map(([name, r]) => ({
      figure: `\`${name}\` (${r.network}, heights ${r.heights}): blocks after which the untouched read was a hit`,
      value: `${r.hits} / ${r.blocks} = ${pct(r.hits, r.blocks)}`,
      reference: `breaks: ${causesText(r.breaks)}`,
      ratio: '—',
      target: `${r.expectedHits} (every block not a break)`,
      status: r.hits === r.expectedHits && r.unexpected.length === 0 && r.rejected === 0 ? 'MET' : 'MISSED',
    }));
    rows.push({
      figure: 'all recordings: blocks after which the untouched read was a hit',
      value: `${total.hits} / ${total.blocks} = ${pct(total.hits, total.blocks)}`,
      reference: `breaks: ${causesText(breaks)}`,
      ratio: '—',
      target: `${total.expectedHits} (every block not a break)`,
      status:
        total.hits === total.expectedHits && total.rejected === 0 && total.non200 === 0 ? 'MET' : 'MISSED',
    });
    return {
      settings: { recordings: Object.keys(perRecording), cacheControl: { maxBlocks: 0 } },
      rows,
      notes: [
        'Each recording of test/fixtures/observer-recordings/ (real event-observer traffic of Stacks nodes, see its',
        'README.md) is posted in order to the observer of the production bundle (a gateway per recording,',
        '`CACHE_STORE=memory`, in front of the fake node); after each block is applied (its `blocks_total`',
        'counted) a contract no block touches is read with `maxBlocks: 0`, the node answering at that block.',
        'Breaks are read from the recordings themselves (test/support/observer-recordings.ts `chainBreaks`): the',
        'first block (nothing cached yet), a parent that is not the previous block, a call into a contract whose',
        'source the node does not have (its reach is unknown). Without the observer the same reads are never hits:',
        'every block moves the tip past the entry.',
      ],
      results: { total, perRecording },
    };
  } finally {
    await node.close();
  }
}

export const observerRecorded: BenchCase = {
  title: 'the event observer on recorded traffic: untouched reads kept current',
  run,
};
runStandalone(import.meta.filename, observerRecorded);
