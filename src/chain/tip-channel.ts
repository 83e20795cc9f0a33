/**
 * Tips learned from the event observer, announced to every instance on one Redis
 * (docs/events.md): the instance whose node posted the block publishes it on
 * `{prefix}observer:tip`, and every other instance moves its tip at once, with no /v2/info.
 * Once the block is applied, a second message says what it touched, its parent and its
 * deploys, so that the other instances keep a ledger of their own (ledger-mirror.ts) and prove
 * what the block left unchanged as the observer's instance does (docs/watch.md).
 * Best effort: a lost announcement leaves an instance on its usual tip knowledge, and a lost
 * applied block is a gap in its ledger (proofs end, as for a missed block).
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Network } from '../network.js';
import { KEY_PREFIX, type Subscription, subscribe } from '../redis/connection.js';
import type { Touched } from './block-ledger.js';

export interface AnnouncedTip {
  readonly network: Network;
  readonly height: number;
  /** 64 lowercase hex digits. */
  readonly indexBlockHash: string;
}

/** A block the observer applied: what its ledger recorded, for the other instances' ledgers. */
export interface AppliedAnnouncement extends AnnouncedTip {
  readonly parentIndexBlockHash: string;
  readonly touched: Touched;
  readonly deployed: readonly string[];
}

/** Most contracts an applied block may name before it is announced as touching everything. */
const MAX_NAMED = 2000;

export interface RedisTipChannelOptions {
  readonly client: Redis;
  readonly keyPrefix?: string;
  readonly onError?: (err: unknown) => void;
}

export class RedisTipChannel {
  readonly channel: string;
  readonly #client: Redis;
  readonly #instance = randomUUID();
  readonly #onError: (err: unknown) => void;
  readonly #handlers = new Set<(tip: AnnouncedTip) => void>();
  readonly #appliedHandlers = new Set<(block: AppliedAnnouncement) => void>();
  readonly #sub: Subscription;

  constructor(options: RedisTipChannelOptions) {
    this.#client = options.client;
    this.channel = `${options.keyPrefix ?? KEY_PREFIX}observer:tip`;
    this.#onError = options.onError ?? (() => {});
    this.#sub = subscribe(this.#client, this.channel, {
      onError: this.#onError,
      onMessage: (message) => this.#onMessage(message),
    });
  }

  publish(tip: AnnouncedTip): void {
    const message = JSON.stringify({
      i: this.#instance,
      n: tip.network,
      h: tip.height,
      b: tip.indexBlockHash,
    });
    this.#client.publish(this.channel, message).catch(this.#onError);
  }

  /** A block the observer applied (after publish() of its tip). */
  publishApplied(block: AppliedAnnouncement): void {
    const { touched } = block;
    const t = touched.all || touched.contracts.size > MAX_NAMED ? '*' : [...touched.contracts];
    const message = JSON.stringify({
      i: this.#instance,
      k: 'a',
      n: block.network,
      h: block.height,
      b: block.indexBlockHash,
      p: block.parentIndexBlockHash,
      t,
      d: block.deployed,
    });
    this.#client.publish(this.channel, message).catch(this.#onError);
  }

  /** Blocks applied by the other instances' observers. */
  onApplied(handler: (block: AppliedAnnouncement) => void): () => void {
    this.#appliedHandlers.add(handler);
    return () => this.#appliedHandlers.delete(handler);
  }

  /** Tips announced by the other instances. */
  onTip(handler: (tip: AnnouncedTip) => void): () => void {
    this.#handlers.add(handler);
    return () => this.#handlers.delete(handler);
  }

  close(): void {
    this.#sub.close();
  }

  #onMessage(message: string): void {
    let m: {
      i?: unknown;
      k?: unknown;
      n?: unknown;
      h?: unknown;
      b?: unknown;
      p?: unknown;
      t?: unknown;
      d?: unknown;
    };
    try {
      m = JSON.parse(message) as typeof m;
    } catch {
      return;
    }
    if (m.i === this.#instance) return;
    if (m.n !== 'mainnet' && m.n !== 'testnet') return;
    if (!Number.isSafeInteger(m.h) || (m.h as number) < 0) return;
    if (typeof m.b !== 'string' || !/^[0-9a-f]{64}$/.test(m.b)) return;
    const tip: AnnouncedTip = { network: m.n, height: m.h as number, indexBlockHash: m.b };
    if (m.k === 'a') {
      const applied = appliedOf(tip, m);
      if (applied !== undefined) for (const handler of this.#appliedHandlers) handler(applied);
      return;
    }
    for (const handler of this.#handlers) handler(tip);
  }
}

const CONTRACT_ID = /^[A-Z0-9]{28,41}\.[a-zA-Z][a-zA-Z0-9_-]{0,127}$/;

/** The applied-block fields of a message, checked; undefined when any is malformed. */
function appliedOf(
  tip: AnnouncedTip,
  m: { p?: unknown; t?: unknown; d?: unknown },
): AppliedAnnouncement | undefined {
  if (typeof m.p !== 'string' || !/^[0-9a-f]{64}$|^$/.test(m.p)) return undefined;
  const ids = (v: unknown): string[] | undefined =>
    Array.isArray(v) && v.every((x) => typeof x === 'string' && CONTRACT_ID.test(x))
      ? (v as string[])
      : undefined;
  const deployed = ids(m.d);
  if (deployed === undefined) return undefined;
  let touched: Touched;
  if (m.t === '*') touched = { all: true };
  else {
    const contracts = ids(m.t);
    if (contracts === undefined) return undefined;
    touched = { all: false, contracts: new Set(contracts) };
  }
  return { ...tip, parentIndexBlockHash: m.p, touched, deployed };
}
