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

/** A value's text for messages, cut short: `"abc"`, `0x0102…`. */
function brief(text: string, max = 40): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}

/** What a value is, briefly, with its value for scalars, for "expected X, got Y" messages. */
function describeValue(cv: ClarityValue): string {
  switch (cv.type) {
    case ClarityType.Int:
      return `int ${brief(String(cv.value))}`;
    case ClarityType.UInt:
      return `uint ${brief(String(cv.value))}`;
    case ClarityType.BoolTrue:
      return 'bool true';
    case ClarityType.BoolFalse:
      return 'bool false';
    case ClarityType.PrincipalStandard:
      return `standard principal ${cv.value}`;
    case ClarityType.PrincipalContract:
      return `contract principal ${brief(cv.value, 80)}`;
    case ClarityType.Buffer:
      return `(buff ${cv.value.length / 2}) ${brief(`0x${cv.value}`)}`;
    case ClarityType.StringASCII:
      return `(string-ascii ${cv.value.length}) ${brief(JSON.stringify(cv.value))}`;
    case ClarityType.StringUTF8:
      return `(string-utf8 ${codePointLength(cv.value)}) ${brief(JSON.stringify(cv.value))}`;
    case ClarityType.List:
      return `list of ${cv.value.length}`;
    case ClarityType.Tuple:
      return `tuple {${brief(Object.keys(cv.value).join(', '))}}`;
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

/** Where a value fails its type: the input path (JSON notation) and why, in one sentence. */
export interface ArgumentMismatch {
  /** e.g. `functionArgs[1].value.amount`: where the value sits in the simplified input form. */
  readonly path: string;
  readonly reason: string;
}

/**
 * The first way `cv` fails to have type `t`, or undefined when it matches. Paths follow the
 * simplified input form (`.value` into optionals, responses and containers, `[i]` for list
 * items, `.name` for tuple fields), so a client can find the spot in what it sent. Values are
 * at most 32 levels deep, so recursion is bounded.
 */
function mismatch(cv: ClarityValue, t: AbiType, path: string): ArgumentMismatch | undefined {
  const wrong = (): ArgumentMismatch => ({
    path,
    reason: `expected ${describeType(t)}, got ${describeValue(cv)}`,
  });
  const at = (reason: string): ArgumentMismatch => ({ path, reason });
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
    return mismatch(cv.value, t.optional, `${path}.value`);
  }
  if (has(t, 'response')) {
    if (cv.type === ClarityType.ResponseOk) return mismatch(cv.value, t.response.ok, `${path}.value`);
    if (cv.type === ClarityType.ResponseErr) return mismatch(cv.value, t.response.error, `${path}.value`);
    return wrong();
  }
  if (has(t, 'buffer')) {
    if (cv.type !== ClarityType.Buffer) return wrong();
    const len = cv.value.length / 2;
    return len <= t.buffer.length
      ? undefined
      : at(`expected ${describeType(t)}, got a buffer of ${len} bytes`);
  }
  if (has(t, 'string-ascii')) {
    if (cv.type !== ClarityType.StringASCII) return wrong();
    const len = cv.value.length;
    const max = t['string-ascii'].length;
    return len <= max ? undefined : at(`expected ${describeType(t)}, got a string of ${len} characters`);
  }
  if (has(t, 'string-utf8')) {
    if (cv.type !== ClarityType.StringUTF8) return wrong();
    // Clarity measures string-utf8 in code points (chars), not bytes or UTF-16 units.
    const len = codePointLength(cv.value);
    const max = t['string-utf8'].length;
    return len <= max ? undefined : at(`expected ${describeType(t)}, got a string of ${len} characters`);
  }
  if (has(t, 'list')) {
    if (cv.type !== ClarityType.List) return wrong();
    if (cv.value.length > t.list.length) {
      return at(`expected ${describeType(t)}, got a list of ${cv.value.length} items`);
    }
    for (let i = 0; i < cv.value.length; i++) {
      const m = mismatch(cv.value[i]!, t.list.type, `${path}.value[${i}]`);
      if (m !== undefined) return m;
    }
    return undefined;
  }
  if (has(t, 'tuple')) {
    if (cv.type !== ClarityType.Tuple) return wrong();
    const declared = new Set<string>();
    for (const field of t.tuple) {
      declared.add(field.name);
      if (!Object.hasOwn(cv.value, field.name)) {
        return at(`expected ${describeType(t)}, got a tuple without the field "${field.name}"`);
      }
      const m = mismatch(cv.value[field.name]!, field.type, `${path}.value.${field.name}`);
      if (m !== undefined) return m;
    }
    for (const key of Object.keys(cv.value)) {
      if (!declared.has(key)) {
        return at(`expected ${describeType(t)}, got a tuple with the unexpected field "${key}"`);
      }
    }
    return undefined;
  }
  return undefined;
}

/**
 * Throw INVALID_ARGUMENTS unless `args` match `fn`'s parameters in number and, deeply, in
 * type. `contractId` (`ADDRESS.name`) only serves the messages. The error names the failing
 * spot once, as `details.path` (e.g. `functionArgs[1].value.amount`), says what the ABI
 * expects and what was got (`details.reason`).
 */
export function checkArguments(args: ClarityValue[], fn: AbiFunction, contractId: string): void {
  if (args.length !== fn.args.length) {
    const signature = fn.args.map((a) => `${a.name}: ${describeType(a.type)}`).join(', ');
    const n = fn.args.length;
    const reason = `${fn.name} takes ${n} argument${n === 1 ? '' : 's'}${n === 0 ? '' : ` (${signature})`}, got ${args.length}`;
    throw new GatewayError('INVALID_ARGUMENTS', `functionArgs: ${reason} (${contractId})`, {
      function: fn.name,
      contract: contractId,
      expected: n,
      received: args.length,
      path: 'functionArgs',
      reason,
    });
  }
  for (let i = 0; i < args.length; i++) {
    const param = fn.args[i]!;
    const found = mismatch(args[i]!, param.type, `functionArgs[${i}]`);
    if (found !== undefined) {
      throw new GatewayError(
        'INVALID_ARGUMENTS',
        `${found.path}: ${found.reason} (argument ${i + 1}, "${param.name}", of ${contractId}::${fn.name} is ${describeType(param.type)})`,
        {
          function: fn.name,
          contract: contractId,
          // Counted from 1, as people count (the path is a JSON path, from 0).
          argument: i + 1,
          name: param.name,
          expected: param.type,
          path: found.path,
          reason: found.reason,
        },
      );
    }
  }
}
