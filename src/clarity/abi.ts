/**
 * Contract ABI types (as served by the node's /v2/contracts/interface) and a deep check of
 * call arguments against a function's signature, so that ill-typed calls are refused with
 * INVALID_ARGUMENTS before they cost an upstream request.
 */
import { ClarityType, type ClarityValue } from '@stacks/transactions';
import { GatewayError } from '../errors.js';
import { codePointLength } from './rules.js';

/** A Clarity type as written in a contract ABI. */
export type AbiType =
  | 'uint128'
  | 'int128'
  | 'bool'
  | 'principal'
  | 'trait_reference'
  | 'none'
  | { optional: AbiType }
  | { response: { ok: AbiType; error: AbiType } }
  | { buffer: { length: number } }
  | { 'string-ascii': { length: number } }
  | { 'string-utf8': { length: number } }
  | { list: { type: AbiType; length: number } }
  | { tuple: AbiTupleField[] };

export interface AbiTupleField {
  name: string;
  type: AbiType;
}

export interface AbiArgument {
  name: string;
  type: AbiType;
}

export interface AbiFunction {
  name: string;
  access: 'private' | 'public' | 'read_only';
  args: AbiArgument[];
  outputs: { type: AbiType };
}

export interface AbiVariable {
  name: string;
  type: AbiType;
  access: 'constant' | 'variable';
}

export interface AbiMap {
  name: string;
  key: AbiType;
  value: AbiType;
}

export interface AbiFungibleToken {
  name: string;
}

export interface AbiNonFungibleToken {
  name: string;
  type: AbiType;
}

export interface ContractAbi {
  functions: AbiFunction[];
  variables: AbiVariable[];
  maps: AbiMap[];
  fungible_tokens: AbiFungibleToken[];
  non_fungible_tokens: AbiNonFungibleToken[];
  epoch: string;
  clarity_version: string;
}

function has<K extends string>(t: object, key: K): t is Record<K, unknown> {
  return Object.hasOwn(t, key);
}

/** A descriptor in Clarity syntax, e.g. `(list 10 (tuple (a uint) (b (buff 32))))`. */
export function describeType(t: AbiType): string {
  if (typeof t === 'string') {
    switch (t) {
      case 'uint128':
        return 'uint';
      case 'int128':
        return 'int';
      default:
        return t;
    }
  }
  if (typeof t !== 'object' || t === null) return String(t);
  if (has(t, 'optional')) return `(optional ${describeType(t.optional)})`;
  if (has(t, 'response'))
    return `(response ${describeType(t.response.ok)} ${describeType(t.response.error)})`;
  if (has(t, 'buffer')) return `(buff ${t.buffer.length})`;
  if (has(t, 'string-ascii')) return `(string-ascii ${t['string-ascii'].length})`;
  if (has(t, 'string-utf8')) return `(string-utf8 ${t['string-utf8'].length})`;
  if (has(t, 'list')) return `(list ${t.list.length} ${describeType(t.list.type)})`;
  if (has(t, 'tuple'))
    return `(tuple ${t.tuple.map((f) => `(${f.name} ${describeType(f.type)})`).join(' ')})`;
  return JSON.stringify(t);
}

/** What a value is, briefly, for "expected X, got Y" messages. */
function describeValue(cv: ClarityValue): string {
  switch (cv.type) {
    case ClarityType.Int:
      return 'int';
    case ClarityType.UInt:
      return 'uint';
    case ClarityType.BoolTrue:
    case ClarityType.BoolFalse:
      return 'bool';
    case ClarityType.PrincipalStandard:
      return 'standard principal';
    case ClarityType.PrincipalContract:
      return 'contract principal';
    case ClarityType.Buffer:
      return `(buff ${cv.value.length / 2})`;
    case ClarityType.StringASCII:
      return `(string-ascii ${cv.value.length})`;
    case ClarityType.StringUTF8:
      return `(string-utf8 ${codePointLength(cv.value)})`;
    case ClarityType.List:
      return `list of ${cv.value.length}`;
    case ClarityType.Tuple:
      return 'tuple';
    case ClarityType.OptionalNone:
      return 'none';
    case ClarityType.OptionalSome:
      return 'some';
    case ClarityType.ResponseOk:
      return 'ok response';
    case ClarityType.ResponseErr:
      return 'err response';
    default:
      return 'unknown value';
  }
}

/**
 * The first way `cv` fails to have type `t`, described with its path, or undefined when it
 * matches. Values are at most 32 levels deep, so recursion is bounded.
 */
function mismatch(cv: ClarityValue, t: AbiType, path: string): string | undefined {
  const wrong = (): string => `${path}: expected ${describeType(t)}, got ${describeValue(cv)}`;
  if (typeof t === 'string') {
    switch (t) {
      case 'uint128':
        return cv.type === ClarityType.UInt ? undefined : wrong();
      case 'int128':
        return cv.type === ClarityType.Int ? undefined : wrong();
      case 'bool':
        return cv.type === ClarityType.BoolTrue || cv.type === ClarityType.BoolFalse ? undefined : wrong();
      case 'principal':
        return cv.type === ClarityType.PrincipalStandard || cv.type === ClarityType.PrincipalContract
          ? undefined
          : wrong();
      case 'trait_reference':
        // A trait argument is a contract; which trait it implements is for the node to check.
        return cv.type === ClarityType.PrincipalContract ? undefined : wrong();
      case 'none':
        // The ABI's NoType: no value has it.
        return wrong();
      default:
        // An ABI type this gateway does not know (a newer Clarity?): let the node judge.
        return undefined;
    }
  }
  if (typeof t !== 'object' || t === null) return undefined;

  if (has(t, 'optional')) {
    if (cv.type === ClarityType.OptionalNone) return undefined;
    if (cv.type !== ClarityType.OptionalSome) return wrong();
    return mismatch(cv.value, t.optional, `${path}.some`);
  }
  if (has(t, 'response')) {
    if (cv.type === ClarityType.ResponseOk) return mismatch(cv.value, t.response.ok, `${path}.ok`);
    if (cv.type === ClarityType.ResponseErr) return mismatch(cv.value, t.response.error, `${path}.err`);
    return wrong();
  }
  if (has(t, 'buffer')) {
    if (cv.type !== ClarityType.Buffer) return wrong();
    const len = cv.value.length / 2;
    return len <= t.buffer.length ? undefined : `${path}: buffer of ${len} bytes exceeds ${describeType(t)}`;
  }
  if (has(t, 'string-ascii')) {
    if (cv.type !== ClarityType.StringASCII) return wrong();
    const len = cv.value.length;
    const max = t['string-ascii'].length;
    return len <= max ? undefined : `${path}: string of ${len} characters exceeds ${describeType(t)}`;
  }
  if (has(t, 'string-utf8')) {
    if (cv.type !== ClarityType.StringUTF8) return wrong();
    // Clarity measures string-utf8 in code points (chars), not bytes or UTF-16 units.
    const len = codePointLength(cv.value);
    const max = t['string-utf8'].length;
    return len <= max ? undefined : `${path}: string of ${len} characters exceeds ${describeType(t)}`;
  }
  if (has(t, 'list')) {
    if (cv.type !== ClarityType.List) return wrong();
    if (cv.value.length > t.list.length) {
      return `${path}: list of ${cv.value.length} items exceeds ${describeType(t)}`;
    }
    for (let i = 0; i < cv.value.length; i++) {
      const m = mismatch(cv.value[i]!, t.list.type, `${path}[${i}]`);
      if (m !== undefined) return m;
    }
    return undefined;
  }
  if (has(t, 'tuple')) {
    if (cv.type !== ClarityType.Tuple) return wrong();
    const declared = new Set<string>();
    for (const field of t.tuple) {
      declared.add(field.name);
      if (!Object.hasOwn(cv.value, field.name)) return `${path}: missing tuple field "${field.name}"`;
      const m = mismatch(cv.value[field.name]!, field.type, `${path}.${field.name}`);
      if (m !== undefined) return m;
    }
    for (const key of Object.keys(cv.value)) {
      if (!declared.has(key)) return `${path}: unexpected tuple field "${key}"`;
    }
    return undefined;
  }
  return undefined;
}

/**
 * Throw INVALID_ARGUMENTS unless `args` match `fn`'s parameters in number and, deeply, in
 * type. `contractId` (`ADDRESS.name`) only serves the messages.
 */
export function checkArguments(args: ClarityValue[], fn: AbiFunction, contractId: string): void {
  if (args.length !== fn.args.length) {
    throw new GatewayError(
      'INVALID_ARGUMENTS',
      `Function ${fn.name} of ${contractId} takes ${fn.args.length} argument${fn.args.length === 1 ? '' : 's'}, got ${args.length}`,
      { function: fn.name, contract: contractId, expected: fn.args.length, received: args.length },
    );
  }
  for (let i = 0; i < args.length; i++) {
    const param = fn.args[i]!;
    const error = mismatch(args[i]!, param.type, param.name);
    if (error !== undefined) {
      throw new GatewayError(
        'INVALID_ARGUMENTS',
        `Argument ${i} (${param.name}) of ${contractId}::${fn.name} does not match ${describeType(param.type)}: ${error}`,
        { argument: i, name: param.name, expected: param.type, error },
      );
    }
  }
}
