/**
 * client.watch() against the real gateway (in-process, on a real socket, API keys required)
 * reading the devnet (the real Clarity VM), whose event observer it is: the values at the tip,
 * a block's changed read, the subscription deleted on close(), and a later watch resumed with
 * lastEventId (only what changed meanwhile; a reset for a block the gateway does not know),
 * and a watch that lives through a restart of the gateway, which forgets its subscriptions
 * (memory store): it reconnects, subscribes again and goes on from the block it had.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Cl } from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../client/src/index.js';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { type RunningGateway, request, startGateway, testEnv } from '../support/gateway.js';
import { freePort } from '../support/process.js';
import { transferApplied, watchRecorder } from '../support/watch-helpers.js';

const KEY = 'k-watcher-0123456789abcdef';
let devnet: Devnet;
let gw: RunningGateway;
let keysDir: string;
let gatewayEnv: Record<string, string>;

/** The gateway, the devnet's event observer; on the port of the previous one when there was one. */
function startOurGateway(port = '0'): Promise<RunningGateway> {
  return startGateway(
    { ...gatewayEnv, PORT: port },
    { contractSource: (contractId) => readFile(`contracts/${contractId.split('.')[1]}.clar`, 'utf8') },
  );
}

beforeAll(async () => {
  keysDir = mkdtempSync(path.join(os.tmpdir(), 'clarity-cache-watch-client-'));
  const keysFile = path.join(keysDir, 'keys.json');
  writeFileSync(keysFile, JSON.stringify([{ name: 'watcher', key: KEY }]));
  const observerPort = await freePort();
  devnet = await startDevnet({ port: 0, eventObserverUrls: [`http://127.0.0.1:${observerPort}`] });
  gatewayEnv = testEnv(devnet.url, {
    EVENT_OBSERVER_PORT: String(observerPort),
    EVENT_OBSERVER_NETWORK: 'testnet',
    CHAIN_TIP_MAX_AGE_MS: '60000',
    UPSTREAM_TIMEOUT_MS: '30000',
    API_KEYS_FILE: keysFile,
    API_KEYS_REQUIRED: 'true',
  });
  gw = await startOurGateway();
}, 90_000);

afterAll(async () => {
  await gw?.close();
  await devnet?.close();
  if (keysDir !== undefined) rmSync(keysDir, { recursive: true, force: true });
});

const balanceRead = (who: string) => ({
  contractAddress: `${devnet.deployer}.demo-token`,
  functionName: 'get-balance',
  functionArgs: [Cl.principal(who)],
});

describe('client.watch() against the gateway on the devnet', () => {
  it('delivers every read at the tip, then the read a block changed; close() deletes the subscription', async () => {
    const w1 = devnet.accounts.wallet_1;
    const w2 = devnet.accounts.wallet_2;
    const client = createClient({ baseUrl: gw.url, headers: { 'x-api-key': KEY } });
    const before = {
      w1: await client.readOnly(`${devnet.deployer}.demo-token`, 'get-balance', [Cl.principal(w1)]),
      w2: await client.readOnly(`${devnet.deployer}.demo-token`, 'get-balance', [Cl.principal(w2)]),
    };
    const r = watchRecorder();
    const reconnects: string[] = [];
    const handle = await client.watch([balanceRead(w1), balanceRead(w2)], {
      ...r.options,
      onReconnect: (e) => reconnects.push(`${e.cause.code}: ${e.cause.message}`),
    });
    await expect.poll(() => r.values.length).toBe(1);
    const first = r.values[0]!;
    expect(first.tipHeight).toBe(devnet.tipHeight());
    expect(first.id).toBe(`${first.tipHeight}:${first.indexBlockHash}`);
    expect(first.values).toEqual([
      { index: 0, value: before.w1, raw: expect.stringMatching(/^0x/) },
      { index: 1, value: before.w2, raw: expect.stringMatching(/^0x/) },
    ]);

    await transferApplied(devnet, gw, 11, w1);
    await expect.poll(() => r.values.length).toBe(2);
    const changed = r.values[1]!;
    expect(changed.tipHeight).toBe(devnet.tipHeight());
    const now = await client.readOnly(`${devnet.deployer}.demo-token`, 'get-balance', [Cl.principal(w1)], {
      cacheControl: { bustCache: true },
    });
    expect(now).not.toEqual(before.w1);
    // The changed read; the gateway may send an unchanged one again (it prefers a repeat to a
    // miss when it cannot tell), never with another value.
    expect(changed.values, JSON.stringify(reconnects)).toContainEqual({
      index: 0,
      value: now,
      raw: expect.stringMatching(/^0x/),
    });
    for (const v of changed.values.filter((x) => x.index !== 0)) expect(v).toEqual(first.values[v.index]);
    expect(handle.lastEventId).toBe(changed.id);

    const id = handle.id;
    await handle.close();
    expect(r.errors).toEqual([]);
    const gone = await request(`${gw.url}/subscriptions/${id}/events`, { headers: { 'x-api-key': KEY } });
    expect(gone.status).toBe(404);
    expect(gone.body.error.code).toBe('NOT_FOUND');
  }, 60_000);

  it('resumes with lastEventId: only the reads changed meanwhile, or a reset and all of them', async () => {
    const w1 = devnet.accounts.wallet_1;
    const w3 = devnet.accounts.wallet_3;
    const client = createClient({ baseUrl: gw.url, headers: { 'x-api-key': KEY } });
    const first = watchRecorder();
    const handle = await client.watch([balanceRead(w1), balanceRead(w3)], first.options);
    await expect.poll(() => first.values.length).toBe(1);
    const resumeFrom = handle.lastEventId!;
    await handle.close();

    // While nobody watches, a block changes wallet_3's balance only.
    await transferApplied(devnet, gw, 5, w3);
    const resumed = watchRecorder();
    const again = await client.watch([balanceRead(w1), balanceRead(w3)], {
      ...resumed.options,
      lastEventId: resumeFrom,
    });
    await expect.poll(() => resumed.values.length).toBe(1);
    expect(resumed.resets).toEqual([]);
    expect(resumed.values[0]!.tipHeight).toBe(devnet.tipHeight());
    expect(resumed.values[0]!.values.map((v) => v.index)).toEqual([1]);
    await again.close();

    // A block the gateway never saw: a reset, then every read.
    const unknown = watchRecorder();
    const fresh = await client.watch([balanceRead(w1), balanceRead(w3)], {
      ...unknown.options,
      lastEventId: `3:${'ab'.repeat(32)}`,
    });
    await expect.poll(() => unknown.values.length).toBe(1);
    expect(unknown.resets).toEqual([{ reason: 'unknown' }]);
    expect(unknown.values[0]!.values.map((v) => v.index)).toEqual([0, 1]);
    await fresh.close();
    expect([...first.errors, ...resumed.errors, ...unknown.errors]).toEqual([]);
  }, 60_000);

  it('lives through a restart of the gateway that forgot the subscription: subscribes again and goes on', async () => {
    const w1 = devnet.accounts.wallet_1;
    const client = createClient({ baseUrl: gw.url, headers: { 'x-api-key': KEY } });
    const r = watchRecorder();
    const handle = await client.watch([balanceRead(w1)], r.options);
    await expect.poll(() => r.values.length).toBe(1);
    const firstId = handle.id;

    await gw.close();
    gw = await startOurGateway(new URL(gw.url).port);
    await transferApplied(devnet, gw, 3, w1);
    await expect.poll(() => r.values.length, { timeout: 20_000 }).toBe(2);
    expect(handle.id).not.toBe(firstId);
    expect(r.reconnects.length).toBeGreaterThanOrEqual(1);
    // Resumed from the block it had: the transfer's block, with wallet_1's new balance only.
    const after = r.values[1]!;
    expect(after.tipHeight).toBe(devnet.tipHeight());
    expect(after.values).toEqual([
      {
        index: 0,
        value: await client.readOnly(`${devnet.deployer}.demo-token`, 'get-balance', [Cl.principal(w1)], {
          cacheControl: { bustCache: true },
        }),
        raw: expect.stringMatching(/^0x/),
      },
    ]);
    expect(r.errors).toEqual([]);
    await handle.close();
  }, 60_000);
});
