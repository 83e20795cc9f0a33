/** The explorer's words for an answer's origin and a node's refusal (src/explorer/page/words.ts). */
import { describe, expect, it } from 'vitest';
import {
  blockNumber,
  oneNode,
  provenance,
  readableCause,
  streamEndWords,
  watchedProvenance,
  watchStatus,
} from '../../src/explorer/page/words.js';

describe('provenance', () => {
  it.each([
    [
      { cacheStatus: 'clarity-cache; hit; ttl=30', age: 12, tipHeight: 182340 },
      'from cache, 12 s old, block 182,340',
    ],
    [{ cacheStatus: 'clarity-cache; hit', age: 125, tipHeight: undefined }, 'from cache, 2 min old'],
    [
      { cacheStatus: 'clarity-cache; fwd=miss; stored; ttl=60', age: 0, tipHeight: 7 },
      'fetched from the node, now cached, block 7',
    ],
    [{ cacheStatus: 'clarity-cache; fwd=miss', age: 0, tipHeight: undefined }, 'fetched from the node'],
    [
      { cacheStatus: 'clarity-cache; fwd=request; stored', age: 0, tipHeight: 1000 },
      'fetched from the node, cache bypassed, now cached, block 1,000',
    ],
    [
      { cacheStatus: 'clarity-cache; fwd=stale; collapsed; stored', age: 0, tipHeight: undefined },
      'fetched from the node, the cached answer was stale (one request for several callers), now cached',
    ],
    [
      { cacheStatus: 'clarity-cache; hit; ttl=-4; detail=stale-while-revalidate', age: 64, tipHeight: 5 },
      'from cache (stale, refreshed in the background), 1 min old, block 5',
    ],
    [
      {
        cacheStatus: 'clarity-cache; fwd=stale; ttl=-40; detail=stale-if-error',
        age: 7300,
        tipHeight: undefined,
      },
      'from cache (stale: the node could not be reached), 2 h old',
    ],
    [{ cacheStatus: undefined, age: undefined, tipHeight: undefined }, 'answered by the gateway'],
  ])('%o', (meta, words) => {
    expect(provenance(meta)).toBe(words);
  });

  it('writes block heights with thousands separators', () => {
    expect(blockNumber(182340)).toBe('182,340');
    expect(blockNumber(0)).toBe('0');
  });
});

describe('readableCause', () => {
  it('puts a runtime error first and the stack trace apart', () => {
    expect(readableCause('DivisionByZero\n Stack Trace: \n  (/ amount parts)\n  get-share')).toEqual({
      summary: 'Runtime error: DivisionByZero',
      trace: '(/ amount parts)\n  get-share',
    });
    expect(readableCause('ArithmeticUnderflow')).toEqual({
      summary: 'Runtime error: ArithmeticUnderflow',
      trace: undefined,
    });
  });

  it('names check errors', () => {
    expect(readableCause('RuntimeCheck(NoSuchContract("ST1.x"))').summary).toBe(
      'Check error: NoSuchContract("ST1.x")',
    );
    expect(readableCause('Unchecked(IncorrectArgumentCount(2, 1))').summary).toBe(
      'Check error: IncorrectArgumentCount(2, 1)',
    );
  });

  it('keeps anything else as it is', () => {
    expect(readableCause('the node says no')).toEqual({ summary: 'the node says no', trace: undefined });
    expect(readableCause('').summary).toBe('The node refused the call');
  });
});

describe('oneNode', () => {
  const A = 'http://127.0.0.1:20443';
  const B = 'https://api.hiro.so';
  it('is true when every network has the very same upstreams, in any order', () => {
    expect(oneNode([[A], [A]])).toBe(true);
    expect(
      oneNode([
        [A, B],
        [B, A],
      ]),
    ).toBe(true);
  });

  it('is false for different nodes, some shared, a network without any, or a single network', () => {
    expect(oneNode([[A], [B]])).toBe(false);
    expect(oneNode([[A, B], [A]])).toBe(false);
    expect(oneNode([[], []])).toBe(false);
    expect(oneNode([[A]])).toBe(false);
    expect(oneNode([])).toBe(false);
  });
});

describe('watchStatus', () => {
  it('says where a watch stands, with block numbers as people write them', () => {
    expect(watchStatus({ kind: 'off' })).toBe('');
    expect(watchStatus({ kind: 'starting' })).toBe('Watching: asking the gateway…');
    expect(watchStatus({ kind: 'live', readAt: 182340 })).toBe('Watching: read at block 182,340');
    expect(watchStatus({ kind: 'live', readAt: 7, unchangedAt: 7 })).toBe('Watching: read at block 7');
    expect(watchStatus({ kind: 'live', readAt: 7, unchangedAt: 1002 })).toBe(
      'Watching: read at block 7, unchanged at block 1,002',
    );
    expect(watchStatus({ kind: 'reconnecting' })).toBe('Watching: connection lost, reconnecting…');
    expect(watchStatus({ kind: 'reset', reason: 'not-canonical' })).toBe(
      'Watching: started over (the last block seen left the chain), reading again…',
    );
    expect(watchStatus({ kind: 'reset', reason: 'unknown' })).toBe(
      'Watching: started over (the gateway no longer knows the last block seen), reading again…',
    );
    expect(watchStatus({ kind: 'reset', reason: 'forgotten' })).toBe(
      'Watching: started over (the gateway had forgotten the watch), reading again…',
    );
    expect(watchStatus({ kind: 'reset', reason: 'something new' })).toBe(
      'Watching: started over (something new), reading again…',
    );
    expect(watchStatus({ kind: 'reset', reason: '' })).toBe('Watching: started over, reading again…');
  });

  it('says why a watch ended', () => {
    expect(watchStatus({ kind: 'stopped', why: 'changed' })).toBe(
      'Stopped watching: the call changed. Press Watch to watch it as it is now.',
    );
    expect(watchStatus({ kind: 'stopped', why: 'replaced' })).toBe(
      'Stopped watching: another function is watched now.',
    );
    expect(watchStatus({ kind: 'failed', code: 'NOT_FOUND' })).toBe(
      'Stopped watching: NOT_FOUND (see the Result).',
    );
  });

  it('names a watched value’s block, and the gateway’s reasons for ending a stream', () => {
    expect(watchedProvenance(182340, true)).toBe('watched: read at block 182,340');
    expect(watchedProvenance(182341, false)).toBe('watched: changed at block 182,341');
    expect(streamEndWords('NOT_FOUND')).toMatch(/no longer holds this watch/);
    expect(streamEndWords('SLOW_CONSUMER')).toMatch(/did not take its updates fast enough/);
    expect(streamEndWords('SOMETHING_NEW')).toBe('the gateway ended the watch');
  });
});
