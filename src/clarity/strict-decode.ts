/**
 * Strict, iterative decoder for the Clarity consensus serialization.
 *
 * Why not just `deserializeCV` from @stacks/transactions (v7.6)? It accepts input the node
 * never would: it reads past the end (a truncated uint decodes as 0), ignores trailing
 * bytes, lets length prefixes overrun, drops a leading BOM and replaces invalid UTF-8 with
 * U+FFFD, does not check string-ascii characters, names or duplicate tuple keys, and it
 * recurses once per nesting level (a 100 000-deep value overflows the stack). It also fails
 * on valid values: a string-ascii longer than ~120 KB (String.fromCharCode.apply overflows
 * the stack) and a 128-byte contract name (it insists on < 128).
 *
 * So this module walks the bytes once with an explicit stack, enforcing the same rules as
 * stacks-core's `Value::deserialize_read`, and builds the very same `ClarityValue` shapes the
 * library would (bigint integers, lower-case hex buffers, c32 principal strings), which the
 * tests check against `deserializeCV` on valid input.
 */
import type {
  BufferCV,
  ClarityType,
  ClarityValue,
  ContractPrincipalCV,
  IntCV,
  ListCV,
  ResponseErrorCV,
  ResponseOkCV,
  SomeCV,
  StandardPrincipalCV,
  StringAsciiCV,
  StringUtf8CV,
  TupleCV,
  TupleData,
  UIntCV,
} from '@stacks/transactions';
import { GatewayError } from '../errors.js';
import { CT } from './clarity-type.js';
import { parseHex } from './hex.js';
import { encodeAddress } from './principal.js';
import {
  isClarityAsciiCode,
  isValidClarityName,
  isValidContractName,
  MAX_DEPTH,
  MAX_NAME_LENGTH,
  MAX_VALUE_SIZE,
} from './rules.js';

export interface DecodeOptions {
  /**
   * Nesting level of the decoded value itself (1 = top level). A hex string embedded inside a
   * JSON value object starts deeper, and the 32-level limit applies to the whole value.
   */
  startLevel?: number;
}

// fatal: invalid UTF-8 is an error, not U+FFFD. ignoreBOM: keep a leading U+FEFF as data.
const utf8Decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

type WrapperType = ClarityType.OptionalSome | ClarityType.ResponseOk | ClarityType.ResponseErr;

/** A container whose children are still being read. */
type Frame =
  | { kind: 'wrap'; type: WrapperType }
  | { kind: 'list'; items: ClarityValue[]; remaining: number }
  | { kind: 'tuple'; data: TupleData; remaining: number; key: string };

function fail(offset: number, message: string): never {
  throw new GatewayError(
    'DESERIALIZATION_ERROR',
    `Invalid Clarity value: ${message} at byte offset ${offset}`,
    {
      offset,
    },
  );
}

/** Decode a `0x` hex string holding exactly one serialized Clarity value. */
export function decodeClarityHex(hex: string, options: DecodeOptions = {}): ClarityValue {
  return decodeClarityBytes(parseHex(hex), options);
}

/** Decode bytes holding exactly one serialized Clarity value; DESERIALIZATION_ERROR otherwise. */
export function decodeClarityBytes(bytes: Uint8Array, options: DecodeOptions = {}): ClarityValue {
  const startLevel = options.startLevel ?? 1;
  const end = bytes.length;
  if (end === 0) fail(0, 'no bytes, expected one serialized value');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const stack: Frame[] = [];
  let pos = 0;

  /** Fail unless `n` more bytes exist for `what`, which starts at `at`. */
  const need = (n: number, what: string, at: number): void => {
    if (n > end - pos) {
      fail(at, `truncated ${what}: needs ${n} byte${n === 1 ? '' : 's'} but only ${end - pos} remain`);
    }
  };

  const readU32 = (what: string, at: number): number => {
    need(4, `${what} length prefix`, at);
    const n = view.getUint32(pos);
    pos += 4;
    return n;
  };

  /** A u32-length-prefixed byte run (buffer, string): returns its start offset. */
  const readSized = (what: string, at: number): [start: number, length: number] => {
    const len = readU32(what, at);
    if (len > MAX_VALUE_SIZE) fail(at, `${what} length ${len} exceeds the ${MAX_VALUE_SIZE}-byte maximum`);
    if (len > end - pos) fail(at, `${what} length ${len} overruns the ${end - pos} remaining bytes`);
    const start = pos;
    pos += len;
    return [start, len];
  };

  /** A u8-length-prefixed ASCII name (tuple key or contract name). */
  const readName = (what: string, valid: (s: string) => boolean): string => {
    const at = pos;
    need(1, `${what} length`, at);
    const len = bytes[pos++]!;
    if (len === 0) fail(at, `${what} is empty`);
    if (len > MAX_NAME_LENGTH) fail(at, `${what} length ${len} exceeds ${MAX_NAME_LENGTH}`);
    if (len > end - pos) fail(at, `${what} length ${len} overruns the ${end - pos} remaining bytes`);
    // latin1 maps each byte to one char, so non-ASCII bytes survive to fail the name check.
    const name = buf.toString('latin1', pos, pos + len);
    pos += len;
    if (!valid(name)) fail(at, `${what} ${JSON.stringify(name)} is not a valid name`);
    return name;
  };

  const readTupleKey = (data: TupleData): string => {
    const at = pos;
    const key = readName('tuple key', isValidClarityName);
    if (Object.hasOwn(data, key)) fail(at, `duplicate tuple key ${JSON.stringify(key)}`);
    return key;
  };

  /** Version byte + 20-byte hash160, as a c32 address string. */
  const readAddress = (at: number): string => {
    need(21, 'principal', at);
    const version = bytes[pos]!;
    if (version > 31) fail(pos, `principal version byte ${version} is not below 32`);
    const hash160 = buf.toString('hex', pos + 1, pos + 21);
    pos += 21;
    return encodeAddress(version, hash160);
  };

  const readInt128 = (at: number, what: string): bigint => {
    need(16, what, at);
    const v = (view.getBigUint64(pos) << 64n) | view.getBigUint64(pos + 8);
    pos += 16;
    return v;
  };

  for (;;) {
    const at = pos;
    if (startLevel + stack.length > MAX_DEPTH) fail(at, `value nested deeper than ${MAX_DEPTH} levels`);
    if (pos >= end) fail(at, 'truncated data: expected a type byte');
    const typeByte = bytes[pos++]!;
    let value: ClarityValue;
    switch (typeByte) {
      case 0x00:
        value = { type: CT.Int, value: BigInt.asIntN(128, readInt128(at, 'int')) } as IntCV;
        break;
      case 0x01:
        value = { type: CT.UInt, value: readInt128(at, 'uint') } as UIntCV;
        break;
      case 0x02: {
        const [start, len] = readSized('buffer', at);
        value = { type: CT.Buffer, value: buf.toString('hex', start, start + len) } as BufferCV;
        break;
      }
      case 0x03:
        value = { type: CT.BoolTrue };
        break;
      case 0x04:
        value = { type: CT.BoolFalse };
        break;
      case 0x05:
        value = { type: CT.PrincipalStandard, value: readAddress(at) } as StandardPrincipalCV;
        break;
      case 0x06: {
        const address = readAddress(at);
        const name = readName('contract name', isValidContractName);
        value = { type: CT.PrincipalContract, value: `${address}.${name}` } as ContractPrincipalCV;
        break;
      }
      case 0x07:
        stack.push({ kind: 'wrap', type: CT.ResponseOk });
        continue;
      case 0x08:
        stack.push({ kind: 'wrap', type: CT.ResponseErr });
        continue;
      case 0x09:
        value = { type: CT.OptionalNone };
        break;
      case 0x0a:
        stack.push({ kind: 'wrap', type: CT.OptionalSome });
        continue;
      case 0x0b: {
        const count = readU32('list', at);
        // Every item takes at least one byte, so a count above the remaining bytes is a lie;
        // checking it here also stops a 4-billion "length" from allocating anything.
        if (count > MAX_VALUE_SIZE) fail(at, `list length ${count} exceeds the ${MAX_VALUE_SIZE} maximum`);
        if (count > end - pos) fail(at, `list of ${count} items overruns the ${end - pos} remaining bytes`);
        if (count === 0) {
          value = { type: CT.List, value: [] } as ListCV;
          break;
        }
        stack.push({ kind: 'list', items: [], remaining: count });
        continue;
      }
      case 0x0c: {
        const count = readU32('tuple', at);
        // Clarity has no empty tuple type. Each field takes at least 3 bytes (length, name, type).
        if (count === 0) fail(at, 'tuple has no fields');
        if (count > MAX_VALUE_SIZE)
          fail(at, `tuple of ${count} fields exceeds the ${MAX_VALUE_SIZE} maximum`);
        if (count > (end - pos) / 3)
          fail(at, `tuple of ${count} fields overruns the ${end - pos} remaining bytes`);
        const data: TupleData = {};
        stack.push({ kind: 'tuple', data, remaining: count, key: readTupleKey(data) });
        continue;
      }
      case 0x0d: {
        const [start, len] = readSized('string-ascii', at);
        for (let i = start; i < start + len; i++) {
          if (!isClarityAsciiCode(bytes[i]!)) {
            fail(
              i,
              `string-ascii holds byte 0x${bytes[i]!.toString(16).padStart(2, '0')}, which Clarity does not allow`,
            );
          }
        }
        value = {
          type: CT.StringASCII,
          value: buf.toString('latin1', start, start + len),
        } as StringAsciiCV;
        break;
      }
      case 0x0e: {
        const [start, len] = readSized('string-utf8', at);
        let text: string;
        try {
          text = utf8Decoder.decode(bytes.subarray(start, start + len));
        } catch {
          fail(start, 'string-utf8 is not valid UTF-8');
        }
        value = { type: CT.StringUTF8, value: text } as StringUtf8CV;
        break;
      }
      default:
        fail(at, `unknown Clarity type byte 0x${typeByte.toString(16).padStart(2, '0')}`);
    }

    // Hand the finished value to its parent; finishing a parent may finish grandparents.
    for (;;) {
      const top = stack[stack.length - 1];
      if (top === undefined) {
        if (pos !== end) fail(pos, `${end - pos} trailing byte${end - pos === 1 ? '' : 's'} after the value`);
        return value;
      }
      if (top.kind === 'wrap') {
        stack.pop();
        value = { type: top.type, value } as SomeCV | ResponseOkCV | ResponseErrorCV;
        continue;
      }
      if (top.kind === 'list') {
        top.items.push(value);
        if (--top.remaining > 0) break;
        stack.pop();
        value = { type: CT.List, value: top.items } as ListCV;
        continue;
      }
      // Keys are validated Clarity names (they start with a letter), so `__proto__` cannot
      // occur and plain assignment always creates an own data property.
      top.data[top.key] = value;
      if (--top.remaining > 0) {
        top.key = readTupleKey(top.data);
        break;
      }
      stack.pop();
      value = { type: CT.Tuple, value: top.data } as TupleCV;
    }
  }
}
