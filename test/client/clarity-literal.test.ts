/** The Clarity literal parser and its ABI-guided conversion (client/src). */
import { describe, expect, it } from 'vitest';
import {
  ArgumentTypeError,
  argumentFromText,
  formatAbiType,
  LiteralSyntaxError,
  literalToValue,
  parseClarityLiteral,
} from '../../client/src/index.js';

const A = 'SP3K8BC0PPEVCV7NZ6QSRWPQ2JE9E5B6N3PA0KBR9';
const plain = (text: string) => literalToValue(parseClarityLiteral(text), undefined, 'arg');

describe('parseClarityLiteral + literalToValue (no ABI)', () => {
  it.each([
    ['u100', { type: 'uint', value: '100' }],
    [
      'u340282366920938463463374607431768211455',
      { type: 'uint', value: '340282366920938463463374607431768211455' },
    ],
    ['-5', { type: 'int', value: '-5' }],
    ['true', { type: 'bool', value: true }],
    ['false', { type: 'bool', value: false }],
    [`'${A}.demo-token`, { type: 'principal', value: `${A}.demo-token` }],
    [`'${A}`, { type: 'principal', value: A }],
    [A, { type: 'principal', value: A }],
    ['"text"', { type: 'string-ascii', value: 'text' }],
    ['"a \\"q\\" \\n"', { type: 'string-ascii', value: 'a "q" \n' }],
    ['u"text é"', { type: 'string-utf8', value: 'text é' }],
    ['u"\\u{1F600}"', { type: 'string-utf8', value: '😀' }],
    ['0x0102', { type: 'buffer', value: '0x0102' }],
    ['0x', { type: 'buffer', value: '0x' }],
    ['none', { type: 'none' }],
    ['(some u1)', { type: 'some', value: { type: 'uint', value: '1' } }],
    ['(ok u1)', { type: 'ok', value: { type: 'uint', value: '1' } }],
    ['(err -1)', { type: 'err', value: { type: 'int', value: '-1' } }],
    [
      '(list u1 u2)',
      {
        type: 'list',
        value: [
          { type: 'uint', value: '1' },
          { type: 'uint', value: '2' },
        ],
      },
    ],
    ['(list)', { type: 'list', value: [] }],
    [
      '{a: u1, b: "x"}',
      { type: 'tuple', value: { a: { type: 'uint', value: '1' }, b: { type: 'string-ascii', value: 'x' } } },
    ],
    ['(tuple (a u1))', { type: 'tuple', value: { a: { type: 'uint', value: '1' } } }],
    [
      ' { n: (list (some {x: none})) } ',
      {
        type: 'tuple',
        value: {
          n: {
            type: 'list',
            value: [{ type: 'some', value: { type: 'tuple', value: { x: { type: 'none' } } } }],
          },
        },
      },
    ],
  ])('%s', (text, expected) => {
    expect(plain(text)).toEqual(expected);
  });

  it.each([
    ['u12x', 1, 'unexpected "x"'],
    ['(list u1 u2', 1, 'unclosed "("'],
    ['"abc', 1, 'unterminated string'],
    ['0x123', 1, 'even number of hex digits'],
    ['{a: u1 b: u2}', 8, 'expected "," or "}"'],
    ['(some)', 6, 'expected a value'],
    ['(frob u1)', 1, 'unknown form "(frob"'],
    ['maybe', 1, 'unknown word "maybe"'],
    ['u1 u2', 4, 'after the value'],
    ['', 1, 'end of the input'],
    ['{a: u1, a: u2}', 9, 'given twice'],
    ['"\\q"', 2, 'unknown escape'],
    [`'${A}.`, 44, 'expected a contract name'],
  ])('rejects %j naming position %i', (text, position, problem) => {
    let err: unknown;
    try {
      parseClarityLiteral(text);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(LiteralSyntaxError);
    expect((err as LiteralSyntaxError).column).toBe(position);
    expect((err as Error).message).toContain(problem);
    expect((err as Error).message).toContain(`at position ${position}`);
  });

  it('refuses nesting deeper than 32 levels without exhausting the stack', () => {
    const deep = `${'(some '.repeat(5000)}u1${')'.repeat(5000)}`;
    expect(() => parseClarityLiteral(deep)).toThrow(/nested deeper than 32/);
  });
});

describe('the ABI settles ambiguous literals and refuses wrong ones', () => {
  it('reads 5 as a uint where the ABI expects uint128, and refuses -5 there', () => {
    expect(literalToValue(parseClarityLiteral('5'), 'uint128', 'n')).toEqual({ type: 'uint', value: '5' });
    expect(() => literalToValue(parseClarityLiteral('-5'), 'uint128', 'n')).toThrow(ArgumentTypeError);
  });

  it('makes a string utf8 where the ABI says string-utf8, and wraps a bare value in some', () => {
    expect(literalToValue(parseClarityLiteral('"é"'), { 'string-utf8': { length: 9 } }, 's')).toEqual({
      type: 'string-utf8',
      value: 'é',
    });
    expect(literalToValue(parseClarityLiteral('u3'), { optional: 'uint128' }, 'o')).toEqual({
      type: 'some',
      value: { type: 'uint', value: '3' },
    });
    expect(
      literalToValue(parseClarityLiteral('(list 1 2)'), { list: { type: 'uint128', length: 3 } }, 'l'),
    ).toEqual({
      type: 'list',
      value: [
        { type: 'uint', value: '1' },
        { type: 'uint', value: '2' },
      ],
    });
  });

  it('refuses a literal of another type, naming the argument and the position', () => {
    expect(() => literalToValue(parseClarityLiteral('u1'), 'principal', 'argument "who"')).toThrow(
      'argument "who": expected principal, got a uint literal (at position 1)',
    );
    const tuple = { tuple: [{ name: 'a', type: 'uint128' }] };
    expect(() => literalToValue(parseClarityLiteral('{b: u1}'), tuple, 't')).toThrow('has no field "b"');
    expect(() => literalToValue(parseClarityLiteral('{a: true}'), tuple, 't')).toThrow(
      't.a: expected uint, got a bool (at position 5)',
    );
  });

  it('takes JSON for composite types in form fields', () => {
    const list = { list: { type: 'uint128', length: 3 } };
    expect(argumentFromText('[1, "2"]', list, 'l')).toEqual({
      type: 'list',
      value: [
        { type: 'uint', value: '1' },
        { type: 'uint', value: '2' },
      ],
    });
    const tuple = {
      tuple: [
        { name: 'a', type: 'uint128' },
        { name: 's', type: { 'string-ascii': { length: 5 } } },
      ],
    };
    expect(argumentFromText('{"a": 1, "s": "x"}', tuple, 't')).toEqual({
      type: 'tuple',
      value: { a: { type: 'uint', value: '1' }, s: { type: 'string-ascii', value: 'x' } },
    });
    expect(argumentFromText('{a: u1, s: "x"}', tuple, 't')).toEqual(
      argumentFromText('{"a": 1, "s": "x"}', tuple, 't'),
    );
    expect(argumentFromText('null', { optional: 'bool' }, 'o')).toEqual({ type: 'none' });
  });

  it('formats ABI types in Clarity notation', () => {
    expect(formatAbiType('uint128')).toBe('uint');
    expect(formatAbiType({ list: { type: { optional: 'bool' }, length: 3 } })).toBe(
      '(list 3 (optional bool))',
    );
    expect(formatAbiType({ tuple: [{ name: 'a', type: { buffer: { length: 4 } } }] })).toBe('{a: (buff 4)}');
    expect(formatAbiType({ response: { ok: 'bool', error: 'uint128' } })).toBe('(response bool uint)');
  });
});
