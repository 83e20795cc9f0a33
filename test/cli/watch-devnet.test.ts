/**
 * `clarity-cache watch` against the real gateway (in-process, on a real socket) reading the
 * devnet (the real Clarity VM), whose event observer it is: as a process, a JSON line for the
 * value at the tip and one for the block that changed it, then Ctrl-C ends it with status 0;
 * in-process, a read that fails prints an error record, and a wrong command line exits 2
 * before any request.
 */
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway } from '../../src/app.js';
import { run } from '../../src/cli/run.js';
import { loadConfig } from '../../src/config/index.js';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { type RunningGateway, testEnv } from '../support/gateway.js';
import { freePort, spawnNode } from '../support/process.js';
import { transferApplied } from '../support/watch-helpers.js';

let devnet: Devnet;
let gw: RunningGateway;
let gatewayRequests = 0;

beforeAll(async () => {
  const observerPort = await freePort();
  devnet = await startDevnet({ port: 0, eventObserverUrls: [`http://127.0.0.1:${observerPort}`] });
  const gateway = await createGateway(
    loadConfig(
      testEnv(devnet.url, {
        EVENT_OBSERVER_PORT: String(observerPort),
        EVENT_OBSERVER_NETWORK: 'testnet',
        CHAIN_TIP_MAX_AGE_MS: '60000',
        UPSTREAM_TIMEOUT_MS: '30000',
      }),
    ),
    { contractSource: (contractId) => readFile(`contracts/${contractId.split('.')[1]}.clar`, 'utf8') },
  );
  // Every request the gateway receives is counted: a refused command line must cost none.
  gateway.app.addHook('onRequest', async () => {
    gatewayRequests++;
  });
  const url = await gateway.app.listen({ port: 0, host: '127.0.0.1' });
  gw = { url, gateway, close: () => gateway.close() };
}, 90_000);

afterAll(async () => {
  await gw?.close();
  await devnet?.close();
});

/** The lines written so far, once there are at least `n`. */
async function lines(output: () => string, n: number): Promise<string[]> {
  await expect.poll(() => output().split('\n').length - 1, { timeout: 20_000 }).toBeGreaterThanOrEqual(n);
  return output().split('\n').slice(0, -1);
}

describe('clarity-cache watch against the gateway on the devnet', () => {
  it('prints the value at the tip, then a line for the block that changed it; Ctrl-C exits 0', async () => {
    const w2 = devnet.accounts.wallet_2;
    let stdout = '';
    const cli = spawnNode([
      '--import',
      'tsx',
      'src/cli/main.ts',
      'watch',
      `${devnet.deployer}.demo-token`,
      'get-balance',
      `'${w2}`,
      '--url',
      gw.url,
    ]);
    cli.child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
    });
    const [first] = await lines(() => stdout, 1);
    const before = JSON.parse(first!);
    expect(before).toEqual({
      tipHeight: devnet.tipHeight(),
      indexBlockHash: expect.stringMatching(/^[0-9a-f]{64}$/),
      value: expect.stringMatching(/^\d+$/),
    });

    await transferApplied(devnet, gw, 25, w2);
    const [, second] = await lines(() => stdout, 2);
    expect(JSON.parse(second!)).toEqual({
      tipHeight: devnet.tipHeight(),
      indexBlockHash: expect.stringMatching(/^[0-9a-f]{64}$/),
      value: (BigInt(before.value) + 25n).toString(),
    });

    cli.child.kill('SIGINT');
    const done = await cli.done;
    expect(done.stderr).toBe('');
    expect(done.code).toBe(0);
    expect(done.stdout.trim().split('\n')).toHaveLength(2);
  }, 60_000);

  it('prints an error record for a read that fails at the block, and ends with 0 when interrupted', async () => {
    let stdout = '';
    let stderr = '';
    const controller = new AbortController();
    const status = run(
      ['watch', `${devnet.deployer}.demo-dao`, 'get-member', `'${devnet.accounts.wallet_3}`],
      {
        stdout: (t) => {
          stdout += t;
        },
        stderr: (t) => {
          stderr += t;
        },
        env: { CLARITY_CACHE_URL: gw.url },
        interrupts: () => controller.signal,
      },
    );
    const [line] = await lines(() => stdout, 1);
    expect(JSON.parse(line!)).toMatchObject({
      tipHeight: devnet.tipHeight(),
      error: { code: 'CONTRACT_ERROR', details: { value: '404' } },
    });
    controller.abort();
    expect(await status).toBe(0);
    expect(stderr).toBe('');
  }, 60_000);

  it('refuses a wrong command line with status 2 before any request', async () => {
    const token = `${devnet.deployer}.demo-token`;
    const before = gatewayRequests;
    for (const [argv, message] of [
      [['watch', token], 'expected: clarity-cache watch <addr.name> <function> [args...]'],
      [['watch', token, 'get-balance', '(list u1'], 'argument 1: unclosed "("'],
      [['watch', token, 'get-balance', `'${devnet.deployer}`, '--fresh'], '--fresh is for call'],
      [['watch', 'nodot', 'get-balance'], 'INVALID_CONTRACT_ADDRESS'],
    ] as const) {
      let stderr = '';
      const code = await run([...argv, '--url', gw.url], {
        stdout: () => {},
        stderr: (t) => {
          stderr += t;
        },
        env: {},
      });
      expect(code, argv.join(' ')).toBe(2);
      expect(stderr).toContain(message);
    }
    expect(gatewayRequests).toBe(before);
    // A literal the ABI refuses: the ABI is read, the subscription never asked for.
    let stderr = '';
    const code = await run(['watch', token, 'get-balance', 'u5', '--url', gw.url], {
      stdout: () => {},
      stderr: (t) => {
        stderr += t;
      },
      env: {},
    });
    expect(code).toBe(2);
    expect(stderr).toContain(
      'INVALID_ARGUMENTS: argument 1 (who: principal): expected principal, got a uint',
    );
  });
});
