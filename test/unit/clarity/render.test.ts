import { Cl, type ClarityValue } from '@stacks/transactions';
import { describe, expect, it } from 'vitest';
import {
  decodeClarityHex,
  type RenderOptions,
  renderClarityValue,
  toHex,
} from '../../../src/clarity/index.js';
import { catchGatewayError, SP } from './helpers.js';

const DECODE: RenderOptions = { integers: 'decode', strictJsonCompat: true, preserveContainers: false };
const READ_ONLY: RenderOptions = { integers: 'read-only', strictJsonCompat: true, preserveContainers: false };
const READ_ONLY_LOOSE: RenderOptions = {
  integers: 'read-only',
  strictJsonCompat: false,
  preserveContainers: false,
};
const PRESERVE: RenderOptions = { ...DECODE, preserveContainers: true };

const SAFE = 2n ** 53n - 1n;

describe('renderClarityValue: integers', () => {
  it.each<[string, ClarityValue, RenderOptions, unknown]>([
    ['decode: small uint is a number', Cl.uint(5), DECODE, 5],
    ['decode: 2^53-1 is a number', Cl.uint(SAFE), DECODE, Number.MAX_SAFE_INTEGER],
    ['decode: 2^53 is a string', Cl.uint(SAFE + 1n), DECODE, '9007199254740992'],
    ['decode: -(2^53-1) is a number', Cl.int(-SAFE), DECODE, -Number.MAX_SAFE_INTEGER],
    ['decode: -2^53 is a string', Cl.int(-SAFE - 1n), DECODE, '-9007199254740992'],
    [
      'decode: max uint128 is a string',
      Cl.uint(2n ** 128n - 1n),
      DECODE,
      '340282366920938463463374607431768211455',
    ],
    [
      'decode ignores strictJsonCompat=false',
      Cl.uint(SAFE + 1n),
      { ...DECODE, strictJsonCompat: false },
      '9007199254740992',
    ],
    ['read-only: small uint is a string', Cl.uint(5), READ_ONLY, '5'],
    ['read-only: negative int is a string', Cl.int(-5), READ_ONLY, '-5'],
    ['read-only loose: small uint is a number', Cl.uint(5), READ_ONLY_LOOSE, 5],
    ['read-only loose: 2^53-1 is a number', Cl.int(SAFE), READ_ONLY_LOOSE, Number.MAX_SAFE_INTEGER],
    ['read-only loose: 2^53 is a string', Cl.uint(SAFE + 1n), READ_ONLY_LOOSE, '9007199254740992'],
    [
      'read-only loose: min int128 is a string',
      Cl.int(-(2n ** 127n)),
      READ_ONLY_LOOSE,
      '-170141183460469231731687303715884105728',
    ],
  ])('%s', (_label, cv, opts, expected) => {
    expect(renderClarityValue(cv, opts)).toStrictEqual(expected);
  });

  it('accepts integer values held as number or string (stacks.js allows both)', () => {
    expect(renderClarityValue({ type: 'uint', value: 7 } as ClarityValue, DECODE)).toBe(7);
    expect(renderClarityValue({ type: 'int', value: '-9' } as ClarityValue, READ_ONLY)).toBe('-9');
  });
});

describe('renderClarityValue: other kinds', () => {
  it.each<[string, ClarityValue, unknown]>([
    ['true', Cl.bool(true), true],
    ['false', Cl.bool(false), false],
    ['buffer as 0x hex', Cl.bufferFromHex('00ff'), '0x00ff'],
    ['empty buffer', Cl.bufferFromHex(''), '0x'],
    ['standard principal', Cl.standardPrincipal(SP), SP],
    ['contract principal', Cl.contractPrincipal(SP, 'token'), `${SP}.token`],
    ['string-ascii as text', Cl.stringAscii('hello'), 'hello'],
    ['string-utf8 as text', Cl.stringUtf8('héllo 😀'), 'héllo 😀'],
    ['list as array', Cl.list([Cl.uint(1), Cl.bool(false)]), [1, false]],
    ['tuple as object', Cl.tuple({ a: Cl.uint(1), b: Cl.list([]) }), { a: 1, b: [] }],
    ['none as null', Cl.none(), null],
    ['some unwrapped', Cl.some(Cl.uint(3)), 3],
    ['ok unwrapped', Cl.ok(Cl.some(Cl.stringAscii('x'))), 'x'],
    ['nested responseOk wrapping a uint', Cl.ok(Cl.ok(Cl.uint(9))), 9],
  ])('%s', (_label, cv, expected) => {
    expect(renderClarityValue(cv, DECODE)).toStrictEqual(expected);
  });

  it('renders a serialized string value as its text (decode endpoint example)', () => {
    const hex = toHex(Cl.stringAscii('hello world'));
    expect(renderClarityValue(decodeClarityHex(hex), DECODE)).toBe('hello world');
  });
});

describe('renderClarityValue: err responses', () => {
  it('raises err as CONTRACT_ERROR with the rendered inner value', () => {
    const err = catchGatewayError(() => renderClarityValue(Cl.error(Cl.uint(404)), READ_ONLY));
    expect(err.code).toBe('CONTRACT_ERROR');
    expect(err.status).toBe(422);
    expect(err.details).toEqual({ value: '404' });
    expect(err.message).toMatch(/\(err u404\)/);
  });

  it('raises an err found at any depth, rendering its value with the same options', () => {
    const cv = Cl.ok(
      Cl.tuple({
        a: Cl.list([Cl.uint(1), Cl.error(Cl.tuple({ code: Cl.uint(2), why: Cl.stringAscii('no') }))]),
      }),
    );
    const err = catchGatewayError(() => renderClarityValue(cv, DECODE));
    expect(err.code).toBe('CONTRACT_ERROR');
    expect(err.details).toEqual({ value: { code: 2, why: 'no' } });
  });

  it('raises the innermost err when one err holds another', () => {
    const err = catchGatewayError(() => renderClarityValue(Cl.error(Cl.error(Cl.uint(1))), DECODE));
    expect(err.details).toEqual({ value: 1 });
  });

  it('truncates a huge error value in the message but not in details', () => {
    const big = 'x'.repeat(5000);
    const err = catchGatewayError(() => renderClarityValue(Cl.error(Cl.stringAscii(big)), DECODE));
    expect(err.message.length).toBeLessThan(400);
    expect(err.details).toEqual({ value: big });
  });
});

describe('renderClarityValue: tuple order', () => {
  it('renders fields, and picks which err to raise, in byte order whatever the object order', () => {
    const built = Cl.tuple({ b: Cl.uint(2), B: Cl.uint(3), a: Cl.uint(1) });
    expect(Object.keys(renderClarityValue(built, DECODE) as object)).toEqual(['B', 'a', 'b']);
    const twoErrs = Cl.tuple({ z: Cl.error(Cl.uint(26)), y: Cl.error(Cl.uint(25)) });
    expect(catchGatewayError(() => renderClarityValue(twoErrs, DECODE)).details).toEqual({ value: 25 });
  });
});

describe('renderClarityValue: preserveContainers', () => {
  it('keeps some/none/ok/err as {type, value} and raises nothing', () => {
    expect(renderClarityValue(Cl.none(), PRESERVE)).toStrictEqual({ type: 'none', value: null });
    expect(renderClarityValue(Cl.some(Cl.uint(1)), PRESERVE)).toStrictEqual({ type: 'some', value: 1 });
    expect(renderClarityValue(Cl.ok(Cl.bool(true)), PRESERVE)).toStrictEqual({ type: 'ok', value: true });
    expect(renderClarityValue(Cl.error(Cl.uint(2)), PRESERVE)).toStrictEqual({ type: 'err', value: 2 });
  });

  it('applies inside lists and tuples, with the integer mode still in force', () => {
    const cv = Cl.ok(Cl.tuple({ xs: Cl.list([Cl.some(Cl.uint(1)), Cl.none()]), e: Cl.error(Cl.int(-1)) }));
    expect(renderClarityValue(cv, { ...PRESERVE, integers: 'read-only' })).toStrictEqual({
      type: 'ok',
      value: {
        xs: [
          { type: 'some', value: '1' },
          { type: 'none', value: null },
        ],
        e: { type: 'err', value: '-1' },
      },
    });
  });
});

describe('renderClarityValue: tuple keys are plain data', () => {
  it('keeps a __proto__ key as an own enumerable property without changing the prototype', () => {
    const data: Record<string, ClarityValue> = {};
    Object.defineProperty(data, '__proto__', {
      value: Cl.uint(1),
      enumerable: true,
      writable: true,
      configurable: true,
    });
    data['constructor'] = Cl.stringAscii('c');
    const out = renderClarityValue({ type: 'tuple', value: data } as ClarityValue, DECODE) as Record<
      string,
      unknown
    >;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.hasOwn(out, '__proto__')).toBe(true);
    expect(Object.getOwnPropertyDescriptor(out, '__proto__')?.value).toBe(1);
    expect(Object.keys(out)).toEqual(['__proto__', 'constructor']);
    expect(JSON.stringify(out)).toBe('{"__proto__":1,"constructor":"c"}');
    expect(({} as Record<string, unknown>)['constructor']).toBe(Object);
  });
});

describe('renderClarityValue: unknown types', () => {
  it('refuses a value of unknown type as an internal error', () => {
    expect(
      catchGatewayError(() => renderClarityValue({ type: 'bogus' } as unknown as ClarityValue, DECODE)).code,
    ).toBe('INTERNAL_ERROR');
  });
});
