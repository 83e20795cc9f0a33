/**
 * What an answer costs and how its usage row is named (src/http/metering.ts, docs/usage.md):
 * the pure rules both the full path and the fast lane use.
 */
import { describe, expect, it } from 'vitest';
import {
  itemUnits,
  replayMeter,
  unitsOf,
  usageFunction,
  usageOutcome,
  usageRoute,
} from '../../../src/http/metering.js';

const COSTS = { hit: 1, miss: 10, decode: 3 };

describe('the usage row of a route', () => {
  it('is the path template, the /mainnet and /testnet forms folded in', () => {
    expect(usageRoute('/contract-calls/read-only/:contractAddress/:contractName/:functionName')).toBe(
      '/contract-calls/read-only/{contractAddress}/{contractName}/{functionName}',
    );
    expect(usageRoute('/testnet/v2/contracts/call-read/:address/:contract/:function')).toBe(
      '/v2/contracts/call-read/{address}/{contract}/{function}',
    );
    expect(usageRoute('/mainnet/v2/info')).toBe('/v2/info');
    // Only a whole first segment is a network prefix.
    expect(usageRoute('/mainnetish/x')).toBe('/mainnetish/x');
  });

  it('names the function of a read-only call, the contract of another contract route, else nothing', () => {
    expect(usageFunction({ contractAddress: 'SP1', contractName: 'tok', functionName: 'get' })).toBe(
      'SP1.tok::get',
    );
    expect(usageFunction({ address: 'SP1', contract: 'tok', function: 'get' })).toBe('SP1.tok::get');
    expect(usageFunction({ address: 'SP1', contract: 'tok', name: 'v' })).toBe('SP1.tok');
    expect(usageFunction({ id: 'abc' })).toBe('');
    expect(usageFunction(undefined)).toBe('');
  });
});

describe('the outcome of an answer', () => {
  it('is refused for admission, error for 400 and above, else hit or miss by its Cache-Status', () => {
    expect(usageOutcome(429, undefined, true, 0)).toBe('refused');
    expect(usageOutcome(404, 'clarity-cache; hit', false, 0)).toBe('error');
    expect(usageOutcome(200, 'clarity-cache; hit; ttl=4', false, 0)).toBe('hit');
    expect(usageOutcome(200, 'clarity-cache; hit; ttl=0; detail=stale-while-revalidate', false, 0)).toBe(
      'hit',
    );
    expect(usageOutcome(200, 'clarity-cache; fwd=stale; ttl=-3; detail=stale-if-error', false, 0)).toBe(
      'hit',
    );
    expect(usageOutcome(200, 'clarity-cache; fwd=miss; stored; attested=2', false, 2)).toBe('miss');
    expect(usageOutcome(200, 'clarity-cache; fwd=miss; collapsed', false, 0)).toBe('miss');
    expect(usageOutcome(200, 'clarity-cache; fwd=stale; stored', false, 1)).toBe('miss');
    expect(usageOutcome(200, 'clarity-cache; fwd=request', false, 1)).toBe('miss');
  });

  it('without a cache, is a miss when it asked the upstream, else a hit', () => {
    expect(usageOutcome(201, undefined, false, 1)).toBe('miss');
    expect(usageOutcome(200, undefined, false, 0)).toBe('hit');
  });
});

describe('the units of an answer', () => {
  it('follow the costs: hit, miss, decode; nothing for an error, a refusal or opening a stream', () => {
    expect(unitsOf('/contract-calls/read-only/{a}/{b}/{c}', 'hit', COSTS)).toBe(1);
    expect(unitsOf('/contract-calls/read-only/{a}/{b}/{c}', 'miss', COSTS)).toBe(10);
    expect(unitsOf('/contract-calls/decode-clarity-value', 'hit', COSTS)).toBe(3);
    expect(unitsOf('/contract-calls/decode-clarity-value', 'error', COSTS)).toBe(0);
    expect(unitsOf('/v2/info', 'refused', COSTS)).toBe(0);
    expect(unitsOf('/subscriptions/{id}/events', 'hit', COSTS)).toBe(0);
  });

  it('of a batch item are the single endpoint’s', () => {
    expect(itemUnits(200, 'clarity-cache; hit', COSTS)).toEqual({ miss: false, units: 1 });
    expect(itemUnits(200, 'clarity-cache; fwd=miss; stored', COSTS)).toEqual({ miss: true, units: 10 });
  });

  it('of a replay are a hit of its route', () => {
    expect(
      replayMeter(
        '/testnet/v2/contracts/call-read/:address/:contract/:function',
        { address: 'ST1', contract: 'c', function: 'f' },
        COSTS,
      ),
    ).toEqual({
      route: '/v2/contracts/call-read/{address}/{contract}/{function}',
      function: 'ST1.c::f',
      units: 1,
    });
    expect(replayMeter('/contract-calls/decode-clarity-value', {}, COSTS).units).toBe(3);
  });
});
