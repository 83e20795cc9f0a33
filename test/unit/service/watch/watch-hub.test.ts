/**
 * The watch hub's rules (docs/watch.md) with a scripted chain: what each read answers at each
 * block is a table the test writes, and every evaluation is counted. The hub's HTTP side and
 * the real chain are the integration tests' (test/devnet/watch-devnet.test.ts and
 * test/integration/watch/).
 */
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../../src/errors.js';
import type { Network } from '../../../../src/network.js';
import {
  type Evaluation,
  NO_ANSWER,
  type ResetReason,
  type StreamEndCode,
  type StreamSink,
  UNKNOWN_BLOCK,
  type ValuesEvent,
  type WatchBlock,
  type WatchedRead,
} from '../../../../src/service/watch/types.js';
import { WatchHub } from '../../../../src/service/watch/watch-hub.js';

const hash = (height: number, fork = 0): string => (height * 1000 + fork).toString(16).padStart(64, '0');
const block = (height: number, fork = 0, parentFork = fork): WatchBlock => ({
  height,
  indexBlockHash: hash(height, fork),
  parentIndexBlockHash: hash(height - 1, parentFork),
  receivedAt: Date.now(),
});

const read = (name: string): WatchedRead => ({
  request: {
    contractAddress: 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM',
    contractName: 'c',
    functionName: name,
    functionArgs: [],
  },
  key: name,
  contractId: 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM.c',
  functionName: name,
});

type Answer = string | 'transient' | 'unknown' | { error: string };

/** A chain whose answers are `answers(read, block)`; counts every evaluation. */
function scripted(answers: (name: string, b: WatchBlock) => Answer) {
  const evaluations: { name: string; hash: string }[] = [];
  let gate: Promise<void> = Promise.resolve();
  const evaluate = async (r: WatchedRead, b: WatchBlock): Promise<Evaluation> => {
    evaluations.push({ name: r.key, hash: b.indexBlockHash });
    await gate;
    const a = answers(r.key, b);
    if (a === 'transient') return NO_ANSWER;
    if (a === 'unknown') return UNKNOWN_BLOCK;
    if (typeof a === 'object') {
      const error = new GatewayError('CONTRACT_ERROR', a.error);
      return { kind: 'error', error, same: `e${a.error}` };
    }
    return { kind: 'value', raw: a, value: a, same: `v${a}` };
  };
  return {
    evaluations,
    evaluate,
    hold(): () => void {
      let open!: () => void;
      gate = new Promise((r) => {
        open = r;
      });
      return () => open();
    },
  };
}

class Sink implements StreamSink {
  readonly events: (ValuesEvent | { reset: ResetReason } | { end: StreamEndCode })[] = [];
  #waiters: (() => void)[] = [];
  values(event: ValuesEvent): void {
    this.events.push(event);
    for (const w of this.#waiters.splice(0)) w();
  }
  reset(reason: ResetReason): void {
    this.events.push({ reset: reason });
  }
  end(code: StreamEndCode): void {
    this.events.push({ end: code });
  }
  close(): void {}
  /** Resolves once `n` values events were received. */
  async valuesCount(n: number): Promise<void> {
    while (this.values_().length < n) await new Promise<void>((r) => this.#waiters.push(r));
  }
  values_(): ValuesEvent[] {
    return this.events.filter((e): e is ValuesEvent => 'block' in e);
  }
  /** [height, {index: raw}] of each values event. */
  summary(): [number, Record<number, unknown>][] {
    return this.values_().map((e) => [
      e.block.height,
      Object.fromEntries(
        e.values.map((v) => [v.index, v.outcome.kind === 'value' ? v.outcome.raw : v.outcome.error.message]),
      ),
    ]);
  }
}

const NET: Network = 'testnet';

function hubOf(
  chain: ReturnType<typeof scripted>,
  opts: {
    current?: WatchBlock;
    observed?: Network;
    unchanged?: (name: string, b: WatchBlock) => boolean;
  } = {},
) {
  let current = opts.current ?? block(10);
  const hub = new WatchHub({
    evaluate: chain.evaluate,
    currentBlock: async () => current,
    observed: (network: Network) => network === opts.observed,
    maxAgeMs: 60_000,
    ...(opts.unchanged === undefined
      ? {}
      : {
          unchanged: (_n: Network, r: WatchedRead, _s: unknown, b: WatchBlock) => opts.unchanged!(r.key, b),
        }),
  });
  return {
    hub,
    setCurrent(b: WatchBlock) {
      current = b;
    },
  };
}

/** Resolves when the hub has no work left (its evaluations all answered). */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
}

describe('the watch hub', () => {
  it('evaluates a read once per block whatever the number of streams, and sends only changes', async () => {
    const chain = scripted((name, b) => (name === 'a' ? `a${Math.floor(b.height / 2)}` : `b${b.height}`));
    const { hub } = hubOf(chain);
    const sinks = Array.from({ length: 1000 }, () => new Sink());
    for (const s of sinks) hub.connect(NET, [read('a'), read('b')], s);
    await Promise.all(sinks.map((s) => s.valuesCount(1)));
    expect(chain.evaluations).toHaveLength(2);
    expect(sinks[0]!.summary()).toEqual([[10, { 0: 'a5', 1: 'b10' }]]);

    hub.block(NET, block(11), false);
    await Promise.all(sinks.map((s) => s.valuesCount(2)));
    expect(chain.evaluations).toHaveLength(4);
    // a is unchanged at 11 (a5): only b is sent.
    expect(sinks[999]!.summary()[1]).toEqual([11, { 1: 'b11' }]);
    hub.block(NET, block(12), false);
    await Promise.all(sinks.map((s) => s.valuesCount(3)));
    expect(sinks[0]!.summary()[2]).toEqual([12, { 0: 'a6', 1: 'b12' }]);
    expect(chain.evaluations).toHaveLength(6);
    hub.close();
  });

  it('a read the observer proves unchanged is not evaluated, and nothing is sent', async () => {
    const chain = scripted((name, b) => `${name}${b.height >= 13 ? 1 : 0}`);
    const touched = new Set([13]);
    const { hub } = hubOf(chain, { observed: NET, unchanged: (_n, b) => !touched.has(b.height) });
    const s = new Sink();
    hub.connect(NET, [read('a')], s);
    await s.valuesCount(1);
    hub.block(NET, block(11), true);
    hub.block(NET, block(12), true);
    await settle();
    expect(chain.evaluations).toHaveLength(1);
    hub.block(NET, block(13), true);
    await s.valuesCount(2);
    expect(s.summary()).toEqual([
      [10, { 0: 'a0' }],
      [13, { 0: 'a1' }],
    ]);
    expect(chain.evaluations).toHaveLength(2);
    hub.close();
  });

  it('blocks from elsewhere than the observer are ignored on its network; a lower /v2/info tip is ignored', async () => {
    const chain = scripted((name, b) => `${name}${b.height}`);
    const { hub } = hubOf(chain, { observed: NET, unchanged: () => false });
    const s = new Sink();
    hub.connect(NET, [read('a')], s);
    await s.valuesCount(1);
    hub.block(NET, block(11), false);
    await settle();
    expect(chain.evaluations).toHaveLength(1);

    const other = scripted((name, b) => `${name}${b.height}`);
    const plain = hubOf(other).hub;
    const t = new Sink();
    plain.connect('mainnet', [read('a')], t);
    await t.valuesCount(1);
    plain.block('mainnet', block(9), false);
    await settle();
    expect(other.evaluations).toHaveLength(1);
    hub.close();
    plain.close();
  });

  it('a transient failure sends nothing; the read is evaluated again at the next block', async () => {
    let fail = false;
    const chain = scripted((name, b) => (fail ? 'transient' : `${name}${b.height}`));
    const { hub } = hubOf(chain);
    const s = new Sink();
    hub.connect(NET, [read('a')], s);
    await s.valuesCount(1);
    fail = true;
    hub.block(NET, block(11), false);
    await settle();
    expect(s.values_()).toHaveLength(1);
    fail = false;
    hub.block(NET, block(12), false);
    await s.valuesCount(2);
    expect(s.summary()[1]).toEqual([12, { 0: 'a12' }]);
    hub.close();
  });

  it('errors are answers too: compared by their record, sent once', async () => {
    const chain = scripted((_name, b) => (b.height < 12 ? { error: 'err u1' } : 'ok'));
    const { hub } = hubOf(chain);
    const s = new Sink();
    hub.connect(NET, [read('a')], s);
    await s.valuesCount(1);
    hub.block(NET, block(11), false);
    hub.block(NET, block(12), false);
    await s.valuesCount(2);
    expect(s.summary()).toEqual([
      [10, { 0: 'err u1' }],
      [12, { 0: 'ok' }],
    ]);
    hub.close();
  });

  it('when blocks come faster than evaluations, only the newest is evaluated', async () => {
    const chain = scripted((name, b) => `${name}${b.height}`);
    const { hub } = hubOf(chain);
    const s = new Sink();
    hub.connect(NET, [read('a')], s);
    await s.valuesCount(1);
    const release = chain.hold();
    hub.block(NET, block(11), false);
    await settle();
    hub.block(NET, block(12), false);
    hub.block(NET, block(13), false);
    hub.block(NET, block(14), false);
    release();
    await s.valuesCount(3);
    expect(chain.evaluations.map((e) => e.hash)).toEqual([hash(10), hash(11), hash(14)]);
    expect(s.summary().map(([h]) => h)).toEqual([10, 11, 14]);
    hub.close();
  });

  it('after a reorg, each read whose answer differs from what was sent is sent again', async () => {
    const chain = scripted((name, b) => {
      const forked = b.indexBlockHash === hash(b.height, 1);
      return name === 'a' ? `a${forked ? 'x' : b.height}` : 'b-same';
    });
    const { hub } = hubOf(chain, { observed: NET, unchanged: () => false });
    const s = new Sink();
    hub.connect(NET, [read('a'), read('b')], s);
    await s.valuesCount(1);
    hub.block(NET, block(11), true);
    await s.valuesCount(2);
    hub.block(NET, block(11, 1, 0), true);
    await s.valuesCount(3);
    expect(s.summary()).toEqual([
      [10, { 0: 'a10', 1: 'b-same' }],
      [11, { 0: 'a11' }],
      [11, { 0: 'ax' }],
    ]);
    hub.close();
  });

  it('Last-Event-ID: a canonical block gets the reads that differ; an unknown or replaced one a reset and everything', async () => {
    const chain = scripted((name, b) => (name === 'a' ? `a${b.height}` : 'b-same'));
    const { hub, setCurrent } = hubOf(chain);
    const first = new Sink();
    const c = hub.connect(NET, [read('a'), read('b')], first);
    await first.valuesCount(1);
    hub.block(NET, block(11), false);
    await first.valuesCount(2);
    c.close();
    hub.block(NET, block(12), false);
    setCurrent(block(12));

    const resumed = new Sink();
    hub.connect(NET, [read('a'), read('b')], resumed, `11:${hash(11)}`);
    await resumed.valuesCount(1);
    expect(resumed.events).toHaveLength(1);
    expect(resumed.summary()).toEqual([[12, { 0: 'a12' }]]);

    const unknown = new Sink();
    hub.connect(NET, [read('a'), read('b')], unknown, `7:${hash(7, 9)}`);
    await unknown.valuesCount(1);
    expect(unknown.events[0]).toEqual({ reset: 'unknown' });
    expect(unknown.summary()).toEqual([[12, { 0: 'a12', 1: 'b-same' }]]);

    const garbage = new Sink();
    hub.connect(NET, [read('a')], garbage, 'not an id');
    await garbage.valuesCount(1);
    expect(garbage.events[0]).toEqual({ reset: 'unknown' });

    // 12 is replaced by a block of another fork: an id naming the old 12 is not canonical.
    hub.block(NET, block(12, 1, 0), false);
    await settle();
    setCurrent(block(12, 1, 0));
    const replaced = new Sink();
    hub.connect(NET, [read('b')], replaced, `12:${hash(12)}`);
    await replaced.valuesCount(1);
    expect(replaced.events[0]).toEqual({ reset: 'not-canonical' });

    // The block the client names is the tip: it holds every answer already.
    const current = new Sink();
    hub.connect(NET, [read('a'), read('b')], current, `12:${hash(12, 1)}`);
    await settle();
    expect(current.events).toEqual([]);
    hub.close();
  });

  it('a Last-Event-ID block the node no longer knows is a reset', async () => {
    const chain = scripted((name, b) =>
      b.height === 11 && b.indexBlockHash === hash(11) && name ? 'unknown' : `v${b.height}`,
    );
    const { hub, setCurrent } = hubOf(chain);
    const s = new Sink();
    hub.connect(NET, [read('a')], s);
    await s.valuesCount(1);
    hub.block(NET, block(11), false);
    await settle();
    hub.block(NET, block(12), false);
    setCurrent(block(12));
    await settle();
    const r = new Sink();
    hub.connect(NET, [read('a')], r, `11:${hash(11)}`);
    await r.valuesCount(1);
    expect(r.events[0]).toEqual({ reset: 'unknown' });
    hub.close();
  });

  it('a block that changes many reads evaluates at most 32 at a time, and all of them', async () => {
    let inFlight = 0;
    let most = 0;
    let evaluated = 0;
    const hub = new WatchHub({
      evaluate: async (r, b) => {
        inFlight++;
        most = Math.max(most, inFlight);
        await new Promise((resolve) => setImmediate(resolve));
        inFlight--;
        evaluated++;
        return { kind: 'value', raw: `${r.key}@${b.height}`, value: 0, same: `${r.key}@${b.height}` };
      },
      currentBlock: async () => block(10),
      observed: () => false,
      maxAgeMs: 60_000,
    });
    const s = new Sink();
    hub.connect(
      NET,
      Array.from({ length: 200 }, (_, i) => read(`r${i}`)),
      s,
    );
    await s.valuesCount(1);
    hub.block(NET, block(11), false);
    await s.valuesCount(2);
    expect(s.values_()[1]!.values).toHaveLength(200);
    expect(evaluated).toBe(400);
    expect(most).toBeLessThanOrEqual(32);
    expect(most).toBeGreaterThan(1);
    hub.close();
  });

  it('streams of one read connecting together share one evaluation', async () => {
    const chain = scripted((name, b) => `${name}${b.height}`);
    const { hub } = hubOf(chain);
    const first = new Sink();
    hub.connect(NET, [read('a')], first);
    await first.valuesCount(1);
    const release = chain.hold();
    const sinks = Array.from({ length: 10 }, () => new Sink());
    for (const s of sinks) hub.connect(NET, [read('b'), read('a')], s);
    await settle();
    release();
    await Promise.all(sinks.map((s) => s.valuesCount(1)));
    // a once at connecting (the first stream), b once for the ten.
    expect(chain.evaluations.map((e) => e.name).sort()).toEqual(['a', 'b']);
    expect(sinks[9]!.summary()).toEqual([[10, { 0: 'b10', 1: 'a10' }]]);
    hub.close();
  });

  it('a closed stream releases its reads: they are no longer evaluated', async () => {
    const chain = scripted((name, b) => `${name}${b.height}`);
    const { hub } = hubOf(chain);
    const s = new Sink();
    const c = hub.connect(NET, [read('a')], s);
    await s.valuesCount(1);
    expect(hub.reads).toBe(1);
    expect(hub.streams).toBe(1);
    c.close();
    expect(hub.reads).toBe(0);
    expect(hub.streams).toBe(0);
    hub.block(NET, block(11), false);
    await settle();
    expect(chain.evaluations).toHaveLength(1);
    hub.close();
  });
});
