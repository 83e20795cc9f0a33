/**
 * Tip knowledge shared by the instances of one Redis (CACHE_STORE=redis): what one instance
 * learns (a header, a /v2/info) is written to the shared store under `chain:tip:{network}`,
 * and an instance whose own knowledge is too old reads it there before asking the node. When
 * nobody knows a recent enough tip, one instance of all asks (the cross-instance coalescer
 * that misses use), and the others take its answer.
 */
import type { Network } from '../network.js';
import type { ChainTip } from './tips.js';

/**
 * What shared tips need of the shared store (a port: the chain does not depend on the cache;
 * the Redis store fits it): a text under a key.
 */
export interface SharedTipStore {
  get(key: string): Promise<{ readonly value: string } | undefined>;
  set(key: string, value: string): Promise<void>;
}

/** One instance of all runs `load`; the others take what it wrote (the cross-instance coalescer fits it). */
export interface OneOfAll {
  run(
    key: string,
    task: {
      load(): Promise<string>;
      read(): Promise<{ readonly value: string } | undefined>;
      readonly stores: boolean;
      readonly fresh: boolean;
    },
  ): Promise<{ readonly value: string; readonly loadedHere: boolean }>;
}

export interface SharedTips {
  /** Share a tip this instance learned (best effort, never throws, never waits). */
  publish(network: Network, tip: ChainTip): void;
  /**
   * A tip learned (by any instance) at or after `since` (and with its index block hash when
   * needHash), or else the tip that `fetch` (run by exactly one of the instances asking at
   * once) describes. Throws fetch's error when the fetching instance failed.
   */
  refresh(
    network: Network,
    since: number,
    needHash: boolean,
    fetch: () => Promise<ChainTip>,
  ): Promise<{ tip: ChainTip; fetchedHere: boolean } | undefined>;
}

/** The shared store's key of a network's tip. */
function tipKey(network: Network): string {
  return `chain:tip:${network}`;
}

interface Encoded {
  h: number;
  b?: string;
  t: number;
}

function encode(tip: ChainTip): string {
  const encoded: Encoded = { h: tip.height, t: tip.learnedAt };
  if (tip.indexBlockHash !== undefined) encoded.b = tip.indexBlockHash;
  return JSON.stringify(encoded);
}

function decode(raw: string | undefined): ChainTip | undefined {
  if (raw === undefined) return undefined;
  try {
    const e = JSON.parse(raw) as Partial<Encoded>;
    if (!Number.isSafeInteger(e.h) || typeof e.t !== 'number') return undefined;
    return {
      height: e.h!,
      learnedAt: e.t,
      indexBlockHash: typeof e.b === 'string' && /^[0-9a-f]{64}$/.test(e.b) ? e.b : undefined,
    };
  } catch {
    return undefined;
  }
}

export class StoreSharedTips implements SharedTips {
  constructor(
    /** The shared store itself (not a hot tier in front of it: other instances write here). */
    private readonly store: SharedTipStore,
    private readonly coalescer: OneOfAll,
    private readonly onError: (err: unknown) => void = () => {},
  ) {}

  publish(network: Network, tip: ChainTip): void {
    void (async () => {
      const key = tipKey(network);
      const stored = decode((await this.store.get(key))?.value);
      // Heights only move forward here too (a race can still let a lower one land; readers ignore it).
      if (stored !== undefined && stored.height > tip.height) return;
      await this.store.set(key, encode(tip));
    })().catch(this.onError);
  }

  async refresh(
    network: Network,
    since: number,
    needHash: boolean,
    fetch: () => Promise<ChainTip>,
  ): Promise<{ tip: ChainTip; fetchedHere: boolean } | undefined> {
    const key = tipKey(network);
    const read = async () => {
      try {
        return await this.store.get(key);
      } catch (err) {
        this.onError(err);
        return undefined;
      }
    };
    const known = decode((await read())?.value);
    if (
      known !== undefined &&
      known.learnedAt >= since &&
      (!needHash || known.indexBlockHash !== undefined)
    ) {
      return { tip: known, fetchedHere: false };
    }
    const shared = await this.coalescer.run(key, {
      load: async () => {
        const value = encode(await fetch());
        try {
          await this.store.set(key, value);
        } catch (err) {
          this.onError(err);
        }
        return value;
      },
      read,
      stores: true,
      fresh: true,
    });
    const tip = decode(shared.value);
    return tip === undefined ? undefined : { tip, fetchedHere: shared.loadedHere };
  }
}
