/**
 * Another instance's observer followed in a ledger of this instance's own (docs/watch.md): the
 * same proof as the observer's instance, a gap ending it, and a deploy dropping what was known
 * of the contract (its source is asked again).
 */
import { describe, expect, it } from 'vitest';
import { LedgerMirror } from '../../../src/chain/observer/ledger-mirror.js';

const H = (n: number) => n.toString(16).padStart(64, '0');
const A = 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM';
const TOKEN = `${A}.token`;
const OTHER = `${A}.other`;

const SOURCES: Record<string, string> = {
  [TOKEN]: '(define-data-var n uint u0) (define-read-only (get-n) (var-get n))',
  [OTHER]: '(define-read-only (hello) u1)',
};

function block(height: number, touched: string[] | '*', deployed: string[] = [], parent = height - 1) {
  return {
    network: 'testnet' as const,
    height,
    indexBlockHash: H(height),
    parentIndexBlockHash: H(parent),
    touched:
      touched === '*' ? ({ all: true } as const) : { all: false as const, contracts: new Set(touched) },
    deployed,
  };
}

describe('a mirror of another instance’s observer', () => {
  it('proves what the announced blocks left unchanged, and a gap ends the proof', async () => {
    const asked: string[] = [];
    const mirror = new LedgerMirror('testnet', async (id) => {
      asked.push(id);
      return SOURCES[id]!;
    });
    const deps = await mirror.dependsOn(TOKEN, 'get-n');
    expect(deps).toEqual(new Set([TOKEN]));
    expect(mirror.apply(block(10, []), 1000)).toBe('started');
    const read = { height: 10, readAt: 1001, dependsOn: deps };
    mirror.apply(block(11, [OTHER]), 1002);
    expect(mirror.ledger.current(read, 11)).toBe(true);
    mirror.apply(block(12, [TOKEN]), 1003);
    expect(mirror.ledger.current(read, 12)).toBe(false);
    // A lost announcement: 14's parent is not 12.
    const after = { height: 12, readAt: 1004, dependsOn: deps };
    mirror.apply(block(14, []), 1005);
    expect(mirror.ledger.current(after, 14)).toBe(false);
    expect(mirror.lastAppliedAt).toBe(1005);
  });

  it('a deploy drops what was known of the contract: the next question reads its source again', async () => {
    const asked: string[] = [];
    const mirror = new LedgerMirror('testnet', async (id) => {
      asked.push(id);
      return SOURCES[id]!;
    });
    await mirror.dependsOn(OTHER, 'hello');
    const version = mirror.analyzer.version;
    mirror.apply(block(20, '*', [OTHER]), 1);
    expect(mirror.analyzer.version).toBe(version + 1);
    expect(mirror.analyzer.learnedSince(version)).toEqual([OTHER]);
    await mirror.dependsOn(OTHER, 'hello');
    expect(asked).toEqual([OTHER, OTHER]);
  });
});
