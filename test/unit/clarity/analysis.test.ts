import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { analyzeContract, DependencyAnalyzer, TOP_LEVEL } from '../../../src/clarity/analysis/index.js';

const DEPLOYER = 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM';
const id = (name: string) => `${DEPLOYER}.${name}`;

/** A vault that reads the demo token by literal contract-call?, through a private function. */
const VAULT = `
(define-private (balance-of (who principal))
  (unwrap-panic (contract-call? .demo-token get-balance who)))
(define-read-only (get-vault-balance) (balance-of (as-contract tx-sender)))
(define-read-only (get-fee) u5)
(define-read-only (get-age) (- stacks-block-height u1))
(define-read-only (get-name-of-dao) (contract-call? 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM.demo-dao get-dao-info))
`;

/** A router calling whatever SIP-010 token it is handed (a trait parameter). */
const ROUTER = `
(use-trait ft-trait .sip-010-trait-ft-standard.sip-010-trait)
(define-public (send (token <ft-trait>) (amount uint) (to principal))
  (contract-call? token transfer amount tx-sender to none))
(define-read-only (get-vault-fee) (contract-call? .vault get-fee))
(define-read-only (get-stx (who principal)) (stx-get-balance who))
`;

async function sources(): Promise<Map<string, string>> {
  const map = new Map<string, string>();
  for (const name of ['demo-token', 'demo-dao', 'demo-nft', 'nft-trait', 'sip-010-trait-ft-standard']) {
    map.set(id(name), await readFile(`contracts/${name}.clar`, 'utf8'));
  }
  map.set(id('vault'), VAULT);
  map.set(id('router'), ROUTER);
  return map;
}

async function analyzer(): Promise<{ analyzer: DependencyAnalyzer; fetched: string[] }> {
  const map = await sources();
  const fetched: string[] = [];
  return {
    fetched,
    analyzer: new DependencyAnalyzer({
      source: async (contractId) => {
        fetched.push(contractId);
        const src = map.get(contractId);
        if (src === undefined) throw new Error(`no contract ${contractId}`);
        return src;
      },
    }),
  };
}

describe('contract analysis', () => {
  it('finds the SIP-010 demo token self-contained and non-volatile', async () => {
    const { analyzer: a } = await analyzer();
    for (const fn of ['get-balance', 'get-name', 'get-total-supply', 'transfer']) {
      const deps = await a.dependencies(id('demo-token'), fn);
      expect(deps.contracts).toEqual(new Set([id('demo-token')]));
      expect(deps.volatile).toBe(false);
    }
  });

  it('marks demo-dao functions that read stacks-block-height volatile, the others not', async () => {
    const { analyzer: a } = await analyzer();
    expect((await a.dependencies(id('demo-dao'), 'join')).readsContext).toBe(true);
    expect((await a.dependencies(id('demo-dao'), 'get-proposal')).volatile).toBe(false);
    // The deployment's constants read the height once, at deployment: part of the top level.
    expect(
      analyzeContract(id('demo-dao'), await readFile('contracts/demo-dao.clar', 'utf8')).functions.get(
        TOP_LEVEL,
      )?.readsContext,
    ).toBe(true);
  });

  it('follows literal contract-call? through private functions into other contracts', async () => {
    const { analyzer: a } = await analyzer();
    const deps = await a.dependencies(id('vault'), 'get-vault-balance');
    expect(deps.contracts).toEqual(new Set([id('vault'), id('demo-token')]));
    expect(deps.volatile).toBe(false);
    expect((await a.dependencies(id('vault'), 'get-fee')).contracts).toEqual(new Set([id('vault')]));
    expect((await a.dependencies(id('vault'), 'get-age')).volatile).toBe(true);
    // demo-dao's get-dao-info reads no context (its constants were fixed at deployment).
    const dao = await a.dependencies(id('vault'), 'get-name-of-dao');
    expect(dao.contracts).toEqual(new Set([id('vault'), id('demo-dao')]));
    expect(dao.volatile).toBe(false);
  });

  it('makes a call through a trait parameter volatile (a call not nameable statically)', async () => {
    const { analyzer: a } = await analyzer();
    const send = await a.dependencies(id('router'), 'send');
    expect(send.dynamicCall).toBe(true);
    expect(send.volatile).toBe(true);
    const fee = await a.dependencies(id('router'), 'get-vault-fee');
    expect(fee.contracts).toEqual(new Set([id('router'), id('vault')]));
    expect(fee.volatile).toBe(false);
    expect((await a.dependencies(id('router'), 'get-stx')).readsContext).toBe(true);
  });

  it('follows private helpers handed by name to map, fold and filter', async () => {
    const other = `
(define-private (height-of (x uint)) (+ x stacks-block-height))
(define-private (balance-of (who principal)) (unwrap-panic (contract-call? .demo-token get-balance who)))
(define-private (add (x uint) (acc uint)) (+ x acc))
(define-private (big (x uint)) (> x u10))
(define-private (sum-of (who principal) (acc uint)) (+ acc (balance-of who)))
(define-read-only (heights (xs (list 5 uint))) (map height-of xs))
(define-read-only (balances (ws (list 5 principal))) (map balance-of ws))
(define-read-only (total (ws (list 5 principal))) (fold sum-of ws u0))
(define-read-only (bigs (xs (list 5 uint))) (filter big xs))
(define-read-only (sum (xs (list 5 uint))) (fold add xs u0))
`;
    const map = await sources();
    map.set(id('helpers'), other);
    const a = new DependencyAnalyzer({
      source: async (c) => map.get(c) ?? Promise.reject(new Error('none')),
    });
    expect((await a.dependencies(id('helpers'), 'heights')).readsContext).toBe(true);
    const balances = await a.dependencies(id('helpers'), 'balances');
    expect(balances.contracts).toEqual(new Set([id('helpers'), id('demo-token')]));
    expect(balances.volatile).toBe(false);
    // Through fold, then a helper that calls another helper by name at the head of a list.
    expect((await a.dependencies(id('helpers'), 'total')).contracts).toEqual(
      new Set([id('helpers'), id('demo-token')]),
    );
    for (const fn of ['bigs', 'sum']) {
      const deps = await a.dependencies(id('helpers'), fn);
      expect(deps.contracts).toEqual(new Set([id('helpers')]));
      expect(deps.volatile).toBe(false);
    }
  });

  it('never takes code in comments or strings for calls, and reads every principal form', async () => {
    const src = `
;; (contract-call? .demo-dao get-dao-info) stacks-block-height
(define-read-only (quiet) (begin "(contract-call? .demo-dao get-dao-info) stacks-block-height" u"burn-block-height" u1)) ; (at-block 0x00 u1)
(define-read-only (full) (contract-call? '${DEPLOYER}.demo-dao get-dao-info))
(define-read-only (short) (contract-call? .demo-dao get-dao-info))
`;
    const c = analyzeContract(id('x'), src);
    const quiet = c.functions.get('quiet')!;
    expect(quiet.external).toEqual([]);
    expect(quiet.readsContext).toBe(false);
    for (const fn of ['full', 'short']) {
      expect(c.functions.get(fn)!.external).toEqual([
        { contractId: id('demo-dao'), functionName: 'get-dao-info' },
      ]);
    }
  });

  it('makes Clarity 4 time and contract-hash reads, and every boot contract, volatile', async () => {
    const src = `
(define-read-only (now) stacks-block-time)
(define-read-only (hash) (contract-hash? .demo-token))
(define-read-only (stacker (who principal)) (contract-call? 'ST000000000000000000002AMW42H.pox-4 get-stacker-info who))
`;
    const fetched: string[] = [];
    const a = new DependencyAnalyzer({
      source: async (c) => {
        fetched.push(c);
        if (c === id('clock')) return src;
        throw new Error('none');
      },
    });
    expect((await a.dependencies(id('clock'), 'now')).volatile).toBe(true);
    expect((await a.dependencies(id('clock'), 'hash')).volatile).toBe(true);
    const stacker = await a.dependencies(id('clock'), 'stacker');
    expect(stacker.volatile).toBe(true);
    expect(stacker.dynamicCall).toBe(false);
    expect(stacker.contracts).toContain('ST000000000000000000002AMW42H.pox-4');
    for (const boot of ['SP000000000000000000002Q6VF78.pox-4', 'ST000000000000000000002AMW42H.signers']) {
      expect((await a.dependencies(boot, 'get-anything')).volatile).toBe(true);
    }
    // A boot contract's source is never needed to know that.
    expect(fetched).toEqual([id('clock')]);
  });

  it('fetches each contract once (memoised), and retries a source that failed', async () => {
    const map = await sources();
    const fetched: string[] = [];
    let fail = true;
    const a = new DependencyAnalyzer({
      source: async (contractId) => {
        fetched.push(contractId);
        if (contractId === id('demo-token') && fail) throw new Error('node down');
        return map.get(contractId)!;
      },
    });
    const first = await a.dependencies(id('vault'), 'get-vault-balance');
    expect(first.volatile).toBe(true);
    fail = false;
    await a.dependencies(id('vault'), 'get-vault-balance');
    await a.dependencies(id('vault'), 'get-fee');
    await a.dependencies(id('vault'), 'get-vault-balance');
    expect(fetched).toEqual([id('vault'), id('demo-token'), id('demo-token')]);
    expect((await a.dependencies(id('vault'), 'get-vault-balance')).volatile).toBe(false);
  });

  it('counts an unknown function or an unreadable source as volatile', async () => {
    const a = new DependencyAnalyzer({ source: async () => '(define-read-only (f) (ok u1)' });
    expect((await a.dependencies(id('broken'), 'f')).volatile).toBe(true);
    const { analyzer: b } = await analyzer();
    expect((await b.dependencies(id('demo-token'), 'no-such-fn')).dynamicCall).toBe(true);
  });
});
