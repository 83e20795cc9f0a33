import { describe, expect, it } from 'vitest';
import { abiShapeProblem, isContractAbi } from '../../../src/clarity/abi-shape.js';
import { SAMPLE_ABI } from '../../support/fixtures.js';

const fn = (overrides: Record<string, unknown>) => ({
  ...SAMPLE_ABI,
  functions: [{ name: 'f', access: 'read_only', args: [], outputs: { type: 'bool' }, ...overrides }],
});

describe('abiShapeProblem', () => {
  it('accepts a real ABI, an empty one, and type names it does not know (a newer Clarity)', () => {
    expect(abiShapeProblem(SAMPLE_ABI)).toBeUndefined();
    expect(abiShapeProblem({ functions: [] })).toBeUndefined();
    expect(abiShapeProblem(fn({ args: [{ name: 'x', type: 'some-future-type' }] }))).toBeUndefined();
    expect(isContractAbi(SAMPLE_ABI)).toBe(true);
  });

  it.each([
    ['not an object', null, 'the ABI is not an object'],
    ['an array', [], 'the ABI is not an object'],
    ['no functions', { maps: [] }, 'the ABI has no "functions" array'],
    ['functions: [null]', { functions: [null] }, 'functions[0] is not an object'],
    ['a function without a name', fn({ name: 7 }), 'functions[0] has no name'],
    ['an unknown access', fn({ access: 'secret' }), 'functions[0] has no valid access'],
    ['a function without args', fn({ args: undefined }), 'functions[0] has no "args" array'],
    ['an argument without a name', fn({ args: [{ type: 'bool' }] }), 'functions[0].args[0] has no name'],
    [
      'an argument typed null',
      fn({ args: [{ name: 'x', type: null }] }),
      'functions[0].args[0].type is not a type descriptor',
    ],
    [
      'a buffer without a length',
      fn({ args: [{ name: 'x', type: { buffer: {} } }] }),
      'functions[0].args[0].type.buffer has no valid length',
    ],
    [
      'a list of a broken type',
      fn({ args: [{ name: 'x', type: { list: { type: 5, length: 2 } } }] }),
      'functions[0].args[0].type.list.type is not a type descriptor',
    ],
    [
      'a tuple field without a name',
      fn({ outputs: { type: { tuple: [{ type: 'bool' }] } } }),
      'functions[0].outputs.type.tuple[0] has no name',
    ],
    ['no outputs', fn({ outputs: null }), 'functions[0] has no "outputs" object'],
    ['maps not an array', { ...SAMPLE_ABI, maps: {} }, '"maps" is not an array'],
  ])('refuses %s', (_, doc, problem) => {
    expect(abiShapeProblem(doc)).toBe(problem);
    expect(isContractAbi(doc)).toBe(false);
  });

  it('refuses a type nested deeper than any Clarity type, without overflowing the stack', () => {
    let t: unknown = 'bool';
    for (let i = 0; i < 10_000; i++) t = { optional: t };
    expect(abiShapeProblem(fn({ args: [{ name: 'x', type: t }] }))).toMatch(/nests deeper than 64 levels/);
  });
});
