/**
 * One evaluation of a watched read (src/service/watch/evaluate.ts): what the read-only service
 * answers becomes a value, an error record, or nothing to send. The service is a stand-in that
 * answers as told; decoding is the real one.
 */
import { Cl, cvToHex } from '@stacks/transactions';
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../../src/errors.js';
import { ReadOnlyService } from '../../../../src/service/read-only.js';
import { evaluator } from '../../../../src/service/watch/evaluate.js';
import { NO_ANSWER, UNKNOWN_BLOCK, type WatchedRead } from '../../../../src/service/watch/types.js';

const read: WatchedRead = {
  request: {
    contractAddress: 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM',
    contractName: 'c',
    functionName: 'f',
    functionArgs: [],
  },
  key: 'k',
  contractId: 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM.c',
  functionName: 'f',
};
const block = { height: 5, indexBlockHash: 'ab'.repeat(32), receivedAt: 0 };

function service(answer: () => string) {
  const asked: unknown[] = [];
  const readOnly = {
    lookup: async (req: unknown) => {
      asked.push(req);
      return { value: answer() };
    },
    render: ReadOnlyService.prototype.render,
  } as unknown as ReadOnlyService;
  return { readOnly, asked };
}

describe('evaluating a watched read', () => {
  it('reads pinned to the block and decodes as the read-only endpoint does', async () => {
    const raw = cvToHex(Cl.ok(Cl.uint(7)));
    const { readOnly, asked } = service(() => raw);
    const outcome = await evaluator(readOnly)(read, block);
    expect(asked).toEqual([{ ...read.request, tip: block.indexBlockHash }]);
    expect(outcome).toEqual({ kind: 'value', raw, value: '7', same: `v${raw}` });
  });

  it('an (err ...) result is the CONTRACT_ERROR record, compared by its bytes', async () => {
    const raw = cvToHex(Cl.error(Cl.uint(404)));
    const outcome = await evaluator(service(() => raw).readOnly)(read, block);
    expect(outcome).toMatchObject({ kind: 'error', same: `v${raw}` });
    expect(typeof outcome === 'object' && outcome.kind === 'error' && outcome.error.code).toBe(
      'CONTRACT_ERROR',
    );
  });

  it('a definite refusal is an error record; what says nothing of the answer sends nothing', async () => {
    const failing = (err: unknown) =>
      evaluator(
        service(() => {
          throw err;
        }).readOnly,
      )(read, block);
    const refused = await failing(
      new GatewayError('INVALID_FUNCTION', 'no such function', { function: 'f' }),
    );
    expect(refused).toMatchObject({ kind: 'error' });
    expect(await failing(new GatewayError('TIMEOUT', 'too slow'))).toBe(NO_ANSWER);
    expect(await failing(new GatewayError('SERVICE_UNAVAILABLE', 'shutting down'))).toBe(NO_ANSWER);
    expect(await failing(new GatewayError('INTERNAL_ERROR', 'a bug'))).toBe(NO_ANSWER);
    expect(await failing(new Error('not ours'))).toBe(NO_ANSWER);
    expect(
      await failing(
        new GatewayError(
          'UPSTREAM_API_ERROR',
          'no such block',
          { tip: block.indexBlockHash },
          { variant: 'unknown-block' },
        ),
      ),
    ).toBe(UNKNOWN_BLOCK);
  });
});
