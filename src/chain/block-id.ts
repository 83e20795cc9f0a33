/**
 * Block identities as the gateway names them (docs/freshness.md): the index
 * block hash (a StacksBlockId) that `?tip=` takes, computed from /v2/info, and the strict
 * parsing of a request's `tip` field.
 */
import { hash } from 'node:crypto';
import { GatewayError } from '../errors.js';

const HEX64 = /^(?:0x)?([0-9a-fA-F]{64})$/;
const HEX_BYTES = (n: number) => new RegExp(`^(?:0x)?([0-9a-fA-F]{${n * 2}})$`);
const BLOCK_HASH = HEX_BYTES(32);
const CONSENSUS_HASH = HEX_BYTES(20);

/**
 * The index block hash of a block: SHA-512/256 of its 32-byte block hash (/v2/info's
 * `stacks_tip`) followed by its 20-byte consensus hash (`stacks_tip_consensus_hash`), as 64
 * lowercase hex digits; undefined when either input is not hex of the right length.
 */
export function indexBlockHash(stacksTip: unknown, consensusHash: unknown): string | undefined {
  if (typeof stacksTip !== 'string' || typeof consensusHash !== 'string') return undefined;
  const block = BLOCK_HASH.exec(stacksTip)?.[1];
  const consensus = CONSENSUS_HASH.exec(consensusHash)?.[1];
  if (block === undefined || consensus === undefined) return undefined;
  return hash('sha512-256', Buffer.from(block + consensus, 'hex'), 'hex');
}

/**
 * A request's `tip` field: undefined or "latest" = the current state (undefined); an index
 * block hash (64 hex digits, with or without 0x, any case) = that block, as 64 lowercase
 * hex digits. Anything else is VALIDATION_ERROR naming `tip`: a node silently answers a
 * malformed tip at its latest block, so one must never be forwarded.
 */
export function parseTip(tip: unknown): string | undefined {
  if (tip === undefined || tip === 'latest') return undefined;
  const digits = typeof tip === 'string' ? HEX64.exec(tip)?.[1] : undefined;
  if (digits === undefined) {
    throw new GatewayError(
      'VALIDATION_ERROR',
      'tip must be an index block hash (64 hex digits, optionally 0x-prefixed) or "latest"',
      { field: 'tip', tip },
    );
  }
  return digits.toLowerCase();
}

/**
 * A node route's `?tip=` query value: absent or empty is the current state (undefined), as a
 * Stacks node reads an empty `tip=`; anything else is parseTip's strict check. One rule for
 * every node route, call-read's included.
 */
export function parseTipQuery(tip: unknown): string | undefined {
  return tip === '' ? undefined : parseTip(tip);
}
