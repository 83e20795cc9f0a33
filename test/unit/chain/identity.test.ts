/**
 * The rule of a network's chain identity when its upstreams disagree (docs/upstreams.md,
 * "Chain identity"): the first believed stays, a dissenting upstream is marked, and only every
 * upstream reporting another one changes it, to the one most report (ties to the preferred).
 */
import { describe, expect, it } from 'vitest';
import { ChainIdentities } from '../../../src/chain/identity.js';
import type { Network } from '../../../src/network.js';

const X = `1:${'aa'.repeat(32)}`;
const Y = `2147483648:${'bb'.repeat(32)}`;
const Z = `1:${'cc'.repeat(32)}`;

function identities(upstreams: readonly string[], recorded?: string) {
  const saved: string[] = [];
  const changes: Array<[string, string]> = [];
  const mismatches: Array<[string, string | undefined]> = [];
  const ids = new ChainIdentities({
    record: {
      load: async () => recorded,
      save: async (_network, identity) => {
        saved.push(identity);
      },
    },
    onChange: (_network, from, to) => changes.push([from, to]),
    onMismatch: (_network, upstream, reported) => mismatches.push([upstream, reported]),
  });
  ids.upstreamsOf = (_network: Network) => upstreams;
  return { ids, saved, changes, mismatches };
}

describe('ChainIdentities with several upstreams', () => {
  it('keeps the recorded identity and marks the upstream that reports another, once', async () => {
    const { ids, changes, mismatches } = identities(['m', 'm-2'], X);
    await ids.restore(['mainnet']);
    ids.learn('mainnet', Y, 'm');
    ids.learn('mainnet', X, 'm-2');
    ids.learn('mainnet', Y, 'm');
    expect(ids.current('mainnet')).toBe(X);
    expect(ids.mismatch('mainnet', 'm')).toEqual({ reported: Y, expected: X });
    expect(ids.mismatch('mainnet', 'm-2')).toBeUndefined();
    expect(changes).toEqual([]);
    expect(mismatches).toEqual([['m', Y]]);
    // Set right: no longer marked, said once.
    ids.learn('mainnet', X, 'm');
    expect(ids.mismatch('mainnet', 'm')).toBeUndefined();
    expect(mismatches).toEqual([
      ['m', Y],
      ['m', undefined],
    ]);
  });

  it('does not change while an upstream has not reported, even if every other reports another', async () => {
    const { ids, changes } = identities(['m', 'm-2', 'm-3'], X);
    await ids.restore(['mainnet']);
    ids.learn('mainnet', Y, 'm');
    ids.learn('mainnet', Y, 'm-2');
    expect(ids.current('mainnet')).toBe(X);
    expect(changes).toEqual([]);
  });

  it('changes when every upstream reports another: to the one most report, and records it', async () => {
    const { ids, saved, changes } = identities(['m', 'm-2', 'm-3'], X);
    await ids.restore(['mainnet']);
    ids.learn('mainnet', Z, 'm');
    ids.learn('mainnet', Y, 'm-2');
    ids.learn('mainnet', Y, 'm-3');
    expect(ids.current('mainnet')).toBe(Y);
    expect(changes).toEqual([[X, Y]]);
    expect(saved).toEqual([Y]);
    expect(ids.mismatch('mainnet', 'm')).toEqual({ reported: Z, expected: Y });
    expect(ids.mismatch('mainnet', 'm-2')).toBeUndefined();
  });

  it('breaks a tie in favour of the preferred upstream', async () => {
    const { ids } = identities(['m', 'm-2'], X);
    await ids.restore(['mainnet']);
    ids.learn('mainnet', Z, 'm-2');
    ids.learn('mainnet', Y, 'm');
    expect(ids.current('mainnet')).toBe(Y);
    expect(ids.mismatch('mainnet', 'm-2')).toEqual({ reported: Z, expected: Y });
  });

  it('believes the first report when nothing is recorded', async () => {
    const { ids, saved, changes } = identities(['m', 'm-2']);
    await ids.restore(['mainnet']);
    ids.learn('mainnet', X, 'm');
    ids.learn('mainnet', Y, 'm-2');
    expect(ids.current('mainnet')).toBe(X);
    expect(saved).toEqual([X]);
    expect(changes).toEqual([]);
    expect(ids.mismatch('mainnet', 'm-2')).toEqual({ reported: Y, expected: X });
  });

  it('with one upstream, a new report is a chain change, as it always was', async () => {
    const { ids, changes } = identities(['m'], X);
    await ids.restore(['mainnet']);
    ids.learn('mainnet', Y, 'm');
    expect(ids.current('mainnet')).toBe(Y);
    expect(changes).toEqual([[X, Y]]);
    expect(ids.mismatch('mainnet', 'm')).toBeUndefined();
  });
});
