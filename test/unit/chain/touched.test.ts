import { readFile } from 'node:fs/promises';
import {
  AddressHashMode,
  Cl,
  createCoinbasePayload,
  createNakamotoCoinbasePayload,
  createSingleSigSpendingCondition,
  createStandardAuth,
  createTenureChangePayload,
  getAddressFromPrivateKey,
  makeContractCall,
  makeContractDeploy,
  makeRandomPrivKey,
  makeSTXTokenTransfer,
  privateKeyToPublic,
  StacksTransactionWire,
  serializeTransaction,
  TenureChangeCause,
} from '@stacks/transactions';
import { describe, expect, it } from 'vitest';
import { blockEffects, eventContracts } from '../../../src/chain/observer/touched.js';
import { classifyTransaction } from '../../../src/chain/observer/transactions.js';
import { DependencyAnalyzer } from '../../../src/clarity/analysis/index.js';

const key = makeRandomPrivKey();
const sender = getAddressFromPrivateKey(key, 'testnet');
const DEPLOYER = 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM';
const opts = { senderKey: key, network: 'testnet' as const, fee: 0, nonce: 0 };

async function analyzer(): Promise<DependencyAnalyzer> {
  const token = await readFile('contracts/demo-token.clar', 'utf8');
  const sources = new Map([
    [`${DEPLOYER}.demo-token`, token],
    [`${DEPLOYER}.vault`, '(define-public (deposit) (contract-call? .demo-token get-balance tx-sender))'],
    [`${DEPLOYER}.router`, '(define-public (go (t <x>)) (contract-call? t f))'],
  ]);
  return new DependencyAnalyzer({
    source: async (id) => {
      const src = sources.get(id);
      if (src === undefined) throw new Error('unknown');
      return src;
    },
  });
}

const call = async (contract: string, fn: string) =>
  serializeTransaction(
    await makeContractCall({
      ...opts,
      contractAddress: DEPLOYER,
      contractName: contract,
      functionName: fn,
      functionArgs: [],
    }),
  );

/** A transaction of the kinds only miners make (unsigned: the observer never checks signatures). */
function minerTx(payload: ConstructorParameters<typeof StacksTransactionWire>[0]['payload']): string {
  const auth = createStandardAuth(
    createSingleSigSpendingCondition(AddressHashMode.P2PKH, privateKeyToPublic(key) as string, 0, 0),
  );
  return `0x${serializeTransaction(new StacksTransactionWire({ payload, auth, network: 'testnet' }))}`;
}
const COINBASE = minerTx(createCoinbasePayload(new Uint8Array(32).fill(1)));
const NAKAMOTO_COINBASE = minerTx(
  createNakamotoCoinbasePayload(new Uint8Array(32).fill(2), Cl.none(), new Uint8Array(80).fill(3)),
);
const TENURE_CHANGE = minerTx(
  createTenureChangePayload(
    '11'.repeat(20),
    '22'.repeat(20),
    '33'.repeat(20),
    '44'.repeat(32),
    3,
    TenureChangeCause.BlockFound,
    '55'.repeat(20),
  ),
);

describe('blockEffects', () => {
  it('a contract call touches the contract and what the function reaches', async () => {
    const effects = await blockEffects(
      { transactions: [{ raw_tx: `0x${await call('vault', 'deposit')}` }], events: [] },
      await analyzer(),
    );
    expect(effects.touched).toEqual({
      all: false,
      contracts: new Set([`${DEPLOYER}.vault`, `${DEPLOYER}.demo-token`]),
    });
    expect(effects.deployed).toEqual([]);
  });

  it('a deploy touches the new contract (named after its signer) and reports it deployed', async () => {
    const tx = await makeContractDeploy({
      ...opts,
      contractName: 'fresh',
      codeBody: '(define-data-var n uint u0) (contract-call? .demo-token get-name)',
    });
    const a = await analyzer();
    // The deploy's own calls resolve against its deployer: unknown here, so everything is touched.
    const effects = await blockEffects(
      { transactions: [{ raw_tx: serializeTransaction(tx) }], events: [] },
      a,
    );
    expect(effects.deployed).toEqual([`${sender}.fresh`]);
    expect(effects.touched).toEqual({ all: true });
    const quiet = await makeContractDeploy({
      ...opts,
      contractName: 'quiet',
      codeBody: '(define-read-only (f) u1)',
    });
    const q = await blockEffects({ transactions: [{ raw_tx: serializeTransaction(quiet) }], events: [] }, a);
    expect(q.touched).toEqual({ all: false, contracts: new Set([`${sender}.quiet`]) });
    // And the analyzer knows it without fetching it.
    expect((await a.dependencies(`${sender}.quiet`, 'f')).volatile).toBe(false);
  });

  it('a transfer, a coinbase or a tenure change touches no contract', async () => {
    const a = await analyzer();
    const transfer = await makeSTXTokenTransfer({ ...opts, recipient: DEPLOYER, amount: 1n });
    const effects = await blockEffects(
      {
        transactions: [
          { raw_tx: serializeTransaction(transfer) },
          { raw_tx: `0x${await call('vault', 'deposit')}` },
        ],
        events: [],
      },
      a,
    );
    expect(effects.touched).toEqual({
      all: false,
      contracts: new Set([`${DEPLOYER}.vault`, `${DEPLOYER}.demo-token`]),
    });
    expect(classifyTransaction(serializeTransaction(transfer))).toEqual({ kind: 'none' });
    // Coinbase (payload 0x04), Nakamoto coinbase (0x08) and tenure change (0x07) transactions of
    // a real testnet chain, as the node posts them.
    for (const raw of [COINBASE, TENURE_CHANGE, NAKAMOTO_COINBASE]) {
      expect(classifyTransaction(raw)).toEqual({ kind: 'none' });
    }
  });

  it('a burnchain operation, an undecodable transaction or a trait call touches everything', async () => {
    const a = await analyzer();
    expect(classifyTransaction('0x00')).toEqual({ kind: 'all', why: 'burnchain-operation' });
    expect(classifyTransaction('zz')).toEqual({ kind: 'all', why: 'undecodable' });
    for (const raw_tx of ['0x00', 'zz', await call('router', 'go'), await call('missing', 'f')]) {
      expect((await blockEffects({ transactions: [{ raw_tx }], events: [] }, a)).touched).toEqual({
        all: true,
      });
    }
  });

  it('a failed transaction touches nothing, and a failed deploy is neither learned nor reported', async () => {
    const a = await analyzer();
    const raw = `0x${await call('vault', 'deposit')}`;
    expect(classifyTransaction(raw, 'abort_by_response')).toEqual({ kind: 'none' });
    expect(classifyTransaction(raw, 'abort_by_post_condition')).toEqual({ kind: 'none' });
    expect(classifyTransaction(raw, 'success').kind).toBe('call');
    // A burnchain operation touches everything whatever its status says.
    expect(classifyTransaction('0x00', 'success')).toEqual({ kind: 'all', why: 'burnchain-operation' });
    const failed = await makeContractDeploy({
      ...opts,
      contractName: 'vault',
      codeBody: '(define-read-only (get-vault) (contract-call? .router go))',
    });
    const version = a.version;
    const effects = await blockEffects(
      { transactions: [{ raw_tx: serializeTransaction(failed), status: 'abort_by_response' }], events: [] },
      a,
    );
    expect(effects).toEqual({ touched: { all: false, contracts: new Set() }, deployed: [] });
    expect(a.version).toBe(version);
  });

  it('events name contracts through contract_identifier and asset_identifier', () => {
    expect(
      eventContracts([
        { type: 'contract_event', contract_event: { contract_identifier: `${DEPLOYER}.a`, topic: 'print' } },
        { type: 'ft_transfer_event', ft_transfer_event: { asset_identifier: `${DEPLOYER}.b::tok` } },
        { type: 'nft_mint_event', nft_mint_event: { asset_identifier: `${DEPLOYER}.c::nft` } },
        { type: 'stx_transfer_event', stx_transfer_event: { amount: '1' } },
        { type: 'contract_event', contract_event: { contract_identifier: 'not a contract' } },
        null,
        7,
      ]),
    ).toEqual(new Set([`${DEPLOYER}.a`, `${DEPLOYER}.b`, `${DEPLOYER}.c`]));
  });
});
