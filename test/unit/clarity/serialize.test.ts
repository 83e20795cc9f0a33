import { Cl, type ClarityValue, serializeCV } from '@stacks/transactions';
import { describe, expect, it } from 'vitest';
import {
  decodeClarityHex,
  parseClarityValue,
  type RenderOptions,
  renderClarityValue,
  toHex,
} from '../../../src/clarity/index.js';
import { catchGatewayError, SP, ST } from './helpers.js';

const DECODE: RenderOptions = { integers: 'decode', strictJsonCompat: true, preserveContainers: false };

/** One simplified input per Clarity type, with what it must render to after a hex round trip. */
const ROUND_TRIPS: Array<[string, unknown, unknown]> = [
  [
    'uint',
    { type: 'uint', value: '340282366920938463463374607431768211455' },
    '340282366920938463463374607431768211455',
  ],
  ['int', { type: 'int', value: -42 }, -42],
  ['bool', { type: 'bool', value: true }, true],
  ['standard principal', { type: 'principal', value: ST }, ST],
  ['contract principal', { type: 'principal', value: `${SP}.a-b_c` }, `${SP}.a-b_c`],
  ['buffer', { type: 'buffer', value: '0x0001fe' }, '0x0001fe'],
  ['string-ascii', { type: 'stringAscii', value: 'Hello, World! ~' }, 'Hello, World! ~'],
  ['string-utf8', { type: 'stringUtf8', value: 'Grüße, 世界 🌍' }, 'Grüße, 世界 🌍'],
  [
    'list',
    {
      type: 'list',
      value: [
        { type: 'int', value: 1 },
        { type: 'int', value: 2 },
      ],
    },
    [1, 2],
  ],
  [
    'tuple',
    { type: 'tuple', value: { z: { type: 'none' }, a: { type: 'bool', value: false } } },
    { a: false, z: null },
  ],
  ['none', { type: 'none' }, null],
  ['some', { type: 'some', value: { type: 'uint', value: 1 } }, 1],
  ['ok', { type: 'responseOk', value: { type: 'uint', value: '5' } }, 5],
];

describe('round trips: parse -> toHex -> strict decode -> render', () => {
  it.each(ROUND_TRIPS)('%s', (_label, input, rendered) => {
    const cv = parseClarityValue(input);
    const hex = toHex(cv);
    expect(hex).toMatch(/^0x[0-9a-f]+$/);
    const back = decodeClarityHex(hex);
    expect(back).toEqual(cv);
    expect(toHex(back)).toBe(hex);
    expect(renderClarityValue(back, DECODE)).toStrictEqual(rendered);
  });

  it('err round-trips and then raises CONTRACT_ERROR', () => {
    const hex = toHex(parseClarityValue({ type: 'responseErr', value: { type: 'uint', value: 3 } }));
    expect(hex).toBe(`0x0801${'00'.repeat(15)}03`);
    expect(catchGatewayError(() => renderClarityValue(decodeClarityHex(hex), DECODE)).details).toEqual({
      value: 3,
    });
  });
});

describe('toHex', () => {
  const sameAsLibrary: ClarityValue[] = [
    Cl.int(-(2n ** 127n)),
    Cl.int(-1),
    Cl.uint(2n ** 128n - 1n),
    Cl.bufferFromHex('cafe'),
    Cl.bool(false),
    Cl.standardPrincipal(SP),
    Cl.contractPrincipal(ST, 'x'),
    Cl.error(Cl.none()),
    Cl.ok(Cl.some(Cl.list([Cl.stringUtf8('ü'), Cl.stringUtf8('')]))),
    Cl.tuple({ only: Cl.stringAscii('one field') }),
    Cl.tuple({ a: Cl.uint(1), b: Cl.uint(2), c: Cl.uint(3) }),
  ];

  it.each(sameAsLibrary.map((cv) => [serializeCV(cv), cv] as const))(
    'matches serializeCV for 0x%s',
    (hex, cv) => {
      expect(toHex(cv)).toBe(`0x${hex}`);
    },
  );

  it('orders tuple fields by bytes, as Clarity does, whatever the insertion order or locale', () => {
    const fields = { b: Cl.uint(1), a_b: Cl.uint(2), 'a-b': Cl.uint(3), B: Cl.uint(4), a: Cl.uint(5) };
    const hex = toHex(Cl.tuple(fields));
    const decoded = decodeClarityHex(hex) as { value: object };
    expect(Object.keys(decoded.value)).toEqual(['B', 'a', 'a-b', 'a_b', 'b']);
    const reversed = Object.fromEntries(Object.entries(fields).reverse());
    expect(toHex(Cl.tuple(reversed))).toBe(hex);
    // stacks.js sorts with localeCompare ("a" before "B"), which is not Clarity's order.
    expect(`0x${serializeCV(Cl.tuple(fields))}`).not.toBe(hex);
  });

  it('gives simplified and native forms of one value the same hex', () => {
    expect(toHex(parseClarityValue({ type: 'stringAscii', value: 'x' }))).toBe(
      toHex(parseClarityValue({ type: 'ascii', value: 'x' })),
    );
    expect(toHex(parseClarityValue({ type: 'buffer', value: '0xAB' }))).toBe(
      toHex(parseClarityValue({ type: 'buffer', value: 'ab' })),
    );
  });

  it.each<[string, unknown]>([
    ['uint out of range', { type: 'uint', value: 2n ** 128n }],
    ['negative uint', { type: 'uint', value: -1n }],
    ['int out of range', { type: 'int', value: 2n ** 127n }],
    ['non-integer', { type: 'int', value: 1.5 }],
    ['odd buffer hex', { type: 'buffer', value: 'abc' }],
    ['non-hex buffer', { type: 'buffer', value: 'zz' }],
    ['non-ASCII string-ascii (stacks.js would truncate it)', { type: 'ascii', value: 'é' }],
    ['lone surrogate', { type: 'utf8', value: '\ud800' }],
    ['bad principal', { type: 'address', value: 'SP123' }],
    ['contract principal without a name', { type: 'contract', value: SP }],
    ['empty tuple', { type: 'tuple', value: {} }],
    ['invalid tuple key', { type: 'tuple', value: { '1x': Cl.uint(1) } }],
    ['unknown type', { type: 'float', value: 1 }],
  ])('refuses an invalid value: %s', (_label, cv) => {
    expect(catchGatewayError(() => toHex(cv as ClarityValue)).code).toBe('VALIDATION_ERROR');
  });

  it('refuses values nested deeper than 32 levels', () => {
    let cv: ClarityValue = Cl.uint(1);
    for (let i = 0; i < 31; i++) cv = Cl.some(cv);
    expect(() => toHex(cv)).not.toThrow();
    expect(catchGatewayError(() => toHex(Cl.some(cv))).message).toMatch(/deeper than 32/);
  });
});
