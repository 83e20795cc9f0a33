import type { FastifyReply } from 'fastify';
import { describe, expect, it } from 'vitest';
import { cacheOutcomeOf } from '../../../src/http/request-context.js';

const reply = (cacheStatus: string | undefined) =>
  ({
    getHeader: (name: string) => (name === 'cache-status' ? cacheStatus : undefined),
  }) as unknown as FastifyReply;

describe("cacheOutcomeOf (the access line's cache field)", () => {
  it.each([
    ['clarity-cache; hit', 'hit'],
    ['clarity-cache; hit; ttl=57', 'hit'],
    ['clarity-cache; hit; ttl=-4; detail=stale-while-revalidate', 'stale'],
    ['clarity-cache; hit; detail=stale-if-error', 'stale'],
    ['clarity-cache; fwd=stale; stored', 'stale'],
    ['clarity-cache; fwd=miss; stored; ttl=60', 'miss'],
    ['clarity-cache; fwd=miss', 'miss'],
    ['clarity-cache; fwd=miss; collapsed; stored', 'coalesced'],
    ['clarity-cache; fwd=request; stored', 'bypass'],
  ])('%s -> %s', (header, outcome) => {
    expect(cacheOutcomeOf(reply(header))).toBe(outcome);
  });

  it('is absent for answers that did not go through the cache', () => {
    expect(cacheOutcomeOf(reply(undefined))).toBeUndefined();
  });
});
