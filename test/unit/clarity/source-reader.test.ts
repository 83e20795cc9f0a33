import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ClaritySyntaxError,
  printClarity,
  readClarity,
  type SExpr,
} from '../../../src/clarity/source/index.js';

const atomName = fc
  .oneof(
    fc.stringMatching(/^[a-tv-z][a-z0-9-]{0,12}[?!]?$/),
    fc.constantFrom('+', '-', '*', '/', '<=', '>=', '<', '>', 'u', 'contract-call?', 'as-contract'),
  )
  .filter((s) => !/^u[0-9]+$/.test(s) && !/^-[0-9]/.test(s));
const contractName = fc.stringMatching(/^[a-z][a-z0-9-_]{0,20}$/);
const address = fc.stringMatching(/^S[PT][0-9A-Z]{10,39}$/);
const asciiString = fc.string({
  unit: fc.constantFrom('a', 'Z', ' ', '"', '\\', '\n', '\t', '\r', '\0', ';', '(', ')'),
});

const expr: fc.Arbitrary<SExpr> = fc.letrec<{ e: SExpr }>((tie) => ({
  e: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    atomName.map((name) => ({ kind: 'atom', name }) as const),
    fc.bigInt({ min: -(2n ** 127n), max: 2n ** 127n - 1n }).map((value) => ({ kind: 'int', value }) as const),
    fc.bigInt({ min: 0n, max: 2n ** 128n - 1n }).map((value) => ({ kind: 'uint', value }) as const),
    asciiString.map((value) => ({ kind: 'string', value, utf8: false }) as const),
    fc.string({ unit: 'binary' }).map((value) => ({ kind: 'string', value, utf8: true }) as const),
    fc
      .uint8Array({ maxLength: 20 })
      .map((b) => ({ kind: 'buffer', hex: Buffer.from(b).toString('hex') }) as const),
    fc
      .record({ address, contract: fc.option(contractName, { nil: undefined }) })
      .map((p) => ({ kind: 'principal', ...p }) as const),
    contractName.map((contract) => ({ kind: 'principal', address: undefined, contract }) as const),
    fc
      .record({
        address: fc.option(address, { nil: undefined }),
        contract: contractName,
        trait: contractName,
      })
      .map((p) => ({ kind: 'principal', ...p }) as const),
    fc.array(tie('e'), { maxLength: 5 }).map((items) => ({ kind: 'list', items }) as const),
    fc
      .uniqueArray(fc.record({ key: atomName, value: tie('e') }), { maxLength: 4, selector: (e) => e.key })
      .map((entries) => ({ kind: 'tuple', entries }) as const),
  ),
})).e;

describe('readClarity', () => {
  it('reads back every printed expression tree (round trip)', () => {
    fc.assert(
      fc.property(fc.array(expr, { maxLength: 4 }), (exprs) => {
        const source = exprs.map(printClarity).join('\n;; a comment between (forms)\n');
        expect(readClarity(source)).toEqual(exprs);
      }),
      { numRuns: 400 },
    );
  });

  it('never throws anything but ClaritySyntaxError on arbitrary text', () => {
    fc.assert(
      fc.property(
        fc.string({
          unit: fc.constantFrom('(', ')', '{', '}', '"', 'u', '0', 'x', "'", '.', ':', ',', '\\', ' ', 'a'),
        }),
        (text) => {
          try {
            readClarity(text);
          } catch (err) {
            expect(err).toBeInstanceOf(ClaritySyntaxError);
          }
        },
      ),
    );
  });

  it('reads a real definition with comments, tuples, principals and literals', () => {
    const [def] = readClarity(`;; header comment
      (define-public (f (who principal)) ;; trailing
        (begin
          (contract-call? 'SP2C2YFP12AJZB4MABJBAJ55XECVS7E4PMMZ89YZR.arkadiko-token transfer u10 tx-sender who none)
          (contract-call? .demo-token get-balance who)
          (ok {a: 1, b: u"caf\\u{e9} \\"x\\"", c: 0xDEADbeef, d: -7, e: 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM})))`);
    const body = (def as Extract<SExpr, { kind: 'list' }>).items[2] as Extract<SExpr, { kind: 'list' }>;
    expect(body.items[1]).toEqual({
      kind: 'list',
      items: [
        { kind: 'atom', name: 'contract-call?' },
        {
          kind: 'principal',
          address: 'SP2C2YFP12AJZB4MABJBAJ55XECVS7E4PMMZ89YZR',
          contract: 'arkadiko-token',
        },
        { kind: 'atom', name: 'transfer' },
        { kind: 'uint', value: 10n },
        { kind: 'atom', name: 'tx-sender' },
        { kind: 'atom', name: 'who' },
        { kind: 'atom', name: 'none' },
      ],
    });
    expect((body.items[2] as Extract<SExpr, { kind: 'list' }>).items[1]).toEqual({
      kind: 'principal',
      address: undefined,
      contract: 'demo-token',
    });
    const ok = (body.items[3] as Extract<SExpr, { kind: 'list' }>).items[1];
    expect(ok).toEqual({
      kind: 'tuple',
      entries: [
        { key: 'a', value: { kind: 'int', value: 1n } },
        { key: 'b', value: { kind: 'string', value: 'café "x"', utf8: true } },
        { key: 'c', value: { kind: 'buffer', hex: 'deadbeef' } },
        { key: 'd', value: { kind: 'int', value: -7n } },
        {
          key: 'e',
          value: {
            kind: 'principal',
            address: 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM',
            contract: undefined,
          },
        },
      ],
    });
  });

  it.each([
    ['(a b', "unclosed '('"],
    ['a)', "unexpected ')'"],
    ['"abc', 'unclosed string'],
    ['"\\q"', 'unknown escape'],
    ['0x123', 'whole bytes'],
    ['12ab', 'malformed number'],
    ['{a 1}', "':' after a tuple key"],
    ['{a: 1 b: 2}', "','"],
    ["'SP1.9bad", 'malformed contract name'],
    ["'SP1.a.b.c", 'malformed principal'],
  ])('rejects %s with a positioned error', (text, message) => {
    expect(() => readClarity(text)).toThrow(ClaritySyntaxError);
    expect(() => readClarity(text)).toThrow(message);
  });

  it('reads every contract in contracts/', async () => {
    const { readdir, readFile } = await import('node:fs/promises');
    const files = (await readdir('contracts')).filter((f) => f.endsWith('.clar'));
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) {
      const forms = readClarity(await readFile(`contracts/${f}`, 'utf8'));
      expect(forms.length).toBeGreaterThan(0);
      for (const form of forms) expect(form.kind).toBe('list');
    }
  });
});
