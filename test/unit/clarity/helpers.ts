/** Shared fixtures for the Clarity codec tests. */
import { GatewayError } from '../../../src/errors.js';

export const HASH = '1234567890abcdef1234567890abcdef12345678';
/** version 22 (SP), mainnet single-sig */
export const SP = 'SP938NKRJ2NWVVRJ6HB7H45BSQQH4D2PF2QK5VKK';
/** version 20 (SM), mainnet multi-sig */
export const SM = 'SM938NKRJ2NWVVRJ6HB7H45BSQQH4D2PF0ENCKK3';
/** version 26 (ST), testnet single-sig */
export const ST = 'ST938NKRJ2NWVVRJ6HB7H45BSQQH4D2PF019FP6P';
/** version 21 (SN), testnet multi-sig */
export const SN = 'SN938NKRJ2NWVVRJ6HB7H45BSQQH4D2PF2NZM108';
/** version 0: a valid c32check principal that belongs to neither network */
export const S0 = 'S0938NKRJ2NWVVRJ6HB7H45BSQQH4D2PF3XYXC6R';
export const SP_ZERO = 'SP000000000000000000002Q6VF78';
export const ST_ZERO = 'ST000000000000000000002AMW42H';

/** Run `fn`, insist it throws a GatewayError, and return that error for further checks. */
export function catchGatewayError(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw new Error(`expected a GatewayError, got ${String(err)}`);
  }
  throw new Error('expected a GatewayError, but nothing was thrown');
}

/** Hex of a big-endian u32. */
export function u32(n: number): string {
  return n.toString(16).padStart(8, '0');
}

/** Hex of an ASCII string. */
export function asciiHex(s: string): string {
  return Buffer.from(s, 'latin1').toString('hex');
}
