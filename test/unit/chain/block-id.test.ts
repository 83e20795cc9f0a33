import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { indexBlockHash, parseTip } from '../../../src/chain/block-id.js';
import { blockIdentity } from '../../../src/devnet/blocks.js';

describe('indexBlockHash', () => {
  it('is SHA-512/256 of the 32-byte block hash followed by the 20-byte consensus hash', () => {
    const block = 'aa'.repeat(32);
    const consensus = 'bb'.repeat(20);
    const expected = createHash('sha512-256')
      .update(Buffer.concat([Buffer.alloc(32, 0xaa), Buffer.alloc(20, 0xbb)]))
      .digest('hex');
    expect(indexBlockHash(block, consensus)).toBe(expected);
    expect(indexBlockHash(`0x${block.toUpperCase()}`, `0x${consensus}`)).toBe(expected);
    // Not SHA-512 truncated: SHA-512/256 has its own initial values.
    expect(expected).not.toBe(createHash('sha512').update(Buffer.alloc(1)).digest('hex').slice(0, 64));
  });

  it('agrees with the devnet, whose /v2/info and ?tip= use the same identities', () => {
    const id = blockIdentity(7, 800_007);
    expect(indexBlockHash(id.blockHash, id.consensusHash)).toBe(id.indexBlockHash);
  });

  it('is undefined for inputs of the wrong length or type', () => {
    expect(indexBlockHash('aa'.repeat(31), 'bb'.repeat(20))).toBeUndefined();
    expect(indexBlockHash('aa'.repeat(32), 'bb'.repeat(32))).toBeUndefined();
    expect(indexBlockHash(undefined, 'bb'.repeat(20))).toBeUndefined();
    expect(indexBlockHash('zz'.repeat(32), 'bb'.repeat(20))).toBeUndefined();
  });
});

describe('parseTip', () => {
  it('normalizes an index block hash to 64 lowercase hex digits', () => {
    expect(parseTip(`0x${'AB'.repeat(32)}`)).toBe('ab'.repeat(32));
    expect(parseTip('aB'.repeat(32))).toBe('ab'.repeat(32));
  });

  it('reads "latest" and absence as the current state', () => {
    expect(parseTip(undefined)).toBeUndefined();
    expect(parseTip('latest')).toBeUndefined();
  });

  it.each([
    '',
    '0x',
    'ab',
    `0x${'a'.repeat(63)}`,
    'a'.repeat(65),
    `0X${'a'.repeat(64)}`,
    'Latest',
    7,
    null,
    {},
  ])('refuses %j with VALIDATION_ERROR naming tip', (tip) => {
    expect(() => parseTip(tip)).toThrow(
      expect.objectContaining({
        code: 'VALIDATION_ERROR',
        details: expect.objectContaining({ field: 'tip' }),
      }),
    );
  });
});
