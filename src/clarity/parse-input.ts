/**
 * Client JSON -> ClarityValue.
 *
 * Three input forms are accepted, and any mix of them inside one value:
 *  - a `0x` hex string: one serialized value, decoded strictly;
 *  - the simplified format `{type, value}` (type names case-insensitive, `-`/`_` ignored, so
 *    `responseOk`, `response-ok` and `RESPONSE_OK` are one name);
 *  - stacks.js v7 objects as JSON (`ascii`, `utf8`, `address`, `contract`, `true`, ...).
 * Both object forms build the same ClarityValue, so they serialize to the same cache key.
 *
 * Nesting is bounded before any recursion: a pre-pass with an explicit stack measures the
 * JSON depth, so the recursive parse that follows can never run deep enough to overflow.
 */
import {
  type BufferCV,
  ClarityType,
  type ClarityValue,
  type ContractPrincipalCV,
  type IntCV,
  type ListCV,
  type ResponseErrorCV,
  type ResponseOkCV,
  type SomeCV,
  type StandardPrincipalCV,
  type StringAsciiCV,
  type StringUtf8CV,
  type TupleCV,
  type TupleData,
  type UIntCV,
} from '@stacks/transactions';
import { GatewayError, isGatewayError } from '../errors.js';
import { principalProblem } from './principal.js';
import {
  firstNonClarityAscii,
  hasLoneSurrogate,
  isValidClarityName,
  MAX_DEPTH,
  MAX_VALUE_SIZE,
} from './rules.js';
import { decodeClarityHex } from './strict-decode.js';

type Kind =
  | 'uint'
  | 'int'
  | 'bool'
  | 'true'
  | 'false'
  | 'principal'
  | 'address'
  | 'contract'
  | 'buffer'
  | 'ascii'
  | 'utf8'
  | 'list'
  | 'tuple'
  | 'none'
  | 'some'
  | 'ok'
  | 'err';

// A Map, not an object literal: a type named "constructor" must not find Object.prototype.
const KINDS: ReadonlyMap<string, Kind> = new Map<string, Kind>([
  ['uint', 'uint'],
  ['uint128', 'uint'],
  ['int', 'int'],
  ['int128', 'int'],
  ['bool', 'bool'],
  ['boolean', 'bool'],
  ['true', 'true'],
  ['false', 'false'],
  ['principal', 'principal'],
  ['address', 'address'],
  ['standardprincipal', 'address'],
  ['contract', 'contract'],
  ['contractprincipal', 'contract'],
  ['buffer', 'buffer'],
  ['buff', 'buffer'],
  ['string', 'ascii'],
  ['stringascii', 'ascii'],
  ['ascii', 'ascii'],
  ['stringutf8', 'utf8'],
  ['utf8', 'utf8'],
  ['list', 'list'],
  ['tuple', 'tuple'],
  ['none', 'none'],
  ['optionalnone', 'none'],
  ['some', 'some'],
  ['optional', 'some'],
  ['optionalsome', 'some'],
  ['ok', 'ok'],
  ['responseok', 'ok'],
  ['err', 'err'],
  ['responseerr', 'err'],
]);

/**
 * The type names listed when a type is unknown: one per Clarity type, in the simplified
 * format's spelling. Every alias in KINDS (stacks.js names, Clarity spellings) works too.
 */
const SIMPLIFIED_TYPE_NAMES: readonly string[] = [
  'uint',
  'int',
  'bool',
  'principal',
  'buffer',
  'stringAscii',
  'stringUtf8',
  'list',
  'tuple',
  'none',
  'some',
  'responseOk',
  'responseErr',
];

const MAX_U128 = (1n << 128n) - 1n;
const MIN_I128 = -(1n << 127n);
const MAX_I128 = (1n << 127n) - 1n;
// 2^128 has 39 decimal digits: anything longer (after leading zeros) is out of range, and
// checking that first keeps BigInt() from parsing a megabyte of digits.
const MAX_INT_DIGITS = 39;
const HEX_BYTES = /^(?:[0-9a-fA-F]{2})*$/;

/**
 * JSON containers a value at Clarity level 32 can need: a list or tuple spends two JSON levels
 * per Clarity level (the value object, then its array/object), everything else one.
 */
const MAX_JSON_DEPTH = 2 * MAX_DEPTH;

function tooDeep(path: string): never {
  throw new GatewayError('VALIDATION_ERROR', `${path}: value nested deeper than ${MAX_DEPTH} levels`, {
    path,
    maxDepth: MAX_DEPTH,
  });
}

function fail(valueType: string, path: string, error: string, extra: Record<string, unknown> = {}): never {
  throw new GatewayError(
    'VALIDATION_ERROR',
    `Failed to convert value to Clarity value of type ${JSON.stringify(valueType)} at ${path}: ${error}`,
    { valueType, error, path, ...extra },
  );
}

/** A short description of what a client sent, for "got ..." in messages. */
function got(v: unknown): string {
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 64 ? `${v.slice(0, 64)}…` : v)}`;
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : `the ${typeof v} ${String(v)}`;
}

/** Iterative depth pre-pass over plain JSON: refuses anything nested too deep to be a value. */
function assertJsonDepth(root: unknown, path: string): void {
  if (typeof root !== 'object' || root === null) return;
  const stack: Array<{ node: object; depth: number }> = [{ node: root, depth: 1 }];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    if (item.depth > MAX_JSON_DEPTH) tooDeep(path);
    const children: unknown[] = Array.isArray(item.node) ? item.node : Object.values(item.node);
    for (const child of children) {
      if (typeof child === 'object' && child !== null) stack.push({ node: child, depth: item.depth + 1 });
    }
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function parseInteger(raw: unknown, signed: boolean, valueType: string, path: string): bigint {
  let n: bigint;
  if (typeof raw === 'bigint') {
    n = raw;
  } else if (typeof raw === 'number') {
    // Beyond 2^53 a JSON number has already lost digits; insist on a string instead.
    if (!Number.isSafeInteger(raw)) {
      fail(
        valueType,
        path,
        `${raw} is not a safe integer; send large or fractional values as decimal strings`,
      );
    }
    n = BigInt(raw);
  } else if (typeof raw === 'string') {
    const m = /^(-?)0*(\d+)$/.exec(raw);
    if (m === null) fail(valueType, path, `${JSON.stringify(raw.slice(0, 60))} is not a decimal integer`);
    if (m[2]!.length > MAX_INT_DIGITS) fail(valueType, path, `${raw.slice(0, 60)}… is out of range`);
    n = BigInt(raw);
  } else if (raw === undefined) {
    fail(valueType, path, 'missing value');
  } else {
    fail(valueType, path, 'expected a decimal string or a safe integer');
  }
  if (signed && (n < MIN_I128 || n > MAX_I128)) {
    fail(valueType, path, `${n} is out of range for int (-2^127 to 2^127-1)`);
  }
  if (!signed && (n < 0n || n > MAX_U128)) {
    fail(valueType, path, `${n} is out of range for uint (0 to 2^128-1)`);
  }
  return n;
}

function parseBool(raw: unknown, valueType: string, path: string): boolean {
  if (raw === true || raw === 'true') return true;
  if (raw === false || raw === 'false') return false;
  return fail(valueType, path, raw === undefined ? 'missing value' : 'expected true or false');
}

function expectString(raw: unknown, valueType: string, path: string): string {
  if (typeof raw === 'string') return raw;
  return fail(valueType, path, raw === undefined ? 'missing value' : 'expected a string');
}

function parseAt(input: unknown, path: string, level: number): ClarityValue {
  if (level > MAX_DEPTH) tooDeep(path);
  if (typeof input === 'string') {
    if (!input.startsWith('0x')) {
      // Most often a plain value (`"hello"`, `"42"`) where a typed one was meant: say both.
      throw new GatewayError(
        'INVALID_HEX_STRING',
        `${path}: expected a Clarity value object {type, value} or a 0x-prefixed hex string, got ${got(input)}`,
        { path },
      );
    }
    try {
      return decodeClarityHex(input, { startLevel: level });
    } catch (err) {
      // Same code and details, but say which argument or field was at fault.
      if (isGatewayError(err)) {
        throw new GatewayError(err.code, `${path}: ${err.message}`, { ...err.details, path });
      }
      throw err;
    }
  }
  if (!isPlainObject(input)) {
    throw new GatewayError(
      'VALIDATION_ERROR',
      `${path}: expected a Clarity value object {type, value} or a 0x-prefixed hex string, got ${got(input)}`,
      { path },
    );
  }
  const valueType = input['type'];
  if (typeof valueType !== 'string') {
    throw new GatewayError(
      'VALIDATION_ERROR',
      `${path}.type: expected a string naming a Clarity type (${SIMPLIFIED_TYPE_NAMES.join(', ')}), got ${valueType === undefined ? 'nothing' : got(valueType)}`,
      { path: `${path}.type`, acceptedTypes: SIMPLIFIED_TYPE_NAMES },
    );
  }
  const kind = KINDS.get(valueType.toLowerCase().replace(/[-_]/g, ''));
  if (kind === undefined) {
    fail(valueType, path, `unsupported type; accepted types are ${SIMPLIFIED_TYPE_NAMES.join(', ')}`, {
      acceptedTypes: SIMPLIFIED_TYPE_NAMES,
    });
  }
  const raw = input['value'];
  const vpath = `${path}.value`;

  switch (kind) {
    case 'uint':
      return { type: ClarityType.UInt, value: parseInteger(raw, false, valueType, vpath) } as UIntCV;
    case 'int':
      return { type: ClarityType.Int, value: parseInteger(raw, true, valueType, vpath) } as IntCV;
    case 'bool':
      return { type: parseBool(raw, valueType, vpath) ? ClarityType.BoolTrue : ClarityType.BoolFalse };
    case 'true':
    case 'false':
      // stacks.js booleans carry no value; if one is given it must agree with the type.
      if (raw !== undefined && parseBool(raw, valueType, vpath) !== (kind === 'true')) {
        fail(valueType, vpath, `contradicts the type ${kind}`);
      }
      return { type: kind === 'true' ? ClarityType.BoolTrue : ClarityType.BoolFalse };
    case 'principal':
    case 'address':
    case 'contract': {
      const s = expectString(raw, valueType, vpath);
      const problem = principalProblem(s);
      if (problem !== undefined) fail(valueType, vpath, problem);
      const isContract = s.includes('.');
      if (kind === 'address' && isContract)
        fail(valueType, vpath, 'expected a standard principal (no contract name)');
      if (kind === 'contract' && !isContract)
        fail(valueType, vpath, 'expected a contract principal ADDRESS.name');
      return isContract
        ? ({ type: ClarityType.PrincipalContract, value: s } as ContractPrincipalCV)
        : ({ type: ClarityType.PrincipalStandard, value: s } as StandardPrincipalCV);
    }
    case 'buffer': {
      // Simplified buffers are 0x hex; stacks.js buffers are hex without the prefix.
      const s = expectString(raw, valueType, vpath);
      const hex = s.startsWith('0x') ? s.slice(2) : s;
      if (!HEX_BYTES.test(hex))
        fail(valueType, vpath, 'expected hex bytes (0x followed by an even number of hex digits)');
      if (hex.length / 2 > MAX_VALUE_SIZE) fail(valueType, vpath, `longer than ${MAX_VALUE_SIZE} bytes`);
      return { type: ClarityType.Buffer, value: hex.toLowerCase() } as BufferCV;
    }
    case 'ascii': {
      const s = expectString(raw, valueType, vpath);
      const bad = firstNonClarityAscii(s);
      if (bad >= 0) {
        fail(
          valueType,
          vpath,
          `character ${JSON.stringify(s[bad])} at index ${bad} is not allowed in a string-ascii`,
        );
      }
      if (s.length > MAX_VALUE_SIZE) fail(valueType, vpath, `longer than ${MAX_VALUE_SIZE} bytes`);
      return { type: ClarityType.StringASCII, value: s } as StringAsciiCV;
    }
    case 'utf8': {
      const s = expectString(raw, valueType, vpath);
      if (hasLoneSurrogate(s))
        fail(valueType, vpath, 'contains an unpaired surrogate, which is not valid UTF-8');
      if (Buffer.byteLength(s, 'utf8') > MAX_VALUE_SIZE)
        fail(valueType, vpath, `longer than ${MAX_VALUE_SIZE} bytes`);
      return { type: ClarityType.StringUTF8, value: s } as StringUtf8CV;
    }
    case 'list': {
      if (!Array.isArray(raw))
        fail(valueType, vpath, raw === undefined ? 'missing value' : 'expected an array');
      if (raw.length > MAX_VALUE_SIZE) fail(valueType, vpath, `more than ${MAX_VALUE_SIZE} items`);
      const items = new Array<ClarityValue>(raw.length);
      for (let i = 0; i < raw.length; i++) items[i] = parseAt(raw[i], `${vpath}[${i}]`, level + 1);
      return { type: ClarityType.List, value: items } as ListCV;
    }
    case 'tuple': {
      if (!isPlainObject(raw))
        fail(valueType, vpath, raw === undefined ? 'missing value' : 'expected an object');
      // Object.keys sees an own "__proto__" created by JSON.parse; it is then refused below
      // as an invalid name, and nothing is ever assigned through a prototype.
      const keys = Object.keys(raw);
      if (keys.length === 0) fail(valueType, vpath, 'a tuple needs at least one field');
      const data: TupleData = {};
      for (const key of keys) {
        if (!isValidClarityName(key)) {
          fail(
            valueType,
            vpath,
            `field name ${JSON.stringify(key.slice(0, 140))} is not a valid Clarity name`,
          );
        }
        // Valid names begin with a letter, so this assignment always makes an own property.
        data[key] = parseAt(raw[key], `${vpath}.${key}`, level + 1);
      }
      return { type: ClarityType.Tuple, value: data } as TupleCV;
    }
    case 'none':
      if (raw !== undefined && raw !== null) fail(valueType, vpath, 'none takes no value');
      return { type: ClarityType.OptionalNone };
    case 'some':
    case 'ok':
    case 'err': {
      if (raw === undefined || raw === null) fail(valueType, vpath, 'missing value');
      const inner = parseAt(raw, vpath, level + 1);
      if (kind === 'some') return { type: ClarityType.OptionalSome, value: inner } as SomeCV;
      if (kind === 'ok') return { type: ClarityType.ResponseOk, value: inner } as ResponseOkCV;
      return { type: ClarityType.ResponseErr, value: inner } as ResponseErrorCV;
    }
  }
}

/**
 * Convert client input (hex string, simplified or stacks.js JSON) to a ClarityValue.
 * Throws VALIDATION_ERROR (bad JSON shape, type, range, name), INVALID_HEX_STRING or
 * DESERIALIZATION_ERROR (bad hex); `path` names the input in messages, e.g. `functionArgs[1]`.
 */
export function parseClarityValue(input: unknown, path = 'clarityValue'): ClarityValue {
  assertJsonDepth(input, path);
  return parseAt(input, path, 1);
}
