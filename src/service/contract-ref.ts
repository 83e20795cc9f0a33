/** Validation of the contract coordinates shared by the read-only and ABI endpoints. */
import { isValidContractName, isValidFunctionName, parseContractAddress } from '../clarity/index.js';
import { GatewayError } from '../errors.js';
import type { Network } from '../network.js';

export interface ContractRef {
  readonly network: Network;
  readonly address: string;
  readonly contractName: string;
  /** `address.contractName`, as the node and error details write it. */
  readonly id: string;
}

export function parseContractRef(address: string, contractName: string): ContractRef {
  const { network } = parseContractAddress(address);
  if (!isValidContractName(contractName)) {
    throw new GatewayError(
      'INVALID_CONTRACT_ADDRESS',
      `"${truncate(contractName)}" is not a valid Clarity contract name: expected a letter followed by up to 127 letters, digits, "-" or "_"`,
      { address: `${truncate(address)}.${truncate(contractName)}`, contractName: truncate(contractName) },
    );
  }
  return { network, address, contractName, id: `${address}.${contractName}` };
}

export function assertFunctionName(functionName: string): void {
  if (!isValidFunctionName(functionName)) {
    throw new GatewayError(
      'VALIDATION_ERROR',
      `"${truncate(functionName)}" is not a valid Clarity function name`,
      {
        functionName: truncate(functionName),
      },
    );
  }
}

export function truncate(s: string, max = 140): string {
  return s.length <= max ? s : `${s.slice(0, max)}…`;
}
