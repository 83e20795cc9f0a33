/**
 * ChainTracker with an injected clock and a node that only answers /v2/info (the rest of the
 * node API is never used by the tracker): coalescing, refresh ahead, failure, currentBlock.
 */
import { describe, expect, it } from 'vitest';
import { ChainTracker } from '../../../src/chain/tracker.js';
import { blockIdentity } from '../../../src/devnet/blocks.js';
import { GatewayError } from '../../../src/errors.js';
import type { NodeEndpoint } from '../../../src/upstream/endpoints.js';
import type { NodeApi, NodeCall } from '../../../src/upstream/node-api.js';

function setup(maxAgeMs = 1_000) {
  let now = 1_000_000;
  let height = 50;
  let failing = false;
  const calls: NodeCall[] = [];
  const pending: (() => void)[] = [];
  let hold = false;
  const node = {
    send: (async (endpoint: NodeEndpoint, call: NodeCall) => {
      expect(endpoint.name).toBe('info');
      calls.push(call);
      if (hold) await new Promise<void>((resolve) => pending.push(resolve));
      if (failing) throw new GatewayError('UPSTREAM_API_ERROR', 'down', { retryable: true });
      const id = blockIdentity(height, height + 800_000);
      return {
        info: {
          stacks_tip_height: height,
          stacks_tip: id.blockHash,
          stacks_tip_consensus_hash: id.consensusHash,
        },
        upstream: 'mainnet',
        tipHeight: height,
      };
    }) as NodeApi['send'],
  };
  const refreshes: string[] = [];
  const tracker = new ChainTracker({
    node,
    maxAgeMs,
    now: () => now,
    onRefresh: (_n, result) => refreshes.push(result),
  });
  return {
    tracker,
    calls,
    refreshes,
    advance: (ms: number) => {
      now += ms;
    },
    setHeight: (h: number) => {
      height = h;
    },
    fail: (f: boolean) => {
      failing = f;
    },
    hold: () => {
      hold = true;
    },
    release: () => {
      hold = false;
      for (const go of pending.splice(0)) go();
    },
  };
}

describe('ChainTracker', () => {
  it('shares one /v2/info among concurrent requests and asks it for one attempt, one more elsewhere', async () => {
    const t = setup();
    t.hold();
    const heights = Array.from({ length: 50 }, () => t.tracker.height('mainnet'));
    expect(t.calls).toHaveLength(1);
    t.release();
    expect(await Promise.all(heights)).toEqual(Array(50).fill(50));
    expect(t.calls).toEqual([{ network: 'mainnet', read: 'info', maxAttempts: 2, elsewhereOnly: true }]);
    expect(t.refreshes).toEqual(['ok']);
  });

  it('answers from memory within the max age, refreshing ahead late in it', async () => {
    const t = setup(1_000);
    await t.tracker.height('mainnet');
    t.tracker.observe('mainnet', 60);
    expect(t.tracker.height('mainnet')).toBe(60);
    expect(t.calls).toHaveLength(1);
    t.advance(800);
    expect(t.tracker.height('mainnet')).toBe(60);
    expect(t.calls).toHaveLength(1);
    t.advance(1);
    // Still answered from memory, at once; the refresh runs behind.
    expect(t.tracker.height('mainnet')).toBe(60);
    expect(t.calls).toHaveLength(2);
    await expect.poll(() => t.tracker.refreshing).toBe(0);
    // The node said 50 (a lagging answer): knowledge never goes back.
    expect(t.tracker.known('mainnet')?.height).toBe(60);
  });

  it('waits for a refresh past the max age, and gives undefined when it fails', async () => {
    const t = setup(1_000);
    await t.tracker.height('mainnet');
    t.tracker.observe('mainnet', 60);
    t.advance(1_001);
    t.fail(true);
    await expect(t.tracker.height('mainnet')).resolves.toBeUndefined();
    expect(t.refreshes).toEqual(['ok', 'failed']);
    t.fail(false);
    t.setHeight(70);
    await expect(t.tracker.height('mainnet')).resolves.toBe(70);
  });

  it('believes no header before its first /v2/info, whose tip is the median of up to three upstreams', async () => {
    const asked: number[] = [];
    const tracker = new ChainTracker({
      node: {
        send: () => Promise.reject(new Error('the first tip takes a round')),
        async infoRound(_network, most) {
          asked.push(most);
          // One upstream claims a height nobody could reach; the other two are honest.
          return [100, 9_000_000, 102].map((h) => {
            const id = blockIdentity(h, h + 800_000);
            return {
              stacks_tip_height: h,
              stacks_tip: id.blockHash,
              stacks_tip_consensus_hash: id.consensusHash,
            };
          });
        },
      },
      maxAgeMs: 1_000,
    });
    tracker.observe('mainnet', 9_000_000);
    expect(tracker.known('mainnet')).toBeUndefined();
    expect(await tracker.height('mainnet')).toBe(102);
    expect(asked).toEqual([3]);
    // From then on, a header is believed within CHAIN_TIP_MAX_ADVANCE; one far above is not.
    tracker.observe('mainnet', 104);
    tracker.observe('mainnet', 9_000_000);
    expect(tracker.known('mainnet')?.height).toBe(104);
  });

  it('dates heights by when they were first learned', async () => {
    const t = setup();
    t.setHeight(10);
    await t.tracker.height('mainnet');
    const at10 = 1_000_000;
    t.advance(500);
    t.tracker.observe('mainnet', 13);
    expect(t.tracker.firstLearnedAt('mainnet', 10)).toBe(at10);
    expect(t.tracker.firstLearnedAt('mainnet', 11)).toBe(at10 + 500);
    expect(t.tracker.firstLearnedAt('mainnet', 13)).toBe(at10 + 500);
    expect(t.tracker.firstLearnedAt('mainnet', 14)).toBeUndefined();
    expect(t.tracker.firstLearnedAt('testnet', 1)).toBeUndefined();
  });

  it('gives currentBlock from /v2/info knowledge, and learns the heights of blocks', async () => {
    const t = setup();
    // A header alone has no hash: currentBlock asks /v2/info.
    t.tracker.observe('mainnet', 50);
    const block = await t.tracker.currentBlock('mainnet');
    expect(block).toEqual({ height: 50, indexBlockHash: blockIdentity(50, 800_050).indexBlockHash });
    expect(t.tracker.heightOfBlock(block.indexBlockHash)).toBe(50);
    await t.tracker.currentBlock('mainnet');
    expect(t.calls).toHaveLength(1);
    t.fail(true);
    t.advance(2_000);
    await expect(t.tracker.currentBlock('mainnet')).rejects.toMatchObject({ code: 'UPSTREAM_API_ERROR' });
  });
});
