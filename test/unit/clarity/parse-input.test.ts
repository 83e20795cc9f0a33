import { Cl, ClarityType, type ClarityValue } from '@stacks/transactions';
import { describe, expect, it } from 'vitest';
import { parseClarityValue, toHex } from '../../../src/clarity/index.js';
import { catchGatewayError, SP, ST } from './helpers.js';

function validationError(input: unknown, path?: string) {
  const err = catchGatewayError(() => parseClarityValue(input, path));
  expect(err.code).toBe('VALIDATION_ERROR');
  return err;
}

/** {type:'some', value:{type:'some', ... leaf}} with `wrappers` somes, built without recursion. */
function someChain(wrappers: number, leaf: unknown = { type: 'uint', value: '1' }): unknown {
  let v = leaf;
  for (let i = 0; i < wrappers; i++) v = { type: 'some', value: v };
  return v;
}

describe('parseClarityValue: simplified format', () => {
  it.each<[string, unknown, ClarityValue]>([
    ['uint string', { type: 'uint', value: '42' }, Cl.uint(42)],
    ['uint number', { type: 'uint', value: 42 }, Cl.uint(42)],
    ['int negative', { type: 'int', value: '-7' }, Cl.int(-7)],
    ['int number', { type: 'int', value: -7 }, Cl.int(-7)],
    ['bool true', { type: 'bool', value: true }, Cl.bool(true)],
    ['bool "false"', { type: 'bool', value: 'false' }, Cl.bool(false)],
    ['principal', { type: 'principal', value: SP }, Cl.standardPrincipal(SP)],
    ['contract principal', { type: 'principal', value: `${ST}.pool` }, Cl.contractPrincipal(ST, 'pool')],
    ['buffer', { type: 'buffer', value: '0xDEADbeef' }, Cl.bufferFromHex('deadbeef')],
    ['empty buffer', { type: 'buffer', value: '0x' }, Cl.bufferFromHex('')],
    ['string', { type: 'string', value: 'hi' }, Cl.stringAscii('hi')],
    ['stringascii', { type: 'stringAscii', value: 'hi\tthere' }, Cl.stringAscii('hi\tthere')],
    ['stringutf8', { type: 'stringUtf8', value: 'héllo 😀' }, Cl.stringUtf8('héllo 😀')],
    [
      'list',
      { type: 'list', value: [{ type: 'uint', value: 1 }, '0x0100000000000000000000000000000002'] },
      Cl.list([Cl.uint(1), Cl.uint(2)]),
    ],
    ['empty list', { type: 'list', value: [] }, Cl.list([])],
    ['tuple', { type: 'tuple', value: { a: { type: 'bool', value: true } } }, Cl.tuple({ a: Cl.bool(true) })],
    ['none', { type: 'none' }, Cl.none()],
    ['none with null', { type: 'none', value: null }, Cl.none()],
    ['some', { type: 'some', value: { type: 'uint', value: 1 } }, Cl.some(Cl.uint(1))],
    ['optional', { type: 'optional', value: { type: 'uint', value: 1 } }, Cl.some(Cl.uint(1))],
    ['ok', { type: 'ok', value: { type: 'uint', value: 1 } }, Cl.ok(Cl.uint(1))],
    ['responseOk', { type: 'responseOk', value: { type: 'uint', value: '5' } }, Cl.ok(Cl.uint(5))],
    ['err', { type: 'err', value: { type: 'uint', value: 1 } }, Cl.error(Cl.uint(1))],
    ['responseErr', { type: 'responseErr', value: { type: 'int', value: 1 } }, Cl.error(Cl.int(1))],
  ])('%s', (_label, input, expected) => {
    const cv = parseClarityValue(input);
    expect(cv).toEqual(expected);
    expect(toHex(cv)).toBe(toHex(expected));
  });

  it.each([
    ['UINT', 'uint'],
    ['UInt', 'uint'],
    ['string-ascii', 'ascii'],
    ['STRING_ASCII', 'ascii'],
    ['string-utf8', 'utf8'],
    ['response-ok', 'ok'],
    ['RESPONSE_ERR', 'err'],
    ['Optional', 'some'],
    ['Tuple', 'tuple'],
  ])('accepts the type name %s', (typeName, kind) => {
    const sample: Record<string, unknown> = {
      uint: '1',
      ascii: 'x',
      utf8: 'x',
      ok: { type: 'uint', value: 1 },
      err: { type: 'uint', value: 1 },
      some: { type: 'uint', value: 1 },
      tuple: { a: { type: 'uint', value: 1 } },
    };
    const cv = parseClarityValue({ type: typeName, value: sample[kind] });
    expect(cv.type).toBe(kind);
  });
});

describe('parseClarityValue: stacks.js v7 JSON', () => {
  it('gives the same value and hex as the simplified form for every type', () => {
    const native = {
      type: 'tuple',
      value: {
        u: { type: 'uint', value: '5' },
        i: { type: 'int', value: '-5' },
        t: { type: 'true' },
        f: { type: 'false' },
        b: { type: 'buffer', value: 'abcd' },
        a: { type: 'ascii', value: 'hi' },
        s: { type: 'utf8', value: 'hé' },
        p: { type: 'address', value: SP },
        c: { type: 'contract', value: `${SP}.c` },
        n: { type: 'none' },
        o: {
          type: 'some',
          value: { type: 'ok', value: { type: 'err', value: { type: 'uint', value: '0' } } },
        },
        l: { type: 'list', value: [{ type: 'true' }] },
      },
    };
    const simplified = {
      type: 'tuple',
      value: {
        u: { type: 'uint', value: 5 },
        i: { type: 'int', value: -5 },
        t: { type: 'bool', value: true },
        f: { type: 'bool', value: 'false' },
        b: { type: 'buffer', value: '0xABCD' },
        a: { type: 'stringAscii', value: 'hi' },
        s: { type: 'stringUtf8', value: 'hé' },
        p: { type: 'principal', value: SP },
        c: { type: 'principal', value: `${SP}.c` },
        n: { type: 'none' },
        o: {
          type: 'optional',
          value: { type: 'responseOk', value: { type: 'responseErr', value: { type: 'uint', value: 0 } } },
        },
        l: { type: 'list', value: [{ type: 'bool', value: true }] },
      },
    };
    const a = parseClarityValue(native);
    const b = parseClarityValue(simplified);
    expect(a).toEqual(b);
    expect(toHex(a)).toBe(toHex(b));
  });

  it('round-trips a stacks.js value through JSON (bigints sent as strings)', () => {
    const cv = Cl.tuple({
      amount: Cl.uint(2n ** 100n),
      who: Cl.contractPrincipal(SP, 'x'),
      memo: Cl.some(Cl.bufferFromHex('01')),
    });
    const json = JSON.parse(JSON.stringify(cv, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)));
    expect(toHex(parseClarityValue(json))).toBe(toHex(cv));
  });

  it('refuses a native boolean whose value contradicts its type', () => {
    expect(validationError({ type: 'true', value: false }).message).toMatch(/contradicts/);
    expect(parseClarityValue({ type: 'false', value: 'false' })).toEqual(Cl.bool(false));
  });

  it('insists that address is standard and contract is a contract principal', () => {
    expect(validationError({ type: 'address', value: `${SP}.x` }).message).toMatch(/standard principal/);
    expect(validationError({ type: 'contract', value: SP }).message).toMatch(/contract principal/);
  });
});

describe('parseClarityValue: integers', () => {
  it.each([
    ['uint', '340282366920938463463374607431768211455', 2n ** 128n - 1n],
    ['uint', '0', 0n],
    ['uint', '000123', 123n],
    ['int', '-170141183460469231731687303715884105728', -(2n ** 127n)],
    ['int', '170141183460469231731687303715884105727', 2n ** 127n - 1n],
    ['int', '-0', 0n],
    ['int', Number.MAX_SAFE_INTEGER, 2n ** 53n - 1n],
    ['int', -Number.MAX_SAFE_INTEGER, -(2n ** 53n - 1n)],
  ])('accepts %s %s', (type, value, expected) => {
    expect(parseClarityValue({ type, value })).toEqual({ type, value: expected });
  });

  it.each([
    ['uint', '340282366920938463463374607431768211456', /out of range for uint/],
    ['uint', '-1', /out of range for uint/],
    ['uint', -1, /out of range for uint/],
    ['int', '170141183460469231731687303715884105728', /out of range for int/],
    ['int', '-170141183460469231731687303715884105729', /out of range for int/],
    ['uint', '1'.repeat(100_000), /out of range/],
    ['uint', '1.5', /not a decimal integer/],
    ['uint', '1e3', /not a decimal integer/],
    ['uint', ' 5', /not a decimal integer/],
    ['uint', '+5', /not a decimal integer/],
    ['uint', '0x10', /not a decimal integer/],
    ['uint', '', /not a decimal integer/],
    ['uint', 1.5, /not a safe integer/],
    ['uint', 2 ** 53, /not a safe integer/],
    ['int', Number.NaN, /not a safe integer/],
    ['uint', true, /expected a decimal string or a safe integer/],
    ['uint', undefined, /missing value/],
  ])('refuses %s %j', (type, value, message) => {
    const err = validationError({ type, value });
    expect(err.message).toMatch(message);
    expect(err.message).toMatch(
      new RegExp(`^Failed to convert value to Clarity value of type "${type}" at clarityValue\\.value: `),
    );
    expect(err.details).toMatchObject({ valueType: type, path: 'clarityValue.value' });
  });
});

describe('parseClarityValue: other leaves', () => {
  it.each([
    [{ type: 'bool', value: 'yes' }, /expected true or false/],
    [{ type: 'bool', value: 1 }, /expected true or false/],
    [{ type: 'bool' }, /missing value/],
    [{ type: 'principal', value: `${SP.slice(0, -1)}A` }, /checksum/],
    [{ type: 'principal', value: 42 }, /expected a string/],
    [{ type: 'principal', value: `${SP}.9bad` }, /not a valid contract name/],
    [{ type: 'buffer', value: '0x123' }, /expected hex bytes/],
    [{ type: 'buffer', value: 'hello' }, /expected hex bytes/],
    [{ type: 'stringAscii', value: 'café' }, /character "é" at index 3 is not allowed/],
    [{ type: 'stringAscii', value: 'a\u0000b' }, /not allowed/],
    [{ type: 'stringAscii', value: 'a\u000bb' }, /not allowed/],
    [{ type: 'stringUtf8', value: 'bad \ud800 surrogate' }, /unpaired surrogate/],
    [{ type: 'stringUtf8', value: '\udc00' }, /unpaired surrogate/],
    [{ type: 'none', value: { type: 'uint', value: 1 } }, /none takes no value/],
    [{ type: 'some' }, /missing value/],
    [{ type: 'ok', value: null }, /missing value/],
    [{ type: 'list', value: { 0: { type: 'uint', value: 1 } } }, /expected an array/],
    [{ type: 'tuple', value: [] }, /expected an object/],
    [{ type: 'tuple', value: {} }, /at least one field/],
  ])('refuses %j', (input, message) => {
    expect(validationError(input).message).toMatch(message);
  });

  it('accepts ASCII whitespace Clarity allows and emoji in utf8', () => {
    expect(parseClarityValue({ type: 'string', value: 'a\tb\nc\rd\fe' })).toEqual(
      Cl.stringAscii('a\tb\nc\rd\fe'),
    );
    expect(parseClarityValue({ type: 'stringUtf8', value: '👍🏽' })).toEqual(Cl.stringUtf8('👍🏽'));
  });
});

describe('parseClarityValue: errors and paths', () => {
  it('reports an unsupported type with valueType and error', () => {
    const err = validationError({ type: 'foo', value: '1' });
    const error =
      'unsupported type; accepted types are uint, int, bool, principal, buffer, stringAscii, stringUtf8, list, tuple, none, some, responseOk, responseErr';
    expect(err.message).toBe(
      `Failed to convert value to Clarity value of type "foo" at clarityValue: ${error}`,
    );
    expect(err.details).toEqual({
      valueType: 'foo',
      error,
      path: 'clarityValue',
      acceptedTypes: [
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
      ],
    });
  });

  it.each(['constructor', '__proto__', 'toString', 'hasOwnProperty'])(
    'treats the type name %s as unsupported',
    (t) => {
      expect(validationError({ type: t, value: '1' }).details).toMatchObject({
        valueType: t,
        error: expect.stringMatching(/^unsupported type; accepted types are uint, /),
      });
    },
  );

  it('names the path of a nested failure', () => {
    const input = {
      type: 'tuple',
      value: { owner: { type: 'principal', value: 'nope' }, amount: { type: 'uint', value: '1' } },
    };
    const err = validationError(input, 'functionArgs[1]');
    expect(err.message).toMatch(/at functionArgs\[1\]\.value\.owner\.value: /);
    expect(err.details).toMatchObject({ valueType: 'principal', path: 'functionArgs[1].value.owner.value' });

    const listErr = validationError({
      type: 'list',
      value: [
        { type: 'uint', value: 1 },
        { type: 'uint', value: -1 },
      ],
    });
    expect(listErr.details).toMatchObject({ path: 'clarityValue.value[1].value' });
  });

  it.each([
    [42, 'clarityValue'],
    [null, 'clarityValue'],
    [[{ type: 'uint', value: 1 }], 'clarityValue'],
    [true, 'clarityValue'],
  ])('refuses the non-object input %j', (input, path) => {
    expect(validationError(input).message).toMatch(new RegExp(`^${path}: expected a Clarity value object`));
  });

  it('refuses a missing or non-string type', () => {
    expect(validationError({ value: '1' }).message).toMatch(/^clarityValue\.type: expected a string/);
    expect(validationError({ type: 1, value: '1' }).details).toMatchObject({ path: 'clarityValue.type' });
    expect(validationError({ type: 1, value: '1' }).message).toMatch(
      /\(uint, int, bool, .*\), got the number 1$/,
    );
  });

  it('decodes hex strings strictly and tags their errors with the path', () => {
    expect(parseClarityValue('0x0100000000000000000000000000000005')).toEqual(Cl.uint(5));
    const hexErr = catchGatewayError(() => parseClarityValue('0x012', 'functionArgs[0]'));
    expect(hexErr.code).toBe('INVALID_HEX_STRING');
    expect(hexErr.message).toMatch(/^functionArgs\[0\]: /);
    const decErr = catchGatewayError(() => parseClarityValue({ type: 'list', value: ['0x0300'] }));
    expect(decErr.code).toBe('DESERIALIZATION_ERROR');
    expect(decErr.message).toMatch(/^clarityValue\.value\[0\]: .*trailing/);
    expect(decErr.details).toEqual({ offset: 1, path: 'clarityValue.value[0]' });
    const plain = catchGatewayError(() => parseClarityValue('not hex', 'functionArgs[0]'));
    expect(plain.code).toBe('INVALID_HEX_STRING');
    // Says what was expected and what was got, and names the path once.
    expect(plain.message).toBe(
      'functionArgs[0]: expected a Clarity value object {type, value} or a 0x-prefixed hex string, got the string "not hex"',
    );
  });
});

describe('parseClarityValue: tuple keys and prototype safety', () => {
  it('refuses __proto__ as a key, as plain data, without touching any prototype', () => {
    const input = JSON.parse('{"type":"tuple","value":{"__proto__":{"type":"uint","value":"1"}}}');
    const err = validationError(input);
    expect(err.message).toMatch(/field name "__proto__" is not a valid Clarity name/);
    expect(({} as Record<string, unknown>)['type']).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty('value');
  });

  it('keeps keys such as constructor and toString as own data', () => {
    const cv = parseClarityValue({
      type: 'tuple',
      value: { constructor: { type: 'uint', value: 1 }, toString: { type: 'bool', value: true } },
    });
    expect(cv.type).toBe(ClarityType.Tuple);
    const data = (cv as { value: Record<string, unknown> }).value;
    expect(Object.hasOwn(data, 'constructor')).toBe(true);
    expect(data['constructor']).toEqual(Cl.uint(1));
    expect(data['toString']).toEqual(Cl.bool(true));
  });

  it.each(['1a', 'has space', 'a.b', '', 'a'.repeat(129), 'é'])('refuses the invalid key #%#', (key) => {
    expect(validationError({ type: 'tuple', value: { [key]: { type: 'uint', value: 1 } } }).message).toMatch(
      /is not a valid Clarity name/,
    );
  });

  it('accepts operator names and 128-char names as keys', () => {
    const value = { '<=': { type: 'uint', value: 1 }, ['k'.repeat(128)]: { type: 'uint', value: 2 } };
    expect(
      Object.keys((parseClarityValue({ type: 'tuple', value }) as { value: object }).value),
    ).toHaveLength(2);
  });
});

describe('parseClarityValue: nesting depth', () => {
  it('accepts 32 levels and refuses 33 (some chain)', () => {
    expect(() => parseClarityValue(someChain(31))).not.toThrow();
    expect(validationError(someChain(32)).message).toMatch(/nested deeper than 32 levels/);
  });

  it('accepts 32 levels of alternating lists and tuples (64 JSON levels)', () => {
    let v: unknown = { type: 'uint', value: 1 };
    for (let i = 0; i < 31; i++) {
      v = i % 2 === 0 ? { type: 'list', value: [v] } : { type: 'tuple', value: { k: v } };
    }
    expect(() => parseClarityValue(v)).not.toThrow();
    expect(validationError({ type: 'list', value: [v] }).message).toMatch(/nested deeper than 32/);
  });

  it('counts the depth of embedded hex with the JSON around it', () => {
    expect(() => parseClarityValue(someChain(29, `0x0a0a03`))).not.toThrow();
    const err = catchGatewayError(() => parseClarityValue(someChain(30, `0x0a0a03`)));
    expect(err.code).toBe('DESERIALIZATION_ERROR');
    expect(err.message).toMatch(/nested deeper than 32/);
  });

  it('refuses 100 000-deep JSON with VALIDATION_ERROR, not a RangeError', () => {
    expect(validationError(someChain(100_000)).message).toMatch(/nested deeper than 32/);
    let arr: unknown = [];
    for (let i = 0; i < 100_000; i++) arr = [arr];
    expect(validationError({ type: 'list', value: arr }).message).toMatch(/nested deeper than 32/);
    let obj: unknown = {};
    for (let i = 0; i < 100_000; i++) obj = { a: obj };
    expect(validationError({ type: 'tuple', value: obj }).message).toMatch(/nested deeper than 32/);
  });
});
