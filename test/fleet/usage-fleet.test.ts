/**
 * Usage metered per key (docs/usage.md) across a fleet as it is run: three gateway processes
 * behind the shipped nginx on one real redis-server, in front of one fake Stacks node. Every
 * metered answer's access log line (each instance's stdout, LOG_LEVEL=info) is one request of
 * the usage rows every instance writes to the same Redis hashes once a second:
 *
 * - after a mixed load (keys and anonymous clients, hits, misses and fast-lane replays, node
 *   routes, batches, errors, refusals, event streams), the rows count exactly the access log's
 *   lines of metered routes, summed over the three instances, as any instance answers them;
 * - an instance killed with SIGKILL under a steady load loses at most its last second: the
 *   rows count every line but, at most, those the killed instance wrote in its last 1.5 s.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Cl } from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../support/fake-node.js';
import { hex, MAINNET_ADDR, SAMPLE_ABI, TESTNET_ADDR } from '../support/fixtures.js';
import { request } from '../support/gateway.js';
import { type LoadBalancer, startNginx } from '../support/nginx.js';
import { type ServiceProcess, startService } from '../support/process.js';
import { type RedisServer, startRedis } from '../support/redis-server.js';
import { openSse } from '../support/sse.js';
import { tmpDir } from '../unit/cache/tmp-dir.js';

const TOKEN = 'usage-fleet-admin-token';
const ALICE = 'k-usage-alice-0123456789';
const BOB = 'k-usage-bob-0123456789ab';
const WRONG = 'k-usage-wrong-0123456789';
const admin = { authorization: `Bearer ${TOKEN}` };

/** Metered routes as docs/usage.md lists them (not /usage, /admin, /health, /ready, /metrics). */
const METERED = /^\/(contract-calls|subscriptions|v2\/|v3\/|mainnet\/|testnet\/)/;

/** How long the rows may take to show every instance's figures: a flush each second, and slack. */
const SETTLE_MS = 5_000;

interface AccessLine {
  readonly time: number;
  readonly url: string;
}

/** A gateway process and the access log lines of metered routes it wrote to its stdout. */
interface Instance {
  readonly service: ServiceProcess;
  readonly lines: AccessLine[];
  /** Access log lines of `GET /usage`, a route never metered. */
  usageReads: number;
}

let node: FakeNode;
let redis: RedisServer | undefined;
let lb: LoadBalancer;
const fleet: Instance[] = [];

/** Collect an instance's access log lines from its stdout, line by line as they arrive. */
function watchLog(service: ServiceProcess): Instance {
  const instance: Instance = { service, lines: [], usageReads: 0 };
  let partial = '';
  service.child.stdout?.on('data', (chunk: Buffer) => {
    partial += chunk.toString();
    const cut = partial.lastIndexOf('\n');
    if (cut < 0) return;
    const complete = partial.slice(0, cut);
    partial = partial.slice(cut + 1);
    for (const text of complete.split('\n')) {
      if (!text.startsWith('{')) continue;
      const line = JSON.parse(text) as { msg?: string; url?: unknown; time?: unknown };
      if (line.msg !== 'request') continue;
      if (line.url === '/usage') instance.usageReads++;
      if (typeof line.url === 'string' && METERED.test(line.url))
        instance.lines.push({ time: Date.parse(String(line.time)), url: line.url });
    }
  });
  return instance;
}

const loggedLines = (): number => fleet.reduce((n, i) => n + i.lines.length, 0);

/** Requests summed over every row of GET /admin/usage, as one instance answers it. */
async function rowRequests(base: string): Promise<number> {
  const res = await request(`${base}/admin/usage`, { headers: admin });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const rows = res.body.data.rows as { requests: number }[];
  const sum = rows.reduce((n, r) => n + r.requests, 0);
  expect(res.body.data.totals.requests).toBe(sum);
  return sum;
}

/**
 * Poll (bounded: SETTLE_MS) until `done` holds for what `read` gives; the last reading either
 * way. The only signal of a flush is time (once a second), so this is a poll, not a wait.
 */
async function settle<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const until = Date.now() + SETTLE_MS;
  let value = await read();
  while (!done(value) && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    value = await read();
  }
  return value;
}

/** The requests `next` starts, in order, at most `concurrency` at once, until it gives none. */
async function drive(concurrency: number, next: (i: number) => Promise<void> | undefined): Promise<void> {
  let i = 0;
  const worker = async (): Promise<void> => {
    for (;;) {
      const run = next(i++);
      if (run === undefined) return;
      await run;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

// --- the requests ---------------------------------------------------------------------------------

const balanceBody = (n: number) => ({
  functionArgs: [{ type: 'principal', value: `${MAINNET_ADDR}.c${n}` }],
});
const batchCall = (n: number) => ({
  contractAddress: MAINNET_ADDR,
  contractName: 'demo',
  functionName: 'get-balance',
  functionArgs: balanceBody(n).functionArgs,
});

/** One request of the mix, through the balancer; whether its route is metered. */
interface Sent {
  readonly url: string;
  readonly status: number;
  readonly metered: boolean;
}

async function send(
  url: string,
  init: { method?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
): Promise<Sent> {
  const hasBody = init.body !== undefined || init.rawBody !== undefined;
  const res = await fetch(`${lb.url}${url}`, {
    method: init.method ?? (hasBody ? 'POST' : 'GET'),
    headers: { ...(hasBody ? { 'content-type': 'application/json' } : {}), ...init.headers },
    ...(hasBody ? { body: init.rawBody ?? JSON.stringify(init.body) } : {}),
  });
  await res.arrayBuffer();
  return { url, status: res.status, metered: METERED.test(url) };
}

const READ = `/contract-calls/read-only/${MAINNET_ADDR}/demo/get-balance`;

/** The i-th request of the mixed load: who asks (alice, bob, anonymous) and what, by i. */
function mixed(i: number): Promise<Sent> {
  const who: Record<string, string> = [{ 'x-api-key': ALICE }, { 'x-api-key': BOB }, {}][i % 3]!;
  switch (i % 20) {
    case 0:
    case 1:
      // Distinct calls: a miss each.
      return send(READ, { body: balanceBody(10_000 + i), headers: who });
    case 2:
      return send('/contract-calls/batch', {
        body: { calls: [batchCall(i % 40), batchCall(20_000 + i), batchCall(7)] },
        headers: who,
      });
    case 3:
      return send(`/testnet/v2/contracts/call-read/${TESTNET_ADDR}/demo/get-balance`, {
        body: { sender: TESTNET_ADDR, arguments: [hex(Cl.principal(`${TESTNET_ADDR}.n${i % 30}`))] },
        headers: who,
      });
    case 4:
      return send(`/v2/contracts/interface/${MAINNET_ADDR}/demo`, { headers: who });
    case 5:
      return send(i % 40 === 5 ? '/v2/info' : '/mainnet/v2/info', { headers: who });
    case 6:
      // Errors (a bad body) and refusals (an unknown key): metered too.
      return i % 40 === 6
        ? send(READ, { body: { functionArgs: 'no' }, headers: who })
        : send(READ, { body: balanceBody(1), headers: { 'x-api-key': WRONG } });
    case 7:
      // Never metered: lines of the access log that the rows must not count.
      return i % 40 === 7 ? send('/health') : send('/usage', { headers: { 'x-api-key': ALICE } });
    default:
      // Repeated calls: hits, most of them replayed by the fast lane.
      return send(READ, { body: balanceBody(i % 25), headers: who });
  }
}

/**
 * A watched read's stream through the balancer: created with alice's key, opened, its first
 * event received, then the subscription deleted (from whichever instance nginx picks: the
 * deletion reaches the stream's through Redis), which ends the stream. Three requests, all metered.
 */
async function watchOnce(): Promise<number> {
  const created = await request(`${lb.url}/subscriptions`, {
    body: {
      reads: [
        { contractAddress: TESTNET_ADDR, contractName: 'demo', functionName: 'get-info', functionArgs: [] },
      ],
    },
    headers: { 'x-api-key': ALICE },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const sse = await openSse(`${lb.url}${created.body.data.events}`, { 'x-api-key': ALICE });
  try {
    expect(sse.status).toBe(200);
    expect((await sse.next(undefined, 10_000)).event).toBe('values');
    const deleted = await request(`${lb.url}/subscriptions/${created.body.data.id}`, {
      method: 'DELETE',
      headers: { 'x-api-key': ALICE },
    });
    expect(deleted.status).toBe(200);
    expect((await sse.next(undefined, 10_000)).json).toEqual({ code: 'NOT_FOUND' });
    await sse.ended;
  } finally {
    sse.close();
  }
  return 3;
}

// --- the fleet ------------------------------------------------------------------------------------

beforeAll(async () => {
  redis = await startRedis();
  if (redis === undefined) throw new Error('redis-server is needed for the fleet test');
  node = await startFakeNode({ tipHeight: 100 });
  for (const address of [MAINNET_ADDR, TESTNET_ADDR]) {
    node.setAbi(address, 'demo', SAMPLE_ABI);
    node.setReadOnly(address, 'demo', 'get-balance', { okay: true, result: hex(Cl.ok(Cl.uint(77))) });
    node.setReadOnly(address, 'demo', 'get-info', { okay: true, result: hex(Cl.tuple({})) });
  }
  const { dir } = tmpDir('usage-fleet-keys');
  const keysFile = path.join(dir, 'keys.json');
  writeFileSync(
    keysFile,
    JSON.stringify([
      { name: 'alice', key: ALICE },
      { name: 'bob', key: BOB },
    ]),
  );
  const env = {
    CACHE_STORE: 'redis',
    REDIS_URL: redis.url,
    STACKS_API_URL_MAINNET: node.url,
    STACKS_API_URL_TESTNET: node.url,
    ADMIN_TOKEN: TOKEN,
    API_KEYS_FILE: keysFile,
    TRUST_PROXY: '1',
    UPSTREAM_RATE_LIMIT_PER_MINUTE: '1000000',
    // Every client is nginx's address: never a client-side wait for the budget.
    UPSTREAM_MAX_WAITING_PER_CLIENT: '1000',
    UPSTREAM_TIMEOUT_MS: '15000',
    LOG_LEVEL: 'info',
  };
  const started = await Promise.all([0, 1, 2].map(() => startService(env)));
  for (const service of started) fleet.push(watchLog(service));
  lb = await startNginx(started.map((s) => s.url));
}, 60_000);

afterAll(async () => {
  await lb?.stop();
  await Promise.all(fleet.map((i) => i.service.stop()));
  await node?.close();
  await redis?.stop();
});

describe('usage rows of a fleet of three on one Redis, behind nginx', () => {
  it('count exactly the access log lines of metered routes, summed over the instances, as any instance answers', async () => {
    const TOTAL = 3_000;
    const statuses = new Map<number, number>();
    let metered = 0;
    let all = 0;
    let usageReads = 0;
    const load = drive(24, (i) => {
      if (i >= TOTAL) return undefined;
      return mixed(i).then((sent) => {
        all++;
        if (sent.metered) metered++;
        if (sent.url === '/usage') usageReads++;
        statuses.set(sent.status, (statuses.get(sent.status) ?? 0) + 1);
      });
    });
    // Watched reads' streams while the load runs, one after another.
    let streamed = 0;
    for (let s = 0; s < 3; s++) streamed += await watchOnce();
    await load;
    metered += streamed;
    all += streamed;

    // The mix is what it says: answers, misses, hits, errors, refusals.
    expect(statuses.get(200)).toBeGreaterThan(2_000);
    expect(statuses.get(400)).toBeGreaterThan(0);
    expect(statuses.get(401)).toBeGreaterThan(0);
    expect(node.count('call-read')).toBeGreaterThan(300);

    // Every answer's line has been read from the instances' stdout (a stream's is written as it
    // ends, which the client may see first); nginx sent none twice. Lines of GET /usage, never
    // metered, are told apart.
    const lines = await settle(
      async () => loggedLines(),
      (n) => n >= metered,
    );
    expect(lines).toBe(metered);
    expect(usageReads).toBeGreaterThan(0);
    expect(fleet.reduce((n, i) => n + i.usageReads, 0)).toBe(usageReads);
    for (const i of fleet) expect(i.lines.length).toBeGreaterThan(TOTAL / 10);

    // Every instance's figures reach the rows within a second or so: asked of each instance.
    const close = (rows: number) => Math.abs(rows - lines) <= lines * 0.001;
    const figures = await settle(
      () => Promise.all(fleet.map((i) => rowRequests(i.service.url))),
      (rows) => rows.every((r) => r === lines),
    );
    console.log(
      `usage fleet, exact: ${all} requests sent (${metered} metered, ${streamed} of them for 3 event streams); ` +
        `access log lines of metered routes ${fleet.map((i) => i.lines.length).join(' + ')} = ${lines}; ` +
        `rows' requests as each instance answers: ${figures.join(', ')}`,
    );
    for (const rows of figures) expect(close(rows), `rows ${rows} vs log lines ${lines}`).toBe(true);
  }, 60_000);

  it('lose at most the last second of an instance killed with SIGKILL under a steady load', async () => {
    // What the rows already hold (the test above): this test counts from here.
    const baseLines = fleet.map((i) => i.lines.length);
    const baseRows = await settle(
      () => rowRequests(fleet[0]!.service.url),
      (rows) => rows === loggedLines(),
    );
    expect(baseRows).toBe(loggedLines());

    const victim = fleet[1]!;
    let stop = false;
    let sent = 0;
    let failed = 0;
    const started = Date.now();
    const load = drive(8, (i) => {
      if (stop) return undefined;
      return mixed(i + 100_000).then(
        () => {
          sent++;
        },
        () => {
          failed++;
        },
      );
    });
    // A steady load for 3 s (time is the only signal) and until the victim has answered a good
    // part of it (a loaded machine is slow), then the kill, then a little more.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const victimBase = baseLines[fleet.indexOf(victim)]!;
    for (let waited = 0; victim.lines.length - victimBase < 150 && waited < 15_000; waited += 50)
      await new Promise((resolve) => setTimeout(resolve, 50));
    const killedAt = Date.now();
    victim.service.child.kill('SIGKILL');
    expect(await victim.service.exited).toBe(null);
    const victimOut = victim.service.child.stdout;
    if (victimOut !== null && !victimOut.closed)
      await new Promise((resolve) => victimOut.once('close', resolve));
    await new Promise((resolve) => setTimeout(resolve, 500));
    stop = true;
    await load;
    expect(Date.now() - started).toBeGreaterThan(3_000);

    const survivors = fleet.filter((i) => i !== victim);
    const since = (i: Instance) => i.lines.slice(baseLines[fleet.indexOf(i)]);
    // The victim's stdout has been read to its end (the pipe held what it wrote before the kill).
    const victimLines = since(victim);
    const lastSecond = victimLines.filter((l) => l.time >= killedAt - 1_500).length;
    const expected = () => survivors.reduce((n, i) => n + since(i).length, 0) + victimLines.length;

    const figures = await settle(
      () => Promise.all(survivors.map(async (i) => (await rowRequests(i.service.url)) - baseRows)),
      // Both survivors agree once neither holds unflushed figures (and every line has been read).
      (rows) => rows.every((r) => r === rows[0] && r >= expected() - lastSecond && r <= expected()),
    );
    const lines = expected();
    console.log(
      `usage fleet, kill -9: ${sent} requests sent (${failed} failed); access log lines of metered routes since ` +
        `the test began: ${survivors.map((i) => since(i).length).join(' + ')} (survivors) + ${victimLines.length} (victim) = ${lines}, ` +
        `the victim's in its last 1.5 s: ${lastSecond}; rows' requests as each survivor answers: ${figures.join(', ')} ` +
        `(at least ${lines - lastSecond} expected; ${lines - Math.min(...figures)} missing)`,
    );
    for (const rows of figures) {
      expect(rows).toBeGreaterThanOrEqual(lines - lastSecond);
      // Nothing counted twice.
      expect(rows).toBeLessThanOrEqual(lines);
    }
    // The bound says something: losing the victim's rows would break it.
    expect(victimLines.length - lastSecond, 'the victim wrote lines before its last 1.5 s').toBeGreaterThan(
      20,
    );
  }, 60_000);
});
