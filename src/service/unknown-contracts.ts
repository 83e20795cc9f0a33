/**
 * Negative caching of ABI lookups (docs/upstreams.md, CACHE_NEGATIVE_TTL_S): the
 * upstream's "no such contract" is remembered for a short while, so that repeated lookups of
 * a missing contract (or read-only calls to it, which fetch its ABI first) cost one upstream
 * request per window instead of one each.
 *
 * The answer stays the upstream's: the same UPSTREAM_API_ERROR (its unknown-contract variant,
 * 404), its message and details kept in the entry, with a cache view that says where it came
 * from (a hit, or a miss that was stored). The node's own answer (status, content type, body)
 * is kept beside them, so that the node-compatible interface route repeats it byte for byte. The entries live under their own key namespace (keys.ts), never among the
 * cached ABIs, so they are never listed as known contracts.
 */
import type { CacheEntry } from '../cache/entry.js';
import { unknownAbiKey } from '../cache/keys.js';
import type { ReadThroughCache } from '../cache/read-through.js';
import type { CacheView } from '../cache/view.js';
import { type ErrorDetails, GatewayError, isGatewayError, type NodeShapedAnswer } from '../errors.js';
import type { ContractRef } from './contract-ref.js';

interface StoredNotFound {
  readonly message: string;
  readonly details?: ErrorDetails;
  /** The node's answer; absent in entries written before it was kept. */
  readonly node?: NodeShapedAnswer;
}

export class UnknownContracts {
  /**
   * @param ttlMs how long a 404 is remembered; 0 = not at all (every lookup asks upstream).
   * @param onCorrupt told of a remembered 404 that is not one (a damaged or foreign value),
   *   which is then asked of the node again and replaced.
   */
  constructor(
    private readonly cache: ReadThroughCache,
    private readonly ttlMs: number,
    private readonly onCorrupt: () => void = () => {},
  ) {}

  /** The remembered 404 for ref, ready to throw (a cache hit), or undefined. */
  async lookup(ref: ContractRef): Promise<GatewayError | undefined> {
    if (this.ttlMs === 0) return undefined;
    const entry = await this.cache.fresh(this.#key(ref));
    if (entry === undefined) return undefined;
    const stored = decode(entry);
    if (stored === undefined) {
      this.onCorrupt();
      return undefined;
    }
    return notFound(stored, { outcome: 'hit', entry, stored: false, ttlMs: undefined });
  }

  /**
   * When err is the upstream's 404 for an unknown contract: remember it and return it with
   * what the cache did; any other error is returned as it is.
   */
  async remember(ref: ContractRef, err: unknown): Promise<unknown> {
    if (this.ttlMs === 0 || !isUnknownContract(err)) return err;
    const value: StoredNotFound = {
      message: err.message,
      ...(err.details === undefined ? {} : { details: err.details }),
      ...(err.nodeAnswer === undefined ? {} : { node: err.nodeAnswer }),
    };
    // An attested 404 records its votes, or a gateway under k/n would never serve it again.
    const meta = err.votes === undefined ? undefined : { votes: err.votes };
    const stored = await this.cache.put(this.#key(ref), JSON.stringify(value), this.ttlMs, meta);
    return notFound(value, { outcome: 'miss', stored, ttlMs: this.ttlMs, meta }, err);
  }

  /** Forget what is remembered of ref (an admin invalidation of its ABI). */
  forget(ref: ContractRef): Promise<boolean> {
    return this.cache.invalidate(this.#key(ref));
  }

  #key(ref: ContractRef): string {
    return unknownAbiKey(ref.network, ref.address, ref.contractName);
  }
}

/** The upstream's answer for a contract that does not exist (stacks-node.ts). */
function isUnknownContract(err: unknown): err is GatewayError {
  return isGatewayError(err) && err.code === 'UPSTREAM_API_ERROR' && err.variant === 'unknown-contract';
}

function notFound(stored: StoredNotFound, cache: CacheView, cause?: unknown): GatewayError {
  return new GatewayError('UPSTREAM_API_ERROR', stored.message, stored.details, {
    variant: 'unknown-contract',
    origin: { cache },
    ...(cause === undefined ? {} : { cause }),
    ...(stored.node === undefined ? {} : { nodeAnswer: stored.node }),
  });
}

/** An entry written by this module; anything else (foreign, corrupted) counts as absent. */
function decode(entry: CacheEntry): StoredNotFound | undefined {
  try {
    const parsed = JSON.parse(entry.value) as Partial<StoredNotFound> | null;
    if (parsed === null || typeof parsed !== 'object' || typeof parsed.message !== 'string') return undefined;
    const details = parsed.details;
    if (details !== undefined && (details === null || typeof details !== 'object' || Array.isArray(details)))
      return undefined;
    const node = parsed.node;
    if (node !== undefined && !isNodeAnswer(node)) return undefined;
    return {
      message: parsed.message,
      ...(details === undefined ? {} : { details }),
      ...(node === undefined ? {} : { node }),
    };
  } catch {
    return undefined;
  }
}

function isNodeAnswer(x: unknown): x is NodeShapedAnswer {
  if (x === null || typeof x !== 'object') return false;
  const a = x as Partial<NodeShapedAnswer>;
  return (
    typeof a.status === 'number' &&
    Number.isInteger(a.status) &&
    typeof a.contentType === 'string' &&
    typeof a.body === 'string'
  );
}
