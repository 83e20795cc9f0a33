/**
 * Literals (clarity-literal.ts) and plain JSON to the gateway's simplified `{type, value}`
 * objects, checked against the function's ABI argument types. The ABI settles what a
 * literal leaves open: `5` is an int, unless a uint128 is expected; `"é"` is a string-utf8
 * where one is expected; a bare value where an optional is expected means `(some value)`.
 * A literal that cannot be the expected type is refused here, naming the argument and the
 * position, before any request.
 */
import {
  INT_MAX,
  INT_MIN,
  type Literal,
  LiteralSyntaxError,
  parseClarityLiteral,
  UINT_MAX,
} from './clarity-literal.js';
import type { AbiType } from './types.js';

/** The gateway's simplified value object. */
export type SimpleValue =
  | { type: 'uint' | 'int'; value: string }
  | { type: 'bool'; value: boolean }
  | { type: 'principal' | 'string-ascii' | 'string-utf8' | 'buffer'; value: string }
  | { type: 'none' }
  | { type: 'some' | 'ok' | 'err'; value: SimpleValue }
  | { type: 'list'; value: SimpleValue[] }
  | { type: 'tuple'; value: Record<string, SimpleValue> };

/** A value that does not fit the ABI type; `position` (0-based) when it came from a literal. */
export class ArgumentTypeError extends Error {
  readonly path: string;
  readonly position: number | undefined;
  constructor(path: string, problem: string, position?: number) {
    super(`${path}: ${problem}${position === undefined ? '' : ` (at position ${position + 1})`}`);
    this.name = 'ArgumentTypeError';
    this.path = path;
    this.position = position;
  }
}

type Shape =
  | { kind: 'uint' | 'int' | 'bool' | 'principal' | 'trait' | 'none' | 'unknown' }
  | { kind: 'buffer' | 'string-ascii' | 'string-utf8'; length: number }
  | { kind: 'optional'; of: AbiType }
  | { kind: 'response'; ok: AbiType; error: AbiType }
  | { kind: 'list'; of: AbiType; length: number }
  | { kind: 'tuple'; fields: ReadonlyArray<{ name: string; type: AbiType }> };

function lengthOf(v: unknown): number {
  return typeof v === 'object' && v !== null && typeof (v as { length?: unknown }).length === 'number'
    ? (v as { length: number }).length
    : Number.POSITIVE_INFINITY;
}

/** What an ABI type descriptor describes ("unknown" for a form this client does not know). */
function shapeOf(t: AbiType | undefined): Shape {
  if (t === undefined) return { kind: 'unknown' };
  if (typeof t === 'string') {
    if (t === 'uint128') return { kind: 'uint' };
    if (t === 'int128') return { kind: 'int' };
    if (t === 'bool' || t === 'principal' || t === 'none') return { kind: t };
    if (t === 'trait_reference') return { kind: 'trait' };
    return { kind: 'unknown' };
  }
  const [key, body] = Object.entries(t)[0] ?? [];
  const b = body as Record<string, unknown> | undefined;
  switch (key) {
    case 'optional':
      return { kind: 'optional', of: body as AbiType };
    case 'response':
      return { kind: 'response', ok: b?.['ok'] as AbiType, error: b?.['error'] as AbiType };
    case 'buffer':
    case 'string-ascii':
    case 'string-utf8':
      return { kind: key, length: lengthOf(body) };
    case 'list':
      return { kind: 'list', of: b?.['type'] as AbiType, length: lengthOf(body) };
    case 'tuple':
      return { kind: 'tuple', fields: (body as Array<{ name: string; type: AbiType }>) ?? [] };
    default:
      return { kind: 'unknown' };
  }
}

/** An ABI type in Clarity's own notation, as shown beside a form field: `(list 3 uint)`. */
export function formatAbiType(t: AbiType | undefined): string {
  const s = shapeOf(t);
  switch (s.kind) {
    case 'trait':
      return '<trait>';
    case 'unknown':
      return typeof t === 'string' ? t : JSON.stringify(t);
    case 'buffer':
      return `(buff ${s.length})`;
    case 'string-ascii':
    case 'string-utf8':
      return `(${s.kind} ${s.length})`;
    case 'optional':
      return `(optional ${formatAbiType(s.of)})`;
    case 'response':
      return `(response ${formatAbiType(s.ok)} ${formatAbiType(s.error)})`;
    case 'list':
      return `(list ${s.length} ${formatAbiType(s.of)})`;
    case 'tuple':
      return `{${s.fields.map((f) => `${f.name}: ${formatAbiType(f.type)}`).join(', ')}}`;
    default:
      return s.kind;
  }
}

const DESCRIBE: Record<Literal['kind'], string> = {
  int: 'an int literal',
  uint: 'a uint literal',
  bool: 'a bool',
  principal: 'a principal',
  ascii: 'a string',
  utf8: 'a utf8 string',
  buffer: 'a buffer',
  none: 'none',
  some: 'an optional (some …)',
  ok: 'a response (ok …)',
  err: 'a response (err …)',
  list: 'a list',
  tuple: 'a tuple',
};

/**
 * A parsed literal as a simplified value of ABI type `t` (undefined: take the literal as it
 * reads). `path` names the argument in errors, e.g. `argument "who" (principal)`.
 */
export function literalToValue(lit: Literal, t: AbiType | undefined, path: string): SimpleValue {
  const shape = shapeOf(t);
  const mismatch = (): never => {
    throw new ArgumentTypeError(path, `expected ${formatAbiType(t)}, got ${DESCRIBE[lit.kind]}`, lit.pos);
  };
  // A bare value where an optional is expected: (some value).
  if (shape.kind === 'optional' && lit.kind !== 'none' && lit.kind !== 'some') {
    return { type: 'some', value: literalToValue(lit, shape.of, path) };
  }
  switch (lit.kind) {
    case 'int':
      if (shape.kind === 'uint') {
        if (lit.digits.startsWith('-'))
          throw new ArgumentTypeError(path, 'a uint cannot be negative', lit.pos);
        if (BigInt(lit.digits) > UINT_MAX)
          throw new ArgumentTypeError(path, `larger than the largest uint, u${UINT_MAX}`, lit.pos);
        return { type: 'uint', value: lit.digits };
      }
      if (shape.kind !== 'int' && shape.kind !== 'unknown') mismatch();
      if (BigInt(lit.digits) > INT_MAX || BigInt(lit.digits) < INT_MIN)
        throw new ArgumentTypeError(path, `out of the range of an int, ${INT_MIN} to ${INT_MAX}`, lit.pos);
      return { type: 'int', value: lit.digits };
    case 'uint':
      if (shape.kind !== 'uint' && shape.kind !== 'unknown') mismatch();
      return { type: 'uint', value: lit.digits };
    case 'bool':
      if (shape.kind !== 'bool' && shape.kind !== 'unknown') mismatch();
      return { type: 'bool', value: lit.value };
    case 'principal':
      if (shape.kind !== 'principal' && shape.kind !== 'trait' && shape.kind !== 'unknown') mismatch();
      return { type: 'principal', value: lit.value };
    case 'ascii':
    case 'utf8':
      if (shape.kind === 'string-utf8') return { type: 'string-utf8', value: lit.value };
      if (shape.kind === 'string-ascii') return { type: 'string-ascii', value: lit.value };
      if (shape.kind !== 'unknown') mismatch();
      return { type: lit.kind === 'utf8' ? 'string-utf8' : 'string-ascii', value: lit.value };
    case 'buffer':
      if (shape.kind !== 'buffer' && shape.kind !== 'unknown') mismatch();
      return { type: 'buffer', value: `0x${lit.hex}` };
    case 'none':
      if (shape.kind !== 'optional' && shape.kind !== 'unknown') mismatch();
      return { type: 'none' };
    case 'some':
      if (shape.kind !== 'optional' && shape.kind !== 'unknown') mismatch();
      return {
        type: 'some',
        value: literalToValue(lit.inner, shape.kind === 'optional' ? shape.of : undefined, path),
      };
    case 'ok':
    case 'err': {
      if (shape.kind !== 'response' && shape.kind !== 'unknown') mismatch();
      const inner = shape.kind === 'response' ? (lit.kind === 'ok' ? shape.ok : shape.error) : undefined;
      return { type: lit.kind, value: literalToValue(lit.inner, inner, path) };
    }
    case 'list': {
      if (shape.kind !== 'list' && shape.kind !== 'unknown') mismatch();
      const of = shape.kind === 'list' ? shape.of : undefined;
      return { type: 'list', value: lit.items.map((item, i) => literalToValue(item, of, `${path}[${i}]`)) };
    }
    case 'tuple': {
      if (shape.kind !== 'tuple' && shape.kind !== 'unknown') mismatch();
      const types = new Map(shape.kind === 'tuple' ? shape.fields.map((f) => [f.name, f.type]) : []);
      const value: Record<string, SimpleValue> = {};
      for (const f of lit.fields) {
        if (shape.kind === 'tuple' && !types.has(f.name)) {
          throw new ArgumentTypeError(path, `${formatAbiType(t)} has no field "${f.name}"`, f.value.pos);
        }
        Object.defineProperty(value, f.name, {
          value: literalToValue(f.value, types.get(f.name), `${path}.${f.name}`),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
      if (shape.kind === 'tuple') {
        const missing = shape.fields.find((f) => !lit.fields.some((g) => g.name === f.name));
        if (missing !== undefined)
          throw new ArgumentTypeError(path, `missing field "${missing.name}"`, lit.pos);
      }
      return { type: 'tuple', value };
    }
  }
}

/**
 * Plain JSON (as typed in a form field: `[1, 2]`, `{"a": 1}`, `null`) as a value of ABI type
 * `t`. Needs the type: JSON alone does not say uint from int or string-ascii from principal.
 */
export function jsonToValue(json: unknown, t: AbiType, path: string): SimpleValue {
  const shape = shapeOf(t);
  const fail = (what: string): never => {
    throw new ArgumentTypeError(path, `expected ${formatAbiType(t)}, got ${what}`);
  };
  switch (shape.kind) {
    case 'uint':
    case 'int': {
      const text = typeof json === 'number' && Number.isSafeInteger(json) ? String(json) : json;
      if (typeof text !== 'string' || !/^-?[0-9]+$/.test(text)) return fail(JSON.stringify(json));
      if (shape.kind === 'uint' && text.startsWith('-')) return fail(text);
      return { type: shape.kind, value: text };
    }
    case 'bool':
      return typeof json === 'boolean' ? { type: 'bool', value: json } : fail(JSON.stringify(json));
    case 'principal':
    case 'trait':
      return typeof json === 'string'
        ? { type: 'principal', value: json.replace(/^'/, '') }
        : fail(typeof json);
    case 'string-ascii':
    case 'string-utf8':
      return typeof json === 'string' ? { type: shape.kind, value: json } : fail(typeof json);
    case 'buffer':
      return typeof json === 'string' && json.startsWith('0x')
        ? { type: 'buffer', value: json }
        : fail('not 0x hex');
    case 'optional':
      return json === null ? { type: 'none' } : { type: 'some', value: jsonToValue(json, shape.of, path) };
    case 'list':
      if (!Array.isArray(json)) return fail('not an array');
      return { type: 'list', value: json.map((item, i) => jsonToValue(item, shape.of, `${path}[${i}]`)) };
    case 'tuple': {
      if (typeof json !== 'object' || json === null || Array.isArray(json)) return fail('not an object');
      const obj = json as Record<string, unknown>;
      const value: Record<string, SimpleValue> = {};
      for (const key of Object.keys(obj)) {
        if (!shape.fields.some((f) => f.name === key)) throw new ArgumentTypeError(path, `no field "${key}"`);
      }
      for (const f of shape.fields) {
        if (!Object.hasOwn(obj, f.name)) throw new ArgumentTypeError(path, `missing field "${f.name}"`);
        Object.defineProperty(value, f.name, {
          value: jsonToValue(obj[f.name], f.type, `${path}.${f.name}`),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
      return { type: 'tuple', value };
    }
    default:
      return fail('JSON (use Clarity literal syntax for this type)');
  }
}

/**
 * What a person typed for one argument, as a value of its ABI type: Clarity literal syntax,
 * or, for a list, tuple or optional, JSON. Throws LiteralSyntaxError or ArgumentTypeError.
 */
export function argumentFromText(text: string, t: AbiType | undefined, path: string): SimpleValue {
  const shape = shapeOf(t);
  const trimmed = text.trim();
  // In a form, a string argument is the text as typed; quotes are only needed for escapes.
  if ((shape.kind === 'string-ascii' || shape.kind === 'string-utf8') && !/^u?"/.test(trimmed)) {
    return { type: shape.kind, value: text };
  }
  if (shape.kind === 'optional' && trimmed === '') return { type: 'none' };
  if (t !== undefined && (shape.kind === 'list' || shape.kind === 'tuple' || shape.kind === 'optional')) {
    if (/^[[{]|^null$/.test(trimmed)) {
      let json: unknown;
      let isJson = true;
      try {
        json = JSON.parse(trimmed);
      } catch {
        isJson = false;
      }
      if (isJson) return jsonToValue(json, t, path);
    }
  }
  return literalToValue(parseClarityLiteral(text), t, path);
}

export { LiteralSyntaxError, parseClarityLiteral };
