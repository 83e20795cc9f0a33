/**
 * an ABI 404 (unknown contract) is remembered
 * for CACHE_NEGATIVE_TTL_S, so repeated lookups of a missing contract, and read-only calls to
 * it, cost one upstream request per window. The remembered answer is the same 404 envelope,
 * with a Cache-Status hit, and never a known contract.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unknownAbiKey } from '../../../src/cache/keys.js';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { MAINNET_ADDR, SAMPLE_ABI } from '../../support/fixtures.js';
import { type RunningGateway, request, startGateway, testEnv } from '../../support/gateway.js';

let node: FakeNode;
let gw: RunningGateway;
const TOKEN = 'negative-cache-admin';

beforeAll(async () => {
  node = await startFakeNode();
  // Default CACHE_NEGATIVE_TTL_S (30); a small budget, as in the defect report.
  gw = await startGateway(
    testEnv(node.url, {
      UPSTREAM_RATE_LIMIT_PER_MINUTE: '20',
      UPSTREAM_QUEUE_TIMEOUT_MS: '0',
      ADMIN_TOKEN: TOKEN,
    }),
  );
});

afterAll(async () => {
  await gw?.close();
  await node?.close();
});

const abiUrl = (contract: string) => `${gw.url}/contract-calls/abi/${MAINNET_ADDR}/${contract}`;
const roUrl = (contract: string) => `${gw.url}/contract-calls/read-only/${MAINNET_ADDR}/${contract}/get-info`;

describe('unknown contracts (CACHE_NEGATIVE_TTL_S)', () => {
  it('25 lookups of a missing contract cost one upstream request and leave the budget to others', async () => {
    node.resetStats();
    const first = await request(abiUrl('missing'));
    expect(first.status).toBe(404);
    expect(first.body.error.code).toBe('UPSTREAM_API_ERROR');
    expect(first.headers.get('cache-status')).toBe('clarity-cache; fwd=miss; stored; ttl=30');

    for (let i = 0; i < 24; i++) {
      const res =
        i % 2 === 0
          ? await request(abiUrl('missing'))
          : await request(roUrl('missing'), { body: { functionArgs: [] } });
      expect(res.status).toBe(404);
      expect(res.body.success).toBe(false);
      // The same envelope as the upstream's answer (only the error id differs).
      expect(res.body.error.code).toBe(first.body.error.code);
      expect(res.body.error.message).toBe(first.body.error.message);
      expect(res.body.error.details).toEqual(first.body.error.details);
      expect(res.headers.get('cache-status')).toMatch(/^clarity-cache; hit; ttl=(29|30)$/);
      expect(res.headers.get('age')).toMatch(/^\d+$/);
    }
    expect(node.count('interface')).toBe(1);

    // The budget (20 a minute) is still there for a contract that exists.
    node.setAbi(MAINNET_ADDR, 'present', SAMPLE_ABI);
    const ok = await request(abiUrl('present'));
    expect(ok.status).toBe(200);
  });

  it('remembers the 404 for CACHE_NEGATIVE_TTL_S only, and never lists it as a known contract', async () => {
    await request(abiUrl('missing-two'));
    const entry = await gw.gateway.store.get(unknownAbiKey('mainnet', MAINNET_ADDR, 'missing-two'));
    expect(entry).toBeDefined();
    expect(entry!.expiresAt! - entry!.storedAt).toBe(30_000);

    const known = await request(`${gw.url}/contract-calls/known-contracts`);
    expect(known.status).toBe(200);
    const names = known.body.data.contracts.cached.map((c: { contractName: string }) => c.contractName);
    expect(names).not.toContain('missing');
    expect(names).not.toContain('missing-two');
    expect(known.body.data.stats.total).toBe(names.length);
  });

  it('an admin invalidation of the contract (with its ABI) forgets the 404 at once', async () => {
    await request(abiUrl('deployed-later'));
    node.setAbi(MAINNET_ADDR, 'deployed-later', SAMPLE_ABI);
    expect((await request(abiUrl('deployed-later'))).status).toBe(404);
    const del = await request(`${gw.url}/admin/cache/contracts/${MAINNET_ADDR}/deployed-later?abi=true`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(del.status).toBe(200);
    const res = await request(abiUrl('deployed-later'));
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual(SAMPLE_ABI);
  });
});

describe('CACHE_NEGATIVE_TTL_S=0', () => {
  it('asks upstream on every lookup', async () => {
    const off = await startGateway(testEnv(node.url, { CACHE_NEGATIVE_TTL_S: '0' }));
    try {
      node.resetStats();
      for (let i = 0; i < 3; i++) {
        const res = await request(`${off.url}/contract-calls/abi/${MAINNET_ADDR}/nowhere`);
        expect(res.status).toBe(404);
        expect(res.headers.get('cache-status')).toBeNull();
      }
      expect(node.count('interface')).toBe(3);
    } finally {
      await off.close();
    }
  });
});
