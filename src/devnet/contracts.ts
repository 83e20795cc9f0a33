/**
 * The sample contracts deployed at start-up, in deployment order (traits first). Their
 * Clarity sources live in contracts/ at the repository root.
 */
import { readFile } from 'node:fs/promises';

export interface SampleContract {
  readonly name: string;
  readonly file: string;
}

export const SAMPLE_CONTRACTS: readonly SampleContract[] = [
  { name: 'sip-010-trait-ft-standard', file: 'sip-010-trait-ft-standard.clar' },
  { name: 'nft-trait', file: 'nft-trait.clar' },
  { name: 'demo-token', file: 'demo-token.clar' },
  { name: 'demo-nft', file: 'demo-nft.clar' },
  { name: 'demo-dao', file: 'demo-dao.clar' },
];

/** contracts/ at the repository root (this file is src/devnet/contracts.ts). */
const CONTRACTS_DIR = new URL('../../contracts/', import.meta.url);

export async function loadContractSource(contract: SampleContract): Promise<string> {
  return readFile(new URL(contract.file, CONTRACTS_DIR), 'utf8');
}
