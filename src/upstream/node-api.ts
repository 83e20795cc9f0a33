/**
 * What the gateway needs from a Stacks node. The undici client in src/upstream implements
 * it; keeping the service on this narrow interface keeps routes and caching rules free of
 * transport details.
 */
import type { Network } from '../config.js';

export interface ReadOnlyRequestBody {
  readonly sender: string;
  readonly arguments: string[];
}

export interface NodeApi {
  callReadOnly(
    network: Network,
    address: string,
    contractName: string,
    functionName: string,
    body: ReadOnlyRequestBody,
  ): Promise<{ result: string }>;
  getContractInterface(network: Network, address: string, contractName: string): Promise<unknown>;
}
