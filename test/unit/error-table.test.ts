/**
 * The one error table (src/errors.ts): an error's status is its code's row, or the row's
 * entry for its variant; nothing else chooses one. Its retry time is a value, and both cross
 * instances as values.
 */
import { describe, expect, it } from 'vitest';
import {
  ERROR_CATALOGUE,
  type ErrorCode,
  GatewayError,
  SHARED_GATEWAY_FAILURES,
  statusOf,
  variantWithStatus,
} from '../../src/errors.js';

describe('the error table', () => {
  it('gives each code the status of its row, and each variant its own', () => {
    for (const [code, row] of Object.entries(ERROR_CATALOGUE)) {
      expect(statusOf(code as ErrorCode)).toBe(row.status);
      expect(new GatewayError(code as ErrorCode, 'x').status).toBe(row.status);
      for (const [variant, status] of Object.entries('variants' in row ? row.variants : {}))
        expect(statusOf(code as ErrorCode, variant)).toBe(status);
    }
  });

  it('answers the statuses the contract fixes for one code', () => {
    const upstream = (variant?: 'unknown-contract' | 'unknown-block' | 'node-refused') =>
      new GatewayError('UPSTREAM_API_ERROR', 'x', undefined, { variant }).status;
    expect([
      upstream('unknown-contract'),
      upstream('unknown-block'),
      upstream('node-refused'),
      upstream(),
    ]).toEqual([404, 404, 422, 502]);
    expect(
      new GatewayError('VALIDATION_ERROR', 'x', undefined, { variant: 'content-too-large' }).status,
    ).toBe(413);
    expect(new GatewayError('VALIDATION_ERROR', 'x').status).toBe(400);
  });

  it('finds the variant of an HTTP refusal by its status, and none for a status it does not name', () => {
    expect(variantWithStatus('VALIDATION_ERROR', 416)).toBe('range-not-satisfiable');
    expect(variantWithStatus('VALIDATION_ERROR', 431)).toBe('request-header-fields-too-large');
    expect(variantWithStatus('VALIDATION_ERROR', 418)).toBeUndefined();
    expect(variantWithStatus('TIMEOUT', 504)).toBeUndefined();
  });

  it('keeps code, variant, retry time and upstream text when an error is said in other words', () => {
    const err = new GatewayError(
      'UPSTREAM_API_ERROR',
      'gone',
      { a: 1 },
      {
        variant: 'unknown-contract',
        upstreamText: 'no such thing',
      },
    );
    const told = err.rephrased(
      'gone (testnet GET /v2/…)',
      { a: 1, attempts: 2 },
      { origin: { tipHeight: 7 } },
    );
    expect(told).toMatchObject({
      code: 'UPSTREAM_API_ERROR',
      variant: 'unknown-contract',
      status: 404,
      message: 'gone (testnet GET /v2/…)',
      details: { a: 1, attempts: 2 },
      upstreamText: 'no such thing',
      origin: { tipHeight: 7 },
    });
    const limited = new GatewayError(
      'RATE_LIMIT_EXCEEDED',
      'slow down',
      { retryAfter: 3 },
      { retryAfter: 3 },
    );
    expect(limited.rephrased('slower', limited.details)).toMatchObject({ retryAfter: 3, status: 429 });
  });
});

describe('failures shared across instances', () => {
  const roundTrip = (err: GatewayError) => {
    const wire = SHARED_GATEWAY_FAILURES.share(err);
    expect(wire).toBeDefined();
    return SHARED_GATEWAY_FAILURES.revive(JSON.parse(JSON.stringify(wire)));
  };

  it('carry the variant and the retry time as values, and come back with their status', () => {
    const unknown = roundTrip(
      new GatewayError(
        'UPSTREAM_API_ERROR',
        'no such contract',
        { retryable: false },
        { variant: 'unknown-contract' },
      ),
    );
    expect(unknown).toMatchObject({ code: 'UPSTREAM_API_ERROR', variant: 'unknown-contract', status: 404 });
    const limited = roundTrip(
      new GatewayError('RATE_LIMIT_EXCEEDED', 'no token', { retryAfter: 4 }, { retryAfter: 4 }),
    );
    expect(limited).toMatchObject({
      code: 'RATE_LIMIT_EXCEEDED',
      retryAfter: 4,
      status: 429,
      details: { retryAfter: 4 },
    });
  });

  it('are loaded again by a waiter when they name what the table does not know, or come in an older form', () => {
    expect(SHARED_GATEWAY_FAILURES.revive({ code: 'NO_SUCH_CODE', message: 'x' })).toBeUndefined();
    expect(
      SHARED_GATEWAY_FAILURES.revive({
        code: 'UPSTREAM_API_ERROR',
        message: 'x',
        variant: 'no-such-variant',
      }),
    ).toBeUndefined();
    // The form of an earlier version carried its status and headers instead of the variant.
    const older = { code: 'UPSTREAM_API_ERROR', message: 'x', status: 404 } as unknown as Parameters<
      typeof SHARED_GATEWAY_FAILURES.revive
    >[0];
    expect(SHARED_GATEWAY_FAILURES.revive(older)).toBeUndefined();
  });
});
