/**
 * `npm run demo`: a local chain and the gateway in front of it, no internet needed.
 *
 * Starts the devnet (src/devnet: the real Clarity VM with the sample contracts of contracts/)
 * on DEVNET_PORT (default 20443) and the gateway (`node --import tsx src/main.ts`) on PORT
 * (default 3000) with both networks pointed at the devnet, then prints curl commands for each
 * endpoint. Ctrl-C or SIGTERM stops both.
 *
 * Environment: PORT, HOST, DEVNET_PORT, DEVNET_HOST, EVENT_OBSERVER_PORT (default 3701); every
 * gateway variable passes through. The demo keeps its cache apart from the service's: in
 * DATA_DIR when set, else in ./.demo-data, emptied at each start (the devnet starts from its
 * genesis every time, so an earlier run's answers belong to another chain). Nothing under the
 * service's default ./data changes. It sets an ADMIN_TOKEN (printed) unless one is given, and a
 * budget a person clicking around the explorer never exhausts: the devnet is local and free.
 * The gateway is the devnet's event observer, so a transaction's effect shows at once.
 * A busy PORT or DEVNET_PORT stops the demo with one line before anything starts: each is
 * proven free by listening on it first (a readiness probe alone could be answered by whatever
 * process already holds the port).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { rmSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Cl, cvToHex } from '@stacks/transactions';
import { type Devnet, startDevnet } from '../src/devnet/index.js';

function fail(message: string): never {
  console.error(`demo: ${message}`);
  process.exit(1);
}

function portFrom(name: string, fallback: number): number {
  const raw = process.env[name] ?? String(fallback);
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < 1 || value > 65535)
    fail(`${name} must be a port number from 1 to 65535, got "${raw}"`);
  return value;
}

const gatewayPort = portFrom('PORT', 3000);
const devnetPort = portFrom('DEVNET_PORT', 20443);
const gatewayHost = process.env.HOST ?? '0.0.0.0';
/** The demo's own cache directory unless DATA_DIR names one (then it is the user's: kept). */
const ownDataDir = process.env.DATA_DIR === undefined || process.env.DATA_DIR.trim() === '';
const dataDir = path.resolve(ownDataDir ? '.demo-data' : (process.env.DATA_DIR as string));
const adminToken = process.env.ADMIN_TOKEN ?? `demo-${randomBytes(12).toString('hex')}`;
const observerPort = portFrom('EVENT_OBSERVER_PORT', 3701);
const clientHost = gatewayHost === '0.0.0.0' || gatewayHost === '::' ? '127.0.0.1' : gatewayHost;
const gatewayUrl = `http://${clientHost.includes(':') ? `[${clientHost}]` : clientHost}:${gatewayPort}`;

/** Listen on the port for a moment: EADDRINUSE means another process has it. */
async function ensureFree(name: string, port: number, host: string): Promise<void> {
  const probe = net.createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      probe.once('error', reject);
      probe.listen({ port, host, exclusive: true }, () => resolve());
    });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE')
      fail(`port ${port} (${name}) is already in use by another process; set ${name} to a free port`);
    fail(`cannot listen on ${host}:${port} (${name}): ${code ?? String(error)}`);
  }
  await new Promise<void>((resolve) => probe.close(() => resolve()));
}

async function waitForGateway(child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`the gateway exited (${child.exitCode ?? child.signalCode}) before answering`);
    }
    try {
      const res = await fetch(`${gatewayUrl}/contract-calls/known-contracts`);
      await res.arrayBuffer();
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
  }
  throw new Error(`the gateway did not answer on ${gatewayUrl} within ${timeoutMs / 1000} s`);
}

function curlPost(path: string, body: unknown): string {
  return `curl -si -X POST ${gatewayUrl}${path} -H 'Content-Type: application/json' -d '${JSON.stringify(body)}'`;
}

function curlPostHeaders(path: string, body: unknown): string {
  // curlPost's -i already prints the response headers (Cache-Status, Age,
  // X-Canonical-Stacks-Tip-Height) before the body.
  return curlPost(path, body);
}

async function printGuide(devnet: Devnet): Promise<void> {
  const D = devnet.deployer;
  const { wallet_1: W1, wallet_3: W3 } = devnet.accounts;
  const ro = (contract: string, fn: string) => `/contract-calls/read-only/${D}/${contract}/${fn}`;
  const balanceOfW3 = { functionArgs: [{ type: 'principal', value: W3 }] };
  const transfer = {
    sender: W1,
    contract: `${D}.demo-token`,
    function: 'transfer',
    arguments: [Cl.uint(1_000_000), Cl.principal(W1), Cl.principal(W3), Cl.none()].map((cv) => cvToHex(cv)),
  };
  // The block before any demo transaction, named as ?tip= takes it.
  const block = (await (await fetch(`${devnet.url}/devnet/blocks/${devnet.tipHeight()}`)).json()) as {
    indexBlockHash: string;
  };
  const pinnedTip = `0x${block.indexBlockHash}`;
  const lines = [
    '',
    '================================================================================',
    ` clarity-cache demo: gateway ${gatewayUrl}  →  devnet ${devnet.url}`,
    '================================================================================',
    ` Deployer ${D} deployed: ${devnet.contracts.map((c) => c.split('.')[1]).join(', ')}`,
    ` Accounts: wallet_1 ${W1}, wallet_3 ${W3} (all: GET ${devnet.url}/devnet/accounts)`,
    '',
    '# 1. Decode a Clarity value (an object, or hex)',
    curlPost('/contract-calls/decode-clarity-value', {
      clarityValue: { type: 'responseOk', value: { type: 'uint', value: '5' } },
    }),
    curlPost('/contract-calls/decode-clarity-value', { clarityValue: cvToHex(Cl.stringAscii('Demo Token')) }),
    '',
    '# 2. Read-only calls (cached; integers are decimal strings unless strictJsonCompat is false)',
    curlPost(ro('demo-token', 'get-name'), { functionArgs: [] }),
    curlPost(ro('demo-token', 'get-balance'), {
      functionArgs: [{ type: 'principal', value: W1 }],
      strictJsonCompat: false,
    }),
    curlPost(ro('demo-dao', 'get-dao-info'), { functionArgs: [] }),
    curlPost(ro('demo-dao', 'get-proposal'), {
      functionArgs: [{ type: 'uint', value: '1' }],
      preserveContainers: true,
    }),
    curlPost(ro('demo-nft', 'get-owner'), { functionArgs: [{ type: 'uint', value: '1' }] }),
    '# ... an (err ...) result is CONTRACT_ERROR (422):',
    curlPost(ro('demo-dao', 'get-treasury-withdrawal'), { functionArgs: [{ type: 'uint', value: '10' }] }),
    '',
    '# 3. Contract ABI, then the contracts whose ABI is cached',
    `curl -s ${gatewayUrl}/contract-calls/abi/${D}/demo-token`,
    `curl -s ${gatewayUrl}/contract-calls/known-contracts`,
    '',
    '# 4. Watch a cached answer go stale: read wallet_3 balance (cached) ...',
    curlPost(ro('demo-token', 'get-balance'), balanceOfW3),
    '#    ... transfer 1 DEMO from wallet_1 to wallet_3 on the devnet (a transaction in a new block) ...',
    `curl -s -X POST ${devnet.url}/devnet/call-public -H 'Content-Type: application/json' -d '${JSON.stringify(transfer)}'`,
    '#    ... the same read is still served from the cache (stale), until bustCache fetches the new one:',
    curlPost(ro('demo-token', 'get-balance'), balanceOfW3),
    curlPost(ro('demo-token', 'get-balance'), { ...balanceOfW3, cacheControl: { bustCache: true } }),
    '',
    '# 5. Freshness against the chain (README "Freshness")',
    '#    A read pinned to a block (its index block hash): the same answer forever, whatever is mined later',
    curlPostHeaders(ro('demo-token', 'get-balance'), { ...balanceOfW3, tip: pinnedTip }),
    '#    maxBlocks 0: serve the cached balance only if no block was mined since it was read.',
    '#    Run it, run the transfer of step 4 again (a new block), then run it again: fwd=stale, the new balance',
    curlPostHeaders(ro('demo-token', 'get-balance'), { ...balanceOfW3, cacheControl: { maxBlocks: 0 } }),
    `curl -s -X POST ${devnet.url}/devnet/call-public -H 'Content-Type: application/json' -d '${JSON.stringify(transfer)}'`,
    '#    Stop the node for 30 s: a stale answer beats an error (Cache-Status detail=stale-if-error). Tip',
    '#    knowledge up to CHAIN_TIP_MAX_AGE_MS (5 s) old is trusted: wait that long after the outage starts',
    `curl -s -X POST ${devnet.url}/devnet/outage -H 'Content-Type: application/json' -d '{"seconds":30}'`,
    curlPostHeaders(ro('demo-token', 'get-balance'), {
      ...balanceOfW3,
      cacheControl: { maxBlocks: 0, staleIfError: 300 },
    }),
    '#    ... the same read without staleIfError is a 502 while the node is down',
    curlPostHeaders(ro('demo-token', 'get-balance'), { ...balanceOfW3, cacheControl: { maxBlocks: 0 } }),
    '',
    '# 6. The devnet itself: mine blocks, and the node RPC the gateway uses',
    `curl -s -X POST ${devnet.url}/devnet/mine -H 'Content-Type: application/json' -d '{"blocks":3}'`,
    `curl -s ${devnet.url}/v2/info`,
    '',
    "# 7. One batch: the token's name, symbol, decimals, supply and a balance, all read at one block",
    '#    ("consistent": data.tip says which; each result carries its status, Cache-Status and tip height)',
    curlPost('/contract-calls/batch', {
      calls: [
        ...['get-name', 'get-symbol', 'get-decimals', 'get-total-supply'].map((fn) => ({
          contractAddress: `${D}.demo-token`,
          functionName: fn,
          functionArgs: [],
        })),
        { contractAddress: `${D}.demo-token`, ...balanceOfW3, functionName: 'get-balance' },
      ],
      tip: 'consistent',
    }),
    '',
    "# 8. The node's own endpoints, from the cache (stacks.js: fetchCallReadOnlyFunction with client: { baseUrl: gateway })",
    '#    Run it twice: the same bytes as the node, then Cache-Status: clarity-cache; hit',
    curlPostHeaders(`/v2/contracts/call-read/${D}/demo-token/get-balance`, {
      sender: W1,
      arguments: [cvToHex(Cl.principal(W3))],
    }),
    `curl -s ${gatewayUrl}/v2/contracts/interface/${D}/demo-token`,
    '',
    '# 9. Watch a read: its value at once, then a new one in each block that changes it (README "Watch a read")',
    "#    Subscribe (the answer's id is the stream's credential) ...",
    `ID=$(curl -s -X POST ${gatewayUrl}/subscriptions -H 'Content-Type: application/json' -d '${JSON.stringify(
      {
        reads: [{ contractAddress: `${D}.demo-token`, functionName: 'get-balance', ...balanceOfW3 }],
      },
    )}' | sed -E 's/.*"id":"([^"]+)".*/\\1/')`,
    '#    ... open its stream in one terminal (Ctrl-C ends it) ...',
    `curl -si -N ${gatewayUrl}/subscriptions/$ID/events`,
    '#    ... and in another, run the transfer of step 4 again: the stream shows the new balance at once',
    `curl -s -X POST ${devnet.url}/devnet/call-public -H 'Content-Type: application/json' -d '${JSON.stringify(transfer)}'`,
    '',
    'Ctrl-C stops the gateway and the devnet.',
    '',
  ];
  // `-i` on every call to the gateway, so that Cache-Status and Age show.
  const shown = lines.map((l) => l.replace(`curl -s ${gatewayUrl}`, `curl -si ${gatewayUrl}`));
  console.log(shown.join('\n'));
  console.log(
    `Explorer (call any read-only function from a browser): ${gatewayUrl}/explorer\n` +
      `Cache: ${storeDescription()}\n` +
      `Admin token (ADMIN_TOKEN): ${adminToken}\n` +
      `Event observer: the devnet posts every block to 127.0.0.1:${observerPort}\n`,
  );
}

/** Where the gateway keeps the cache, as the service decides it (the defaults of src/config/variables.ts). */
function storeDescription(): string {
  const store = process.env.CACHE_STORE ?? 'sqlite';
  // The cache outlives the demo while the devnet starts from its genesis each time: answers
  // cached in an earlier run (balances after its transfers) would be served again.
  if (store === 'sqlite')
    return ownDataDir
      ? `SQLite in ${dataDir} (the demo's own, emptied at each start; the service's ./data is untouched)`
      : `SQLite in ${dataDir} (DATA_DIR), kept across runs while the devnet starts afresh`;
  return store;
}

async function main(): Promise<void> {
  await ensureFree('DEVNET_PORT', devnetPort, process.env.DEVNET_HOST ?? '127.0.0.1');
  await ensureFree('PORT', gatewayPort, gatewayHost);
  await ensureFree('EVENT_OBSERVER_PORT', observerPort, '127.0.0.1');
  if (ownDataDir) rmSync(dataDir, { recursive: true, force: true });
  console.log(`demo: starting the devnet on port ${devnetPort} ...`);
  const devnet = await startDevnet({
    port: devnetPort,
    host: process.env.DEVNET_HOST ?? '127.0.0.1',
    log: (line) => console.log(line),
    // The gateway is the devnet's event observer: every block reaches it at once.
    eventObserverUrls: [`http://127.0.0.1:${observerPort}`],
  });

  console.log(`demo: starting the gateway on ${gatewayHost}:${gatewayPort} ...`);
  const gateway = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: new URL('../', import.meta.url),
    env: {
      ...process.env,
      PORT: String(gatewayPort),
      HOST: gatewayHost,
      STACKS_API_URL_MAINNET: devnet.url,
      STACKS_API_URL_TESTNET: devnet.url,
      // Resolved here: the gateway runs from the repository root, the user from anywhere.
      DATA_DIR: dataDir,
      ADMIN_TOKEN: adminToken,
      // The devnet is local and free: a budget nobody clicking around can exhaust.
      UPSTREAM_RATE_LIMIT_PER_MINUTE: process.env.UPSTREAM_RATE_LIMIT_PER_MINUTE ?? '100000',
      EVENT_OBSERVER_PORT: String(observerPort),
      EVENT_OBSERVER_HOST: '127.0.0.1',
      EVENT_OBSERVER_NETWORK: 'testnet',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });

  let stopping = false;
  const stop = async (reason: string, code: number): Promise<never> => {
    if (!stopping) {
      stopping = true;
      console.log(`demo: ${reason}; stopping the gateway and the devnet`);
      if (gateway.exitCode === null && gateway.signalCode === null) {
        const exited = once(gateway, 'exit');
        gateway.kill('SIGTERM');
        const timer = setTimeout(() => gateway.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
      await devnet.close();
    }
    process.exit(code);
  };
  process.on('SIGINT', () => void stop('SIGINT', 0));
  process.on('SIGTERM', () => void stop('SIGTERM', 0));
  gateway.on('exit', (exitCode, signal) => {
    if (!stopping) void stop(`the gateway exited (${exitCode ?? signal})`, exitCode || 1);
  });

  try {
    await waitForGateway(gateway, 60_000);
  } catch (error) {
    await stop(error instanceof Error ? error.message : String(error), 1);
  }
  await printGuide(devnet);
}

main().catch((error: unknown) => fail(error instanceof Error ? error.message : String(error)));
