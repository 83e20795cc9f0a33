/** `addr.name` contract ids, as the client, the command line and the explorer take them. */
import { ValidationError } from './errors.js';

export interface ContractId {
  readonly address: string;
  readonly name: string;
}

/**
 * Split `addr.name` at its first dot. Only the shape is checked here; the gateway checks the
 * address and the name (INVALID_CONTRACT_ADDRESS) and says precisely what is wrong.
 */
export function splitContractId(contractId: string): ContractId {
  const id = typeof contractId === 'string' ? contractId.trim() : '';
  const dot = id.indexOf('.');
  if (dot <= 0 || dot === id.length - 1) {
    throw new ValidationError({
      code: 'VALIDATION_ERROR',
      status: 0,
      message: `expected a contract id ADDRESS.name, got ${JSON.stringify(String(contractId).slice(0, 200))}`,
      details: { contractId },
    });
  }
  return { address: id.slice(0, dot), name: id.slice(dot + 1) };
}
