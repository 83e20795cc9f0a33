/**
 * Property tests: random Clarity values survive encode/decode/render unchanged, and random or
 * damaged bytes never make the decoder fail with anything but a GatewayError of the right code.
 */
import { type ClarityValue, deserializeCV } from '@stacks/transactions';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  bytesToHex,
  decodeClarityBytes,
  decodeClarityHex,
  encodeAddress,
  parseClarityValue,
  type RenderOptions,
  renderClarityValue,
  toHex,
} from '../../../src/clarity/index.js';
import { GatewayError } from '../../../src/errors.js';

// ---- arbitraries ---------------------------------------------------------------------------

const ASCII_CHARS = [
  '\t',
  '\n',
  '\f',
  '\r',
  ...Array.from({ length: 0x7f - 0x20 }, (_, i) => String.fromCharCode(0x20 + i)),
];

const clarityName = fc.oneof(
  fc.stringMatching(/^[a-zA-Z][a-zA-Z0-9\-_!?+<>=/*]{0,12}$/),
  fc.constantFrom('+', '-', '*', '/', '<', '<=', '>', '>=', '=', 'constructor', 'toString', 'valueOf'),
);
const contractName = fc.oneof(
  { weight: 9, arbitrary: fc.stringMatching(/^[a-zA-Z][a-zA-Z0-9\-_]{0,39}$/) },
  { weight: 1, arbitrary: fc.constant('z'.repeat(128)) },
);
const address = fc
  .record({ version: fc.integer({ min: 0, max: 31 }), hash: fc.uint8Array({ minLength: 20, maxLength: 20 }) })
  .map(({ version, hash }) => encodeAddress(version, bytesToHex(hash)));
const utf8Text = fc
  .string({ unit: 'binary', maxLength: 12 })
  .filter((s) => !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s));

const leaf: fc.Arbitrary<ClarityValue> = fc.oneof(
  fc
    .bigInt({ min: -(2n ** 127n), max: 2n ** 127n - 1n })
    .map((value) => ({ type: 'int', value }) as ClarityValue),
  fc.bigInt({ min: 0n, max: 2n ** 128n - 1n }).map((value) => ({ type: 'uint', value }) as ClarityValue),
  fc
    .constantFrom(-(2n ** 53n), -(2n ** 53n) + 1n, 2n ** 53n - 1n, 2n ** 53n)
    .map((value) => ({ type: 'int', value }) as ClarityValue),
  fc.uint8Array({ maxLength: 24 }).map((b) => ({ type: 'buffer', value: bytesToHex(b) }) as ClarityValue),
  fc.boolean().map((b) => ({ type: b ? 'true' : 'false' }) as ClarityValue),
  address.map((value) => ({ type: 'address', value }) as ClarityValue),
  fc.tuple(address, contractName).map(([a, n]) => ({ type: 'contract', value: `${a}.${n}` }) as ClarityValue),
  fc
    .string({ unit: fc.constantFrom(...ASCII_CHARS), maxLength: 16 })
    .map((value) => ({ type: 'ascii', value }) as ClarityValue),
  utf8Text.map((value) => ({ type: 'utf8', value }) as ClarityValue),
  fc.constant({ type: 'none' } as ClarityValue),
);

const { value: clarityValue } = fc.letrec<{ value: ClarityValue }>((tie) => ({
  value: fc.oneof(
    { maxDepth: 6, depthIdentifier: 'cv' },
    leaf,
    tie('value').map((value) => ({ type: 'some', value }) as ClarityValue),
    tie('value').map((value) => ({ type: 'ok', value }) as ClarityValue),
    tie('value').map((value) => ({ type: 'err', value }) as ClarityValue),
    fc
      .array(tie('value'), { maxLength: 4, depthIdentifier: 'cv' })
      .map((value) => ({ type: 'list', value }) as ClarityValue),
    fc
      .dictionary(clarityName, tie('value'), {
        minKeys: 1,
        maxKeys: 4,
        noNullPrototype: true,
        depthIdentifier: 'cv',
      })
      .map((value) => ({ type: 'tuple', value }) as ClarityValue),
  ),
}));

// ---- helpers ---------------------------------------------------------------------------------

const MODES: RenderOptions[] = [
  { integers: 'decode', strictJsonCompat: true, preserveContainers: false },
  { integers: 'read-only', strictJsonCompat: true, preserveContainers: false },
  { integers: 'read-only', strictJsonCompat: false, preserveContainers: true },
];

/** The rendering, or the CONTRACT_ERROR it raises, as comparable data. */
function outcome(cv: ClarityValue, opts: RenderOptions): unknown {
  try {
    return { ok: renderClarityValue(cv, opts) };
  } catch (err) {
    if (err instanceof GatewayError) return { code: err.code, details: err.details };
    throw err;
  }
}

/** Decoder outcome: a value, or the code of the GatewayError. Anything else fails the test. */
function decodeOutcome(run: () => ClarityValue): ClarityValue | string {
  try {
    return run();
  } catch (err) {
    if (err instanceof GatewayError) return err.code;
    throw err;
  }
}

/** The simplified JSON form of a value (numbers where safe, else strings). */
function toSimplified(cv: ClarityValue): unknown {
  switch (cv.type) {
    case 'int':
    case 'uint': {
      const n = BigInt(cv.value);
      return {
        type: cv.type,
        value: n >= -(2n ** 53n - 1n) && n <= 2n ** 53n - 1n ? Number(n) : n.toString(),
      };
    }
    case 'true':
    case 'false':
      return { type: 'bool', value: cv.type === 'true' };
    case 'buffer':
      return { type: 'buffer', value: `0x${cv.value.toUpperCase()}` };
    case 'address':
    case 'contract':
      return { type: 'principal', value: cv.value };
    case 'ascii':
      return { type: 'stringAscii', value: cv.value };
    case 'utf8':
      return { type: 'string-utf8', value: cv.value };
    case 'none':
      return { type: 'none' };
    case 'some':
      return { type: 'optional', value: toSimplified(cv.value) };
    case 'ok':
      return { type: 'responseOk', value: toSimplified(cv.value) };
    case 'err':
      return { type: 'response-err', value: toSimplified(cv.value) };
    case 'list':
      return { type: 'list', value: cv.value.map(toSimplified) };
    case 'tuple':
      return {
        type: 'tuple',
        value: Object.fromEntries(Object.entries(cv.value).map(([k, v]) => [k, toSimplified(v)])),
      };
  }
}

/** stacks.js JSON: the value itself with bigints as strings. */
function toNative(cv: ClarityValue): unknown {
  return JSON.parse(JSON.stringify(cv, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)));
}

/** Whether @stacks/transactions can decode the value faithfully (see strict-decode.ts). */
function libraryCompatible(cv: ClarityValue): boolean {
  switch (cv.type) {
    case 'contract':
      return cv.value.length - cv.value.indexOf('.') - 1 < 128;
    case 'utf8':
      return !cv.value.startsWith('\ufeff');
    case 'some':
    case 'ok':
    case 'err':
      return libraryCompatible(cv.value);
    case 'list':
      return cv.value.every(libraryCompatible);
    case 'tuple':
      return Object.values(cv.value).every(libraryCompatible);
    default:
      return true;
  }
}

// ---- properties ------------------------------------------------------------------------------

describe('property: encode/decode/render', () => {
  it('decode(encode(v)) renders exactly as v does, in every mode', () => {
    fc.assert(
      fc.property(clarityValue, (cv) => {
        const back = decodeClarityHex(toHex(cv));
        // toEqual, not toStrictEqual: the latter compares `.constructor`, which a tuple key
        // named "constructor" turns into ordinary data.
        for (const opts of MODES) expect(outcome(back, opts)).toEqual(outcome(cv, opts));
      }),
      { numRuns: 300 },
    );
  });

  it('decode(encode(v)) equals v and re-encodes to the same canonical hex', () => {
    fc.assert(
      fc.property(clarityValue, (cv) => {
        const hex = toHex(cv);
        const back = decodeClarityHex(hex);
        expect(back).toEqual(cv);
        expect(toHex(back)).toBe(hex);
      }),
      { numRuns: 300 },
    );
  });

  it('the strict decoder agrees with deserializeCV on every valid encoding the library can read', () => {
    fc.assert(
      fc.property(clarityValue, (cv) => {
        fc.pre(libraryCompatible(cv));
        const hex = toHex(cv);
        expect(decodeClarityHex(hex)).toEqual(deserializeCV(hex));
      }),
      { numRuns: 300 },
    );
  });

  it('simplified, native and hex inputs of one value give the same canonical hex', () => {
    fc.assert(
      fc.property(clarityValue, (cv) => {
        const hex = toHex(cv);
        expect(toHex(parseClarityValue(toSimplified(cv)))).toBe(hex);
        expect(toHex(parseClarityValue(toNative(cv)))).toBe(hex);
        expect(toHex(parseClarityValue(hex))).toBe(hex);
      }),
      { numRuns: 300 },
    );
  });
});

describe('property: hostile input', () => {
  it('random bytes either decode to a value that round-trips or fail with DESERIALIZATION_ERROR', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 80 }), (bytes) => {
        const result = decodeOutcome(() => decodeClarityBytes(bytes));
        if (typeof result === 'string') {
          expect(result).toBe('DESERIALIZATION_ERROR');
        } else {
          expect(decodeClarityHex(toHex(result))).toEqual(result);
        }
      }),
      { numRuns: 3000 },
    );
  });

  it('random bytes behind a plausible type byte never escape as anything but DESERIALIZATION_ERROR', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 15 }), fc.uint8Array({ maxLength: 60 }), (type, rest) => {
        const result = decodeOutcome(() =>
          decodeClarityHex(`0x${type.toString(16).padStart(2, '0')}${bytesToHex(rest)}`),
        );
        if (typeof result === 'string') expect(result).toBe('DESERIALIZATION_ERROR');
      }),
      { numRuns: 3000 },
    );
  });

  it('every strict prefix of a valid encoding is refused (the encoding is prefix-free)', () => {
    fc.assert(
      fc.property(clarityValue, fc.nat(), (cv, cut) => {
        const bytes = decodeHex(toHex(cv));
        const prefix = bytes.subarray(0, cut % bytes.length);
        expect(decodeOutcome(() => decodeClarityBytes(prefix))).toBe('DESERIALIZATION_ERROR');
      }),
      { numRuns: 500 },
    );
  });

  it('any bytes appended to a valid encoding are refused as trailing bytes', () => {
    fc.assert(
      fc.property(clarityValue, fc.uint8Array({ minLength: 1, maxLength: 8 }), (cv, extra) => {
        const err = decodeOutcome(() => decodeClarityHex(toHex(cv) + bytesToHex(extra)));
        expect(err).toBe('DESERIALIZATION_ERROR');
      }),
      { numRuns: 300 },
    );
  });

  it('random byte mutations of a valid encoding decode or fail with DESERIALIZATION_ERROR only', () => {
    fc.assert(
      fc.property(
        clarityValue,
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }),
        (cv, edits) => {
          const bytes = Uint8Array.from(decodeHex(toHex(cv)));
          for (const [at, byte] of edits) bytes[at % bytes.length] = byte;
          const result = decodeOutcome(() => decodeClarityBytes(bytes));
          if (typeof result === 'string') expect(result).toBe('DESERIALIZATION_ERROR');
          else expect(decodeClarityHex(toHex(result))).toEqual(result);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('random strings give INVALID_HEX_STRING, DESERIALIZATION_ERROR or a value', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.string().map((s) => `0x${s}`),
          fc.stringMatching(/^0x[0-9a-fA-F]*$/),
        ),
        (s) => {
          const result = decodeOutcome(() => decodeClarityHex(s));
          if (typeof result === 'string')
            expect(['INVALID_HEX_STRING', 'DESERIALIZATION_ERROR']).toContain(result);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('random JSON given as a Clarity value never fails with anything but an input error', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (json) => {
        const result = decodeOutcome(() => parseClarityValue(json));
        if (typeof result === 'string') {
          expect(['VALIDATION_ERROR', 'INVALID_HEX_STRING', 'DESERIALIZATION_ERROR']).toContain(result);
        }
      }),
      { numRuns: 500 },
    );
  });
});

function decodeHex(hex: string): Uint8Array {
  return Uint8Array.from(Buffer.from(hex.slice(2), 'hex'));
}
