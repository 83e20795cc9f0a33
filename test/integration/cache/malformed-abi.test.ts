/**
 * an ABI with malformed entries from the node is refused (502 malformed)
 * and not cached; one already in the cache never makes a call answer 500.
 */

import { Cl } from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { abiKey } from '../../../src/cache/keys.js';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { hex, MAINNET_ADDR, SAMPLE_ABI } from '../../support/fixtures.js';
import { type RunningGateway, request, startGateway, testEnv } from '../../support/gateway.js';

let node: FakeNode;
let gw: RunningGateway;

beforeAll(async () => {
  node = await startFakeNode();
  gw = await startGateway(testEnv(node.url));
});

afterAll(async () => {
  await gw?.close();
  await node?.close();
});

const roUrl = (contract: string, fn = 'get-info') =>
  `${gw.url}/contract-calls/read-only/${MAINNET_ADDR}/${contract}/${fn}`;
const abiUrl = (contract: string) => `${gw.url}/contract-calls/abi/${MAINNET_ADDR}/${contract}`;

const MALFORMED: [string, unknown][] = [
  ['functions: [null]', { ...SAMPLE_ABI, functions: [null] }],
  [
    'a function without args',
    { ...SAMPLE_ABI, functions: [{ name: 'get-info', access: 'read_only', outputs: { type: 'bool' } }] },
  ],
  [
    'a function without a name',
    { ...SAMPLE_ABI, functions: [{ access: 'read_only', args: [], outputs: { type: 'bool' } }] },
  ],
  [
    'an argument whose type is null',
    {
      ...SAMPLE_ABI,
      functions: [
        {
          name: 'get-info',
          access: 'read_only',
          args: [{ name: 'x', type: null }],
          outputs: { type: 'bool' },
        },
      ],
    },
  ],
  [
    'a list type without a length',
    {
      ...SAMPLE_ABI,
      functions: [
        {
          name: 'get-info',
          access: 'read_only',
          args: [{ name: 'x', type: { list: { type: 'bool' } } }],
          outputs: { type: 'bool' },
        },
      ],
    },
  ],
];

describe('a malformed ABI from the node', () => {
  it.each(MALFORMED)(
    '%s: read-only call and ABI answer 502 malformed, and nothing is cached',
    async (_, abi) => {
      const contract = `bad-${Math.random().toString(36).slice(2, 8)}`;
      node.setAbi(MAINNET_ADDR, contract, abi);
      node.setReadOnly(MAINNET_ADDR, contract, 'get-info', { okay: true, result: hex(Cl.bool(true)) });
      for (const res of [
        await request(roUrl(contract), { body: { functionArgs: [] } }),
        await request(abiUrl(contract)),
      ]) {
        expect(res.status).toBe(502);
        expect(res.body.success).toBe(false);
        expect(res.body.error.code).toBe('UPSTREAM_API_ERROR');
        expect(res.body.error.details).toMatchObject({ reason: 'malformed', retryable: false });
      }
      expect(await gw.gateway.store.get(abiKey('mainnet', MAINNET_ADDR, contract))).toBeUndefined();

      // Not cached: once the node serves a good ABI, the next call uses it.
      node.setAbi(MAINNET_ADDR, contract, SAMPLE_ABI);
      const ok = await request(roUrl(contract), { body: { functionArgs: [] } });
      expect(ok.status).toBe(200);
      expect(ok.body).toEqual({ success: true, data: true });
    },
  );
});

describe('a malformed ABI already in the cache', () => {
  it.each(MALFORMED)("%s: is replaced by the node's ABI instead of answering 500", async (_, abi) => {
    const contract = `cached-${Math.random().toString(36).slice(2, 8)}`;
    node.setAbi(MAINNET_ADDR, contract, SAMPLE_ABI);
    node.setReadOnly(MAINNET_ADDR, contract, 'get-info', { okay: true, result: hex(Cl.bool(true)) });
    const key = abiKey('mainnet', MAINNET_ADDR, contract);
    await gw.gateway.store.set(key, JSON.stringify(abi));

    const call = await request(roUrl(contract), { body: { functionArgs: [] } });
    expect(call.status).toBe(200);
    expect(call.body).toEqual({ success: true, data: true });
    const doc = await request(abiUrl(contract));
    expect(doc.status).toBe(200);
    expect(doc.body.data).toEqual(SAMPLE_ABI);
    expect(JSON.parse((await gw.gateway.store.get(key))!.value)).toEqual(SAMPLE_ABI);
  });

  it('answers 502 malformed (never 500) when the node still serves a malformed one', async () => {
    const contract = `still-bad-${Math.random().toString(36).slice(2, 8)}`;
    node.setAbi(MAINNET_ADDR, contract, { ...SAMPLE_ABI, functions: [null] });
    await gw.gateway.store.set(
      abiKey('mainnet', MAINNET_ADDR, contract),
      JSON.stringify({ functions: [null] }),
    );
    for (const res of [
      await request(roUrl(contract), { body: { functionArgs: [] } }),
      await request(abiUrl(contract)),
    ]) {
      expect(res.status).toBe(502);
      expect(res.body.error.code).toBe('UPSTREAM_API_ERROR');
      expect(res.body.error.details.reason).toBe('malformed');
    }
  });
});
