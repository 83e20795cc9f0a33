import { Cl, ClarityType, deserializeCV, serializeCV } from '@stacks/transactions';
import { describe, expect, it } from 'vitest';
import { decodeClarityBytes, decodeClarityHex } from '../../../src/clarity/index.js';
import { asciiHex, catchGatewayError, HASH, SP, ST, u32 } from './helpers.js';

const UINT_1 = `01${'00'.repeat(15)}01`;
const NONE = '09';

function decodeError(hex: string) {
  const err = catchGatewayError(() => decodeClarityHex(hex));
  expect(err.code).toBe('DESERIALIZATION_ERROR');
  return err;
}

describe('decodeClarityHex: valid values', () => {
  const samples = [
    Cl.int(-5),
    Cl.int(-(2n ** 127n)),
    Cl.int(2n ** 127n - 1n),
    Cl.uint(0),
    Cl.uint(2n ** 128n - 1n),
    Cl.bufferFromHex('deadBEEF'),
    Cl.buffer(new Uint8Array()),
    Cl.bool(true),
    Cl.bool(false),
    Cl.standardPrincipal(SP),
    Cl.contractPrincipal(ST, 'my-contract_v2'),
    Cl.ok(Cl.uint(7)),
    Cl.error(Cl.stringAscii('boom')),
    Cl.none(),
    Cl.some(Cl.list([Cl.int(1), Cl.int(2)])),
    Cl.list([]),
    Cl.tuple({ a: Cl.uint(1), 'b-c?': Cl.some(Cl.none()), constructor: Cl.bool(true) }),
    Cl.stringAscii('tab\there\nline\rcr\fff ~!'),
    Cl.stringUtf8('héllo wörld 😀 ✓'),
    Cl.stringUtf8(''),
  ];

  it.each(samples.map((cv) => [serializeCV(cv), cv] as const))(
    'decodes 0x%s exactly as deserializeCV does',
    (hex, cv) => {
      expect(decodeClarityHex(`0x${hex}`)).toEqual(deserializeCV(hex));
      expect(decodeClarityHex(`0x${hex}`)).toEqual(Cl.deserialize(serializeCV(cv)));
    },
  );

  it('keeps integers as bigint, buffers as lower-case hex and principals as c32 strings', () => {
    expect(decodeClarityHex(`0x${serializeCV(Cl.uint(2n ** 128n - 1n))}`)).toEqual({
      type: ClarityType.UInt,
      value: 2n ** 128n - 1n,
    });
    expect(decodeClarityHex('0x0200000002ABCD')).toEqual({ type: ClarityType.Buffer, value: 'abcd' });
    expect(decodeClarityHex(`0x0516${HASH}`)).toEqual({ type: ClarityType.PrincipalStandard, value: SP });
  });

  it('keeps a leading byte-order mark in string-utf8 (the library drops it)', () => {
    const hex = `0e${u32(4)}efbbbf41`;
    expect(decodeClarityHex(`0x${hex}`)).toEqual({ type: ClarityType.StringUTF8, value: '\ufeffA' });
    expect((deserializeCV(hex) as { value: string }).value).toBe('A');
  });

  it('decodes a 500 000-character string-ascii (the library overflows its stack)', () => {
    const hex = serializeCV(Cl.stringAscii('a'.repeat(500_000)));
    expect(() => deserializeCV(hex)).toThrow(RangeError);
    const cv = decodeClarityHex(`0x${hex}`) as { value: string };
    expect(cv.value).toHaveLength(500_000);
  });

  it('accepts a 128-byte contract name (the library insists on < 128)', () => {
    const name = 'a'.repeat(128);
    const hex = `0616${HASH}80${asciiHex(name)}`;
    expect(() => deserializeCV(hex)).toThrow();
    expect(decodeClarityHex(`0x${hex}`)).toEqual({
      type: ClarityType.PrincipalContract,
      value: `${SP}.${name}`,
    });
  });

  it('accepts Uint8Array input through decodeClarityBytes, including a view into a larger buffer', () => {
    const backing = Buffer.from(`ff03ff`, 'hex');
    expect(decodeClarityBytes(new Uint8Array(backing.buffer, backing.byteOffset + 1, 1))).toEqual(
      Cl.bool(true),
    );
  });
});

describe('decodeClarityHex: strictness', () => {
  it('refuses "0x" with no bytes', () => {
    expect(decodeError('0x').message).toMatch(/no bytes/);
  });

  it.each([
    ['a truncated uint', '0x0100', /truncated uint.*offset 0/],
    ['a truncated int', `0x00${'00'.repeat(15)}`, /truncated int/],
    [
      'a missing list item',
      `0x0b${u32(2)}02${u32(0)}`,
      /truncated data: expected a type byte at byte offset 10/,
    ],
    ['a truncated length prefix', '0x020000', /truncated buffer length prefix/],
    ['a truncated principal', `0x0516${HASH.slice(0, 20)}`, /truncated principal/],
    ['a truncated tuple key', `0x0c${u32(1)}05616263`, /tuple key length 5 overruns/],
    ['a some with nothing inside', '0x0a', /expected a type byte at byte offset 1/],
  ])('refuses %s', (_label, hex, message) => {
    expect(decodeError(hex).message).toMatch(message);
  });

  it.each([
    ['buffer', `0x02${u32(16)}abcd`, /buffer length 16 overruns the 2 remaining bytes at byte offset 0/],
    ['string-ascii', `0x0d${u32(3)}61`, /string-ascii length 3 overruns/],
    ['string-utf8', `0x0e${u32(9)}61`, /string-utf8 length 9 overruns/],
    ['list', `0x0b${u32(5)}0909`, /list of 5 items overruns the 2 remaining bytes/],
    ['tuple', `0x0c${u32(2)}016109`, /tuple of 2 fields overruns/],
    ['contract name', `0x0616${HASH}0a6162`, /contract name length 10 overruns/],
    ['list with a 4-billion length', '0x0bffffffff09', /list length 4294967295 exceeds/],
    ['buffer beyond the 1 MiB maximum', `0x02${u32(1024 * 1024 + 1)}00`, /buffer length 1048577 exceeds/],
  ])('refuses a %s length prefix that overruns', (_label, hex, message) => {
    expect(decodeError(hex).message).toMatch(message);
  });

  it.each([
    ['after a bool', '0x0300', 1, /1 trailing byte after the value at byte offset 1/],
    ['after a uint', `0x${UINT_1}0000`, 17, /2 trailing bytes/],
    ['after a complete list', `0x0b${u32(1)}0303`, 6, /trailing/],
  ])('refuses trailing bytes %s', (_label, hex, offset, message) => {
    const err = decodeError(hex);
    expect(err.message).toMatch(message);
    expect(err.details).toEqual({ offset });
  });

  it.each([
    ['0x0f', 0],
    ['0xff', 0],
    [`0x0b${u32(2)}0320`, 6],
    ['0x0a0a0a11', 3],
  ])('refuses an unknown type byte in %s at offset %i', (hex, offset) => {
    const err = decodeError(hex);
    expect(err.message).toMatch(/unknown Clarity type byte 0x[0-9a-f]{2}/);
    expect(err.details).toEqual({ offset });
  });

  it('reports bad hex as INVALID_HEX_STRING, not DESERIALIZATION_ERROR', () => {
    for (const hex of ['0x123', '0x0g', '0300', '']) {
      expect(catchGatewayError(() => decodeClarityHex(hex)).code).toBe('INVALID_HEX_STRING');
    }
  });

  describe('principals', () => {
    it('refuses a version byte of 32 or more', () => {
      expect(decodeError(`0x0520${HASH}`).message).toMatch(
        /principal version byte 32 is not below 32 at byte offset 1/,
      );
      expect(decodeError(`0x06ff${HASH}0161`).message).toMatch(/version byte 255/);
    });

    it.each([
      ['empty', '00', /contract name is empty/],
      ['longer than 128', `81${'61'.repeat(129)}`, /contract name length 129 exceeds 128/],
      ['starting with a digit', `04${asciiHex('1abc')}`, /contract name "1abc" is not a valid name/],
      ['holding a dot', `03${asciiHex('a.b')}`, /not a valid name/],
      ['holding a non-ASCII byte', '02 61e9'.replace(' ', ''), /not a valid name/],
    ])('refuses a contract name %s', (_label, nameHex, message) => {
      expect(decodeError(`0x0616${HASH}${nameHex}`).message).toMatch(message);
    });
  });

  describe('tuples', () => {
    it('refuses an empty tuple', () => {
      expect(decodeError(`0x0c${u32(0)}`).message).toMatch(/tuple has no fields/);
    });

    it('refuses a duplicate key, at the offset of the second one', () => {
      const err = decodeError(`0x0c${u32(2)}0161030161${NONE}`);
      expect(err.message).toMatch(/duplicate tuple key "a" at byte offset 8/);
    });

    it.each([
      ['__proto__', /tuple key "__proto__" is not a valid name/],
      ['1st', /not a valid name/],
      ['has space', /not a valid name/],
    ])('refuses the invalid key name %s', (key, message) => {
      const hex = `0x0c${u32(1)}${key.length.toString(16).padStart(2, '0')}${asciiHex(key)}03`;
      expect(decodeError(hex).message).toMatch(message);
    });

    it('refuses an empty key and a key longer than 128', () => {
      expect(decodeError(`0x0c${u32(1)}000303`).message).toMatch(/tuple key is empty/);
      expect(decodeError(`0x0c${u32(1)}81${'61'.repeat(129)}03`).message).toMatch(/exceeds 128/);
    });

    it('accepts operator names and "constructor" as keys, as own properties', () => {
      const cv = decodeClarityHex(`0x0c${u32(2)}013c03${'0b'}${asciiHex('constructor')}04`) as {
        value: Record<string, unknown>;
      };
      expect(Object.keys(cv.value)).toEqual(['<', 'constructor']);
      expect(Object.hasOwn(cv.value, 'constructor')).toBe(true);
      expect(cv.value['constructor']).toEqual(Cl.bool(false));
    });
  });

  describe('strings', () => {
    it.each([0x00, 0x07, 0x0b, 0x1f, 0x7f, 0x80, 0xff])('refuses byte 0x%s in a string-ascii', (byte) => {
      const b = byte.toString(16).padStart(2, '0');
      const err = decodeError(`0x0d${u32(3)}61${b}61`);
      expect(err.message).toMatch(new RegExp(`string-ascii holds byte 0x${b}.*at byte offset 6`));
    });

    it.each([
      ['a lone continuation byte', '80'],
      ['an invalid byte', 'ff'],
      ['an overlong encoding', 'c0af'],
      ['an encoded surrogate', 'eda080'],
      ['a truncated sequence', 'e282'],
    ])('refuses %s in a string-utf8', (_label, bytes) => {
      const err = decodeError(`0x0e${u32(bytes.length / 2)}${bytes}`);
      expect(err.message).toMatch(/string-utf8 is not valid UTF-8 at byte offset 5/);
    });
  });

  describe('nesting depth', () => {
    it('accepts a leaf at level 32 (31 wrappers) and refuses one at level 33', () => {
      expect(() => decodeClarityHex(`0x${'0a'.repeat(31)}03`)).not.toThrow();
      expect(decodeError(`0x${'0a'.repeat(32)}03`).message).toMatch(
        /nested deeper than 32 levels at byte offset 32/,
      );
    });

    it('counts lists and tuples as levels too', () => {
      const list = `0b${u32(1)}`;
      const tuple = `0c${u32(1)}0161`;
      expect(() => decodeClarityHex(`0x${(list + tuple).repeat(15)}${list}03`)).not.toThrow();
      expect(decodeError(`0x${(list + tuple).repeat(16)}03`).message).toMatch(/nested deeper than 32/);
    });

    it('allows an empty list at level 32', () => {
      expect(() => decodeClarityHex(`0x${'07'.repeat(31)}0b${u32(0)}`)).not.toThrow();
    });

    it('refuses a 100 000-deep value with DESERIALIZATION_ERROR, not a RangeError', () => {
      expect(() => deserializeCV(`${'0a'.repeat(100_000)}03`)).toThrow(RangeError);
      expect(decodeError(`0x${'0a'.repeat(100_000)}03`).message).toMatch(/nested deeper than 32/);
      expect(decodeError(`0x${`0b${u32(1)}`.repeat(100_000)}03`).message).toMatch(/nested deeper than 32/);
    });

    it('starts deeper when told the value is embedded (startLevel)', () => {
      expect(() => decodeClarityHex(`0x${'0a'.repeat(2)}03`, { startLevel: 30 })).not.toThrow();
      expect(
        catchGatewayError(() => decodeClarityHex(`0x${'0a'.repeat(3)}03`, { startLevel: 30 })).code,
      ).toBe('DESERIALIZATION_ERROR');
    });
  });

  it('shows that the library alone accepts what the strict decoder refuses', () => {
    // The reason this module exists: each of these "decodes" with @stacks/transactions.
    for (const hex of ['0100', '0300ff', '0200000010ab', '0e00000001ff']) {
      expect(() => deserializeCV(hex)).not.toThrow();
      decodeError(`0x${hex}`);
    }
  });
});
