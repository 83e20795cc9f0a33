/** The explorer's reading of a watched read's events and refusals (src/explorer/page/events.ts). */
import { describe, expect, it } from 'vitest';
import { field, parseValues, readError } from '../../src/explorer/page/events.js';

describe('parseValues', () => {
  it('reads each item by its index: a value with its raw form, or an error', () => {
    const event = parseValues(
      JSON.stringify({
        tipHeight: 12,
        indexBlockHash: `0x${'ab'.repeat(32)}`,
        values: [
          { index: 0, value: '42', raw: '0x01000000000000000000000000000000002a' },
          { index: 2, error: { code: 'CONTRACT_ERROR', message: 'the contract answered (err u3)' } },
        ],
      }),
    );
    expect(event?.tipHeight).toBe(12);
    expect(event?.indexBlockHash).toBe(`0x${'ab'.repeat(32)}`);
    expect(event?.outcomes.get(0)).toEqual({ value: '42', raw: '0x01000000000000000000000000000000002a' });
    expect(event?.outcomes.get(1)).toBeUndefined();
    expect(event?.outcomes.get(2)).toEqual({
      error: {
        code: 'CONTRACT_ERROR',
        message: 'the contract answered (err u3)',
        status: undefined,
        details: undefined,
        id: undefined,
      },
    });
  });

  it('keeps a value that is null or false, and an error it cannot name', () => {
    const event = parseValues(
      JSON.stringify({
        tipHeight: 3,
        values: [
          { index: 0, value: null },
          { index: 1, value: false },
          { index: 2, error: 'boom' },
          { index: 3, error: 7 },
          { index: 4, error: null },
        ],
      }),
    );
    expect(event?.indexBlockHash).toBe('');
    expect(event?.outcomes.get(0)).toEqual({ value: null, raw: undefined });
    expect(event?.outcomes.get(1)).toEqual({ value: false, raw: undefined });
    expect(event?.outcomes.get(2)).toMatchObject({ error: { code: 'ERROR', message: 'boom' } });
    expect(event?.outcomes.get(3)).toMatchObject({ error: { code: 'ERROR', message: '7' } });
    expect(event?.outcomes.get(4)).toMatchObject({ error: { code: 'ERROR', message: 'null' } });
  });

  it('ignores what is not a values event, and items without an index', () => {
    expect(parseValues('not json')).toBeUndefined();
    expect(parseValues('[]')).toBeUndefined();
    expect(parseValues(JSON.stringify({ tipHeight: '12', values: [] }))).toBeUndefined();
    expect(parseValues(JSON.stringify({ tipHeight: 12 }))).toBeUndefined();
    const event = parseValues(
      JSON.stringify({
        tipHeight: 12,
        values: [null, 'x', { value: 1 }, { index: 0 }, { index: 1, value: 1 }],
      }),
    );
    expect([...(event?.outcomes.keys() ?? [])]).toEqual([1]);
  });
});

describe('readError', () => {
  it('reads an envelope’s error, its status from the answer unless the error has one', () => {
    expect(
      readError({ code: 'VALIDATION_ERROR', message: 'bad', details: { field: 'reads' }, id: 'e1' }, 400),
    ).toEqual({
      code: 'VALIDATION_ERROR',
      message: 'bad',
      status: 400,
      details: { field: 'reads' },
      id: 'e1',
    });
    expect(readError({ code: 'UPSTREAM_API_ERROR', status: 422 }, 200)).toMatchObject({
      message: 'UPSTREAM_API_ERROR',
      status: 422,
    });
    expect(readError({ message: 'no code' })).toBeUndefined();
    expect(readError(undefined)).toBeUndefined();
  });
});

describe('field', () => {
  it('reads a text field of an event’s JSON data, or nothing', () => {
    expect(field('{"reason":"reorg"}', 'reason')).toBe('reorg');
    expect(field('{"code":"NOT_FOUND"}', 'code')).toBe('NOT_FOUND');
    expect(field('{"code":3}', 'code')).toBe('');
    expect(field('', 'code')).toBe('');
  });
});
