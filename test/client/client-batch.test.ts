/**
 * client.batch() against the gateway's POST /contract-calls/batch (docs/batch.md),
 * over real HTTP in front of the fake node.
 */
import { Cl } from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, ValidationError } from '../../client/src/index.js';
import { type FakeNode, startFakeNode } from '../support/fake-node.js';
import { hex, MAINNET_ADDR, SAMPLE_ABI } from '../support/fixtures.js';
import { type RunningGateway, startGateway, testEnv } from '../support/gateway.js';

let node: FakeNode;
let gw: RunningGateway;
const DEMO = `${MAINNET_ADDR}.demo`;

beforeAll(async () => {
  node = await startFakeNode();
  node.setAbi(MAINNET_ADDR, 'demo', SAMPLE_ABI);
  node.setReadOnly(MAINNET_ADDR, 'demo', 'get-balance', { okay: true, result: hex(Cl.ok(Cl.uint(1000))) });
  node.setReadOnly(MAINNET_ADDR, 'demo', 'fails', { okay: true, result: hex(Cl.error(Cl.uint(7))) });
  gw = await startGateway(testEnv(node.url, { UPSTREAM_RETRIES: '0' }));
});

afterAll(async () => {
  await gw?.close();
  await node?.close();
});

describe('client.batch', () => {
  it('returns one envelope per call, in order; one failure does not fail the others', async () => {
    const client = createClient({ baseUrl: gw.url });
    const result = await client.batch([
      { contractAddress: DEMO, functionName: 'get-balance', functionArgs: [Cl.principal(MAINNET_ADDR)] },
      { contractAddress: MAINNET_ADDR, contractName: 'demo', functionName: 'fails' },
      { contractAddress: DEMO, functionName: 'get-balance', functionArgs: [Cl.principal(MAINNET_ADDR)] },
    ]);
    expect(result.results).toHaveLength(3);
    expect(result.results[0]).toMatchObject({ success: true, data: '1000', meta: { status: 200 } });
    expect(result.results[1]).toMatchObject({
      success: false,
      error: { code: 'CONTRACT_ERROR' },
      meta: { status: 422 },
    });
    expect(result.results[2]).toMatchObject({ success: true, data: '1000', meta: { status: 200 } });
    // Identical calls in one batch share one upstream call.
    expect(node.count('call-read')).toBe(2);
  });

  it('pins every call to one block with tip "consistent"', async () => {
    const client = createClient({ baseUrl: gw.url });
    const result = await client.batch(
      [{ contractAddress: DEMO, functionName: 'get-balance', functionArgs: [Cl.principal(MAINNET_ADDR)] }],
      { tip: 'consistent' },
    );
    expect(result.tip).toEqual({ height: expect.any(Number), indexBlockHash: expect.any(String) });
    expect(result.results[0]).toMatchObject({ success: true, data: '1000' });
  });

  it('throws ValidationError for an empty batch', async () => {
    const client = createClient({ baseUrl: gw.url });
    const err = await client.batch([]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect(err).toMatchObject({ status: 400 });
  });
});
