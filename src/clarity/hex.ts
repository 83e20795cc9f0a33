/**
 * Hex <-> bytes for Clarity values.
 *
 * The gateway accepts exactly one textual form of serialized data: `0x` followed by an even
 * number of hex digits (either case). Node's `Buffer.from(s, 'hex')` silently stops at the
 * first bad character and drops a dangling odd digit, so the string is validated first and
 * only then handed to Buffer, which does the actual decoding quickly.
 */
import { GatewayError } from '../errors.js';

const HEX_DIGITS = /^[0-9a-fA-F]*$/;

/** Parse `0x` + an even number of hex digits; anything else is INVALID_HEX_STRING. */
export function parseHex(s: string): Uint8Array {
  if (typeof s !== 'string') {
    throw new GatewayError('INVALID_HEX_STRING', 'Expected a hex string beginning with 0x');
  }
  if (!s.startsWith('0x')) {
    throw new GatewayError('INVALID_HEX_STRING', 'Hex string must begin with 0x');
  }
  const digits = s.slice(2);
  if (!HEX_DIGITS.test(digits)) {
    // Point at the first offending character so a client can find it in a long string.
    const bad = digits.search(/[^0-9a-fA-F]/);
    throw new GatewayError(
      'INVALID_HEX_STRING',
      `Hex string contains a non-hex character ${JSON.stringify(digits[bad])} at position ${bad + 2}`,
    );
  }
  if (digits.length % 2 !== 0) {
    throw new GatewayError('INVALID_HEX_STRING', 'Hex string must have an even number of hex digits');
  }
  const buf = Buffer.from(digits, 'hex');
  // A plain Uint8Array view: callers should not rely on Buffer-only methods.
  return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
}

/** Lower-case hex of `bytes`, without a `0x` prefix (the form @stacks/transactions uses). */
export function bytesToHex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}
