import { describe, expect, it } from 'vitest';
import { bytesToHex, parseHex } from '../../../src/clarity/index.js';
import { catchGatewayError } from './helpers.js';

describe('parseHex', () => {
  it('decodes 0x + hex digits of either case', () => {
    expect(Array.from(parseHex('0x00ffAb10'))).toEqual([0, 255, 171, 16]);
    expect(parseHex('0x')).toHaveLength(0);
  });

  it('returns a Uint8Array view of exactly the decoded bytes', () => {
    const bytes = parseHex('0x0102');
    expect(bytes).toBeInstanceOf(Uint8Array);
    expect(bytes.byteLength).toBe(2);
  });

  it.each([
    ['missing 0x', '0102', /begin with 0x/],
    ['upper-case 0X prefix', '0X0102', /begin with 0x/],
    ['odd number of digits', '0x123', /even number/],
    ['non-hex character', '0x12zz', /non-hex character "z" at position 4/],
    ['whitespace', '0x12 34', /non-hex character " "/],
    ['empty string', '', /begin with 0x/],
  ])('refuses %s with INVALID_HEX_STRING', (_label, input, message) => {
    const err = catchGatewayError(() => parseHex(input));
    expect(err.code).toBe('INVALID_HEX_STRING');
    expect(err.message).toMatch(message);
  });

  it('refuses a non-string', () => {
    expect(catchGatewayError(() => parseHex(42 as unknown as string)).code).toBe('INVALID_HEX_STRING');
  });
});

describe('bytesToHex', () => {
  it('gives lower-case hex without a prefix, honouring the view offset', () => {
    const backing = new Uint8Array([0xaa, 0xbb, 0xcc, 0xdd]);
    expect(bytesToHex(backing)).toBe('aabbccdd');
    expect(bytesToHex(backing.subarray(1, 3))).toBe('bbcc');
  });
});
