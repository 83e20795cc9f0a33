import { Cl, type ClarityValue } from '@stacks/transactions';
import { describe, expect, it } from 'vitest';
import { type AbiFunction, type AbiType, checkArguments, describeType } from '../../../src/clarity/index.js';
import { catchGatewayError, SP, ST } from './helpers.js';

const CONTRACT = `${SP}.demo`;

function fn(...types: AbiType[]): AbiFunction {
  return {
    name: 'f',
    access: 'read_only',
    args: types.map((type, i) => ({ name: `arg${i}`, type })),
    outputs: { type: 'bool' },
  };
}

function mismatch(cv: ClarityValue, type: AbiType): string {
  const err = catchGatewayError(() => checkArguments([cv], fn(type), CONTRACT));
  expect(err.code).toBe('INVALID_ARGUMENTS');
  expect(err.details).toMatchObject({ argument: 1, name: 'arg0', expected: type });
  const { path, reason } = err.details as { path: string; reason: string };
  // The path is named once in the message, followed by what was expected and got.
  expect(err.message.startsWith(`${path}: ${reason} (argument 1`)).toBe(true);
  return `${path}: ${reason}`;
}

const TUPLE: AbiType = {
  tuple: [
    { name: 'owner', type: 'principal' },
    { name: 'amount', type: 'uint128' },
  ],
};

describe('checkArguments: passing', () => {
  it.each<[string, AbiType, ClarityValue]>([
    ['uint128', 'uint128', Cl.uint(1)],
    ['int128', 'int128', Cl.int(-1)],
    ['bool', 'bool', Cl.bool(false)],
    ['principal (standard)', 'principal', Cl.standardPrincipal(SP)],
    ['principal (contract)', 'principal', Cl.contractPrincipal(SP, 'c')],
    ['trait_reference', 'trait_reference', Cl.contractPrincipal(ST, 'impl')],
    ['optional none', { optional: { list: { type: 'uint128', length: 1 } } }, Cl.none()],
    ['optional some', { optional: 'int128' }, Cl.some(Cl.int(1))],
    ['response ok', { response: { ok: 'bool', error: 'uint128' } }, Cl.ok(Cl.bool(true))],
    ['response err', { response: { ok: 'bool', error: 'uint128' } }, Cl.error(Cl.uint(1))],
    ['buffer at its bound', { buffer: { length: 2 } }, Cl.bufferFromHex('abcd')],
    ['empty buffer', { buffer: { length: 2 } }, Cl.bufferFromHex('')],
    ['string-ascii at its bound', { 'string-ascii': { length: 3 } }, Cl.stringAscii('abc')],
    [
      'string-utf8 counts code points, not bytes or UTF-16 units',
      { 'string-utf8': { length: 3 } },
      Cl.stringUtf8('é😀ü'),
    ],
    ['list at its bound', { list: { type: 'uint128', length: 2 } }, Cl.list([Cl.uint(1), Cl.uint(2)])],
    ['empty list', { list: { type: 'uint128', length: 2 } }, Cl.list([])],
    ['tuple', TUPLE, Cl.tuple({ amount: Cl.uint(5), owner: Cl.standardPrincipal(SP) })],
    [
      'nested',
      { list: { type: { optional: TUPLE }, length: 5 } },
      Cl.list([Cl.none(), Cl.some(Cl.tuple({ owner: Cl.contractPrincipal(SP, 'x'), amount: Cl.uint(0) }))]),
    ],
    ['an unknown future descriptor is left to the node', 'float64' as AbiType, Cl.uint(1)],
  ])('%s', (_label, type, cv) => {
    expect(() => checkArguments([cv], fn(type), CONTRACT)).not.toThrow();
  });

  it('accepts a function without arguments', () => {
    expect(() => checkArguments([], fn(), CONTRACT)).not.toThrow();
  });
});

describe('checkArguments: failing', () => {
  it.each<[string, AbiType, ClarityValue, RegExp]>([
    ['int for uint', 'uint128', Cl.int(1), /^functionArgs\[0\]: expected uint, got int 1$/],
    ['uint for int', 'int128', Cl.uint(1), /expected int, got uint/],
    ['uint for bool', 'bool', Cl.uint(1), /expected bool, got uint/],
    ['string for principal', 'principal', Cl.stringAscii(SP), /expected principal, got \(string-ascii/],
    [
      'standard principal for a trait',
      'trait_reference',
      Cl.standardPrincipal(SP),
      /expected trait_reference, got standard principal/,
    ],
    ['anything for NoType', 'none', Cl.none(), /expected none, got none/],
    ['bare value for optional', { optional: 'uint128' }, Cl.uint(1), /expected \(optional uint\), got uint/],
    [
      'some with the wrong inner type',
      { optional: 'uint128' },
      Cl.some(Cl.int(1)),
      /^functionArgs\[0\]\.value: expected uint, got int 1/,
    ],
    [
      'ok of the wrong type',
      { response: { ok: 'bool', error: 'uint128' } },
      Cl.ok(Cl.uint(1)),
      /^functionArgs\[0\]\.value: expected bool/,
    ],
    [
      'err of the wrong type',
      { response: { ok: 'bool', error: 'uint128' } },
      Cl.error(Cl.bool(true)),
      /^functionArgs\[0\]\.value: expected uint/,
    ],
    [
      'bare value for response',
      { response: { ok: 'bool', error: 'bool' } },
      Cl.bool(true),
      /expected \(response bool bool\)/,
    ],
    [
      'buffer over its bound',
      { buffer: { length: 2 } },
      Cl.bufferFromHex('abcdef'),
      /expected \(buff 2\), got a buffer of 3 bytes/,
    ],
    [
      'string for buffer',
      { buffer: { length: 2 } },
      Cl.stringAscii('ab'),
      /expected \(buff 2\), got \(string-ascii 2\)/,
    ],
    [
      'string-ascii over its bound',
      { 'string-ascii': { length: 3 } },
      Cl.stringAscii('abcd'),
      /expected \(string-ascii 3\), got a string of 4 characters/,
    ],
    ['utf8 for ascii', { 'string-ascii': { length: 3 } }, Cl.stringUtf8('ab'), /got \(string-utf8 2\)/],
    [
      'string-utf8 over its bound',
      { 'string-utf8': { length: 2 } },
      Cl.stringUtf8('😀😀😀'),
      /expected \(string-utf8 2\), got a string of 3 characters/,
    ],
    ['ascii for utf8', { 'string-utf8': { length: 2 } }, Cl.stringAscii('a'), /got \(string-ascii 1\)/],
    [
      'list over its bound',
      { list: { type: 'uint128', length: 1 } },
      Cl.list([Cl.uint(1), Cl.uint(2)]),
      /expected \(list 1 uint\), got a list of 2 items/,
    ],
    [
      'a bad list element',
      { list: { type: 'uint128', length: 3 } },
      Cl.list([Cl.uint(1), Cl.int(2)]),
      /^functionArgs\[0\]\.value\[1\]: expected uint, got int 2/,
    ],
    [
      'tuple missing a field',
      TUPLE,
      Cl.tuple({ owner: Cl.standardPrincipal(SP) }),
      /got a tuple without the field "amount"/,
    ],
    [
      'tuple with an extra field',
      TUPLE,
      Cl.tuple({ owner: Cl.standardPrincipal(SP), amount: Cl.uint(1), x: Cl.uint(1) }),
      /got a tuple with the unexpected field "x"/,
    ],
    [
      'tuple with a bad field',
      TUPLE,
      Cl.tuple({ owner: Cl.standardPrincipal(SP), amount: Cl.int(1) }),
      /^functionArgs\[0\]\.value\.amount: expected uint, got int 1/,
    ],
    [
      'list for tuple',
      TUPLE,
      Cl.list([]),
      /expected \(tuple \(owner principal\) \(amount uint\)\), got list of 0/,
    ],
  ])('%s', (_label, type, cv, message) => {
    expect(mismatch(cv, type)).toMatch(message);
  });

  it('reports a deep path through nested containers', () => {
    const type: AbiType = { list: { type: { optional: TUPLE }, length: 5 } };
    const cv = Cl.list([Cl.none(), Cl.some(Cl.tuple({ owner: Cl.uint(1), amount: Cl.uint(0) }))]);
    expect(mismatch(cv, type)).toBe(
      'functionArgs[0].value[1].value.value.owner: expected principal, got uint 1',
    );
  });

  it('refuses a wrong argument count', () => {
    const err = catchGatewayError(() => checkArguments([Cl.uint(1)], fn('uint128', 'bool'), CONTRACT));
    expect(err.code).toBe('INVALID_ARGUMENTS');
    expect(err.message).toBe(
      `functionArgs: f takes 2 arguments (arg0: uint, arg1: bool), got 1 (${CONTRACT})`,
    );
    expect(err.details).toEqual({
      function: 'f',
      contract: CONTRACT,
      expected: 2,
      received: 1,
      path: 'functionArgs',
      reason: 'f takes 2 arguments (arg0: uint, arg1: bool), got 1',
    });
    expect(catchGatewayError(() => checkArguments([Cl.uint(1)], fn(), CONTRACT)).code).toBe(
      'INVALID_ARGUMENTS',
    );
  });

  it('names the argument index and name in the message and details', () => {
    const err = catchGatewayError(() =>
      checkArguments([Cl.uint(1), Cl.uint(2)], fn('uint128', 'bool'), CONTRACT),
    );
    expect(err.message).toBe(
      `functionArgs[1]: expected bool, got uint 2 (argument 2, "arg1", of ${CONTRACT}::f is bool)`,
    );
    // The path appears once: not repeated by the argument's own prefix.
    expect(err.message.split('functionArgs[1]').length).toBe(2);
    expect(err.details).toEqual({
      function: 'f',
      contract: CONTRACT,
      argument: 2,
      name: 'arg1',
      expected: 'bool',
      path: 'functionArgs[1]',
      reason: 'expected bool, got uint 2',
    });
  });
});

describe('describeType', () => {
  it.each<[AbiType, string]>([
    ['uint128', 'uint'],
    ['int128', 'int'],
    ['bool', 'bool'],
    ['principal', 'principal'],
    ['trait_reference', 'trait_reference'],
    [{ optional: 'uint128' }, '(optional uint)'],
    [{ response: { ok: 'bool', error: 'int128' } }, '(response bool int)'],
    [{ buffer: { length: 32 } }, '(buff 32)'],
    [{ 'string-ascii': { length: 10 } }, '(string-ascii 10)'],
    [{ 'string-utf8': { length: 5 } }, '(string-utf8 5)'],
    [{ list: { type: 'uint128', length: 10 } }, '(list 10 uint)'],
    [TUPLE, '(tuple (owner principal) (amount uint))'],
  ])('%j -> %s', (type, text) => {
    expect(describeType(type)).toBe(text);
  });
});
