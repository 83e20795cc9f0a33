/**
 * The node API as the services use it: every successful answer's tip height
 * (X-Canonical-Stacks-Tip-Height, carried as AnswerMeta.tipHeight) is taught to the chain
 * tracker on the way back. Learning sits here, around the NodeApi, rather than inside the
 * attempt loop: the upstream layer reports, the chain layer decides what it means (and the
 * loop stays free to pick among several upstreams, whose lag is their own business).
 */
import type { Network } from '../config.js';
import type {
  CallOptions,
  ContractInterfaceAnswer,
  NodeApi,
  NodeInfoAnswer,
  ReadOnlyAnswer,
  ReadOnlyCallOptions,
  ReadOnlyRequestBody,
} from '../upstream/node-api.js';

export interface TipObserver {
  observe(network: Network, height: number | undefined): void;
}

export class ObservedNode implements NodeApi {
  constructor(
    private readonly node: NodeApi,
    private readonly observer: TipObserver,
  ) {}

  async callReadOnly(
    network: Network,
    address: string,
    contractName: string,
    functionName: string,
    body: ReadOnlyRequestBody,
    opts?: ReadOnlyCallOptions,
  ): Promise<ReadOnlyAnswer> {
    const answer = await (opts === undefined
      ? this.node.callReadOnly(network, address, contractName, functionName, body)
      : this.node.callReadOnly(network, address, contractName, functionName, body, opts));
    this.observer.observe(network, answer.tipHeight);
    return answer;
  }

  async getContractInterface(
    network: Network,
    address: string,
    contractName: string,
  ): Promise<ContractInterfaceAnswer> {
    const answer = await this.node.getContractInterface(network, address, contractName);
    this.observer.observe(network, answer.tipHeight);
    return answer;
  }

  async getInfo(network: Network, opts?: CallOptions): Promise<NodeInfoAnswer> {
    const answer = await (opts === undefined ? this.node.getInfo(network) : this.node.getInfo(network, opts));
    this.observer.observe(network, answer.tipHeight);
    return answer;
  }
}
