import { describe, expect, it } from 'vitest';
import type { CacheEntry } from '../../../src/cache/store.js';
import { GatewayError } from '../../../src/errors.js';
import { RenderedBodies, successBody } from '../../../src/service/rendered-bodies.js';

const entry = (): CacheEntry => ({
  value: '0x01',
  storedAt: 0,
  staleAt: null,
  expiresAt: null,
  tipHeight: null,
});

describe('RenderedBodies', () => {
  it('renders an entry once per variant and serves the same text afterwards', () => {
    const memo = new RenderedBodies();
    const e = entry();
    let renders = 0;
    const render = (v: unknown) => () => {
      renders++;
      return successBody(v);
    };
    expect(memo.body(e, 0, render({ a: '1' }))).toBe('{"success":true,"data":{"a":"1"}}');
    expect(memo.body(e, 0, render({ a: 'other' }))).toBe('{"success":true,"data":{"a":"1"}}');
    expect(memo.body(e, 1, render({ a: 1 }))).toBe('{"success":true,"data":{"a":1}}');
    expect(renders).toBe(2);
    // Another entry object (a new value for the key) renders afresh.
    expect(memo.body(entry(), 0, render('new'))).toBe('{"success":true,"data":"new"}');
    // A variant may be any text (the node-compatible shape), memoized alike.
    expect(memo.body(e, 4, () => '{"okay":true,"result":"0x01"}')).toBe('{"okay":true,"result":"0x01"}');
    expect(memo.body(e, 4, () => 'other')).toBe('{"okay":true,"result":"0x01"}');
  });

  it('memoizes a CONTRACT_ERROR and rethrows it, but lets other failures through unmemoized', () => {
    const memo = new RenderedBodies();
    const e = entry();
    let renders = 0;
    const raise = () => {
      renders++;
      throw new GatewayError('CONTRACT_ERROR', 'err', { value: '7' });
    };
    expect(() => memo.body(e, 0, raise)).toThrow(GatewayError);
    expect(() => memo.body(e, 0, raise)).toThrow('err');
    expect(renders).toBe(1);
    const other = entry();
    let bugs = 0;
    const bug = () => {
      bugs++;
      throw new TypeError('bug');
    };
    expect(() => memo.body(other, 0, bug)).toThrow(TypeError);
    expect(() => memo.body(other, 0, bug)).toThrow(TypeError);
    expect(bugs).toBe(2);
  });

  it('writes the success envelope', () => {
    expect(JSON.parse(successBody({ constructor: true }))).toEqual({
      success: true,
      data: { constructor: true },
    });
  });
});
