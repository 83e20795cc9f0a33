/**
 * Canonical Clarity serialization, used for cache keys and for the arguments sent upstream.
 *
 * Not `serializeCV` from @stacks/transactions: it orders tuple fields with
 * `String.prototype.localeCompare`, which is neither Clarity's order (stacks-core keeps tuple
 * fields in a BTreeMap, i.e. byte order: "B" < "a", "a-b" < "a_b") nor stable across
 * machines (it follows the process locale; under Estonian rules "z" sorts before "t"). A
 * cache key that changes with $LANG would split the cache, so tuples are written here in
 * byte order, exactly as the node itself serializes them. It also silently truncates
 * non-ASCII characters in string-ascii (`charCodeAt & 0xff`); here they are refused.
 * For every other value the bytes are identical to `serializeCV` (the tests compare them).
 */
import type { ClarityValue } from '@stacks/transactions';
import { GatewayError } from '../errors.js';
import { CT } from './clarity-type.js';
import { decodeAddress } from './principal.js';
import {
  firstNonClarityAscii,
  hasLoneSurrogate,
  isValidClarityName,
  isValidContractName,
  MAX_DEPTH,
  MAX_VALUE_SIZE,
} from './rules.js';

const MAX_U128 = (1n << 128n) - 1n;
const MIN_I128 = -(1n << 127n);
const MAX_I128 = (1n << 127n) - 1n;
const HEX = /^(?:[0-9a-fA-F]{2})*$/;

function invalid(reason: string): never {
  throw new GatewayError('VALIDATION_ERROR', `Cannot serialize Clarity value: ${reason}`, { error: reason });
}

function u32(n: number): string {
  return n.toString(16).padStart(8, '0');
}

function u8(n: number): string {
  return n.toString(16).padStart(2, '0');
}

function toBigInt(v: unknown): bigint {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' && Number.isSafeInteger(v)) return BigInt(v);
  if (typeof v === 'string' && /^-?\d{1,80}$/.test(v)) return BigInt(v);
  return invalid(`integer value ${String(v)} is not an integer`);
}

/** Version byte + hash160 of a canonical c32 address, as hex. */
function addressHex(address: string): string {
  const decoded = decodeAddress(address);
  if (typeof decoded === 'string') invalid(`principal ${JSON.stringify(address)}: ${decoded}`);
  return u8(decoded.version) + decoded.hash160;
}

function write(cv: ClarityValue, out: string[], level: number): void {
  if (level > MAX_DEPTH) invalid(`nested deeper than ${MAX_DEPTH} levels`);
  switch (cv.type) {
    case CT.Int: {
      const v = toBigInt(cv.value);
      if (v < MIN_I128 || v > MAX_I128) invalid(`int ${v} is out of the 128-bit signed range`);
      out.push('00', BigInt.asUintN(128, v).toString(16).padStart(32, '0'));
      return;
    }
    case CT.UInt: {
      const v = toBigInt(cv.value);
      if (v < 0n || v > MAX_U128) invalid(`uint ${v} is out of the 128-bit unsigned range`);
      out.push('01', v.toString(16).padStart(32, '0'));
      return;
    }
    case CT.Buffer: {
      const hex = cv.value;
      if (typeof hex !== 'string' || !HEX.test(hex)) invalid('buffer value is not an even-length hex string');
      if (hex.length / 2 > MAX_VALUE_SIZE) invalid(`buffer exceeds ${MAX_VALUE_SIZE} bytes`);
      out.push('02', u32(hex.length / 2), hex.toLowerCase());
      return;
    }
    case CT.BoolTrue:
      out.push('03');
      return;
    case CT.BoolFalse:
      out.push('04');
      return;
    case CT.PrincipalStandard:
      out.push('05', addressHex(cv.value));
      return;
    case CT.PrincipalContract: {
      const id: string = cv.value;
      const dot = id.indexOf('.');
      const name = id.slice(dot + 1);
      if (dot < 0 || !isValidContractName(name)) invalid(`${JSON.stringify(id)} is not a contract principal`);
      out.push(
        '06',
        addressHex(id.slice(0, dot)),
        u8(name.length),
        Buffer.from(name, 'latin1').toString('hex'),
      );
      return;
    }
    case CT.ResponseOk:
      out.push('07');
      write(cv.value, out, level + 1);
      return;
    case CT.ResponseErr:
      out.push('08');
      write(cv.value, out, level + 1);
      return;
    case CT.OptionalNone:
      out.push('09');
      return;
    case CT.OptionalSome:
      out.push('0a');
      write(cv.value, out, level + 1);
      return;
    case CT.List:
      if (cv.value.length > MAX_VALUE_SIZE) invalid(`list exceeds ${MAX_VALUE_SIZE} items`);
      out.push('0b', u32(cv.value.length));
      for (const item of cv.value) write(item, out, level + 1);
      return;
    case CT.Tuple: {
      // Default sort compares UTF-16 code units; names are ASCII, so this is byte order.
      const keys = Object.keys(cv.value).sort();
      if (keys.length === 0) invalid('a tuple needs at least one field');
      out.push('0c', u32(keys.length));
      for (const key of keys) {
        if (!isValidClarityName(key)) invalid(`tuple key ${JSON.stringify(key)} is not a valid Clarity name`);
        out.push(u8(key.length), Buffer.from(key, 'latin1').toString('hex'));
        write(cv.value[key]!, out, level + 1);
      }
      return;
    }
    case CT.StringASCII: {
      const s = cv.value;
      const bad = firstNonClarityAscii(s);
      if (bad >= 0) invalid(`string-ascii has a character Clarity does not allow at index ${bad}`);
      if (s.length > MAX_VALUE_SIZE) invalid(`string-ascii exceeds ${MAX_VALUE_SIZE} bytes`);
      out.push('0d', u32(s.length), Buffer.from(s, 'latin1').toString('hex'));
      return;
    }
    case CT.StringUTF8: {
      const s = cv.value;
      if (hasLoneSurrogate(s)) invalid('string-utf8 has an unpaired surrogate');
      const bytes = Buffer.from(s, 'utf8');
      if (bytes.length > MAX_VALUE_SIZE) invalid(`string-utf8 exceeds ${MAX_VALUE_SIZE} bytes`);
      out.push('0e', u32(bytes.length), bytes.toString('hex'));
      return;
    }
    default:
      invalid(`unknown Clarity type ${JSON.stringify((cv as { type?: unknown }).type)}`);
  }
}

/** `0x` + the canonical consensus serialization of `cv`. */
export function toHex(cv: ClarityValue): string {
  const out = ['0x'];
  write(cv, out, 1);
  return out.join('');
}
