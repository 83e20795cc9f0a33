import { describe, expect, it } from 'vitest';
import { replayable } from '../../../src/service/replay.js';

const base = { contractAddress: 'SP1', contractName: 'demo', functionName: 'f', functionArgs: [] };

describe('replayable', () => {
  it('accepts the fields whose effect on a hit is known, cacheControl.ttl included', () => {
    expect(replayable(base)).toBe(true);
    expect(
      replayable({
        ...base,
        network: 'mainnet',
        senderAddress: 'SP2',
        strictJsonCompat: false,
        preserveContainers: true,
        cacheControl: { ttl: 60, maxBlocks: 3, staleWhileRevalidate: 10, staleIfError: 10 },
      }),
    ).toBe(true);
  });

  it('refuses any other field, top level or in cacheControl (pinned tips, bust, skip, unknown)', () => {
    expect(replayable({ ...base, tip: 'latest' })).toBe(false);
    for (const cc of [
      { bustCache: true },
      { skipCache: true },
      { ttl: 5, future: 1 },
      { maxBlocks: 1, skipCache: false },
    ]) {
      expect(replayable({ ...base, cacheControl: cc })).toBe(false);
    }
    expect(replayable({ ...base, cacheControl: null })).toBe(false);
  });
});
