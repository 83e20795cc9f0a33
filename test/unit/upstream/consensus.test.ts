/**
 * The pieces of attested answers that are plain functions (docs/consensus.md): the pinned path
 * every participant is asked at, and the request body's digest the dispute log records.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { bodySha256, pinnedPath } from '../../../src/upstream/consensus.js';

const H = 'ab'.repeat(32);
const OLD = 'cd'.repeat(32);

describe('pinnedPath', () => {
  it('adds ?tip= to a path without a query', () => {
    expect(pinnedPath('/v2/contracts/call-read/SP1.c/get', H)).toBe(
      `/v2/contracts/call-read/SP1.c/get?tip=${H}`,
    );
  });

  it('replaces a tip already there, every copy of it, keeping the other parameters', () => {
    expect(pinnedPath(`/v2/data_var/SP1/c/v?proof=0&tip=${OLD}`, H)).toBe(
      `/v2/data_var/SP1/c/v?proof=0&tip=${H}`,
    );
    expect(pinnedPath(`/v2/x?tip=${OLD}&proof=0&tip=0x${OLD}`, H)).toBe(`/v2/x?tip=${H}&proof=0`);
    expect(pinnedPath('/v2/x?tip=', H)).toBe(`/v2/x?tip=${H}`);
  });

  it('keeps the other parameters, in their order, next to an added tip', () => {
    const url = new URL(`http://n${pinnedPath('/v2/map_entry/SP1/c/m?proof=0&a=1&a=2&q=x%20y', H)}`);
    expect(url.pathname).toBe('/v2/map_entry/SP1/c/m');
    expect([...url.searchParams]).toEqual([
      ['proof', '0'],
      ['a', '1'],
      ['a', '2'],
      ['q', 'x y'],
      ['tip', H],
    ]);
  });
});

describe('bodySha256', () => {
  it('is the SHA-256 of the body text or bytes, and nothing without a body', () => {
    const text = '{"sender":"SP1","arguments":["0x01"]}';
    const digest = createHash('sha256').update(text).digest('hex');
    expect(bodySha256(text)).toBe(digest);
    expect(bodySha256({ data: text, contentType: 'application/json' })).toBe(digest);
    expect(
      bodySha256({ data: new TextEncoder().encode(text), contentType: 'application/octet-stream' }),
    ).toBe(digest);
    expect(bodySha256('')).toBe(createHash('sha256').update('').digest('hex'));
    expect(bodySha256(undefined)).toBeUndefined();
  });
});
