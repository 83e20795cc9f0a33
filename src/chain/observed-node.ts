/**
 * The node API as the services use it: every successful answer's tip height
 * (X-Canonical-Stacks-Tip-Height, carried as AnswerMeta.tipHeight) is taught to the chain
 * tracker on the way back. Learning sits here, around the NodeApi, rather than inside the
 * attempt loop: the upstream layer reports, the chain layer decides what it means (and the
 * loop stays free to pick among several upstreams, whose lag is their own business).
 */
import type { Network } from '../network.js';
import type {
  ContractInterfaceAnswer,
  ForwardedAnswer,
  NodeAnswer,
  NodeApi,
  NodeInfoAnswer,
  ReadOnlyAnswer,
} from '../upstream/node-api.js';

export interface TipObserver {
  observe(network: Network, height: number | undefined): void;
}

export class ObservedNode implements NodeApi {
  constructor(
    private readonly node: NodeApi,
    private readonly observer: TipObserver,
  ) {}

  // Arguments are passed on exactly as given (options and the request context included), so
  // that the wrapped client sees the very call the service made.

  async callReadOnly(...args: Parameters<NodeApi['callReadOnly']>): Promise<ReadOnlyAnswer> {
    const answer = await this.node.callReadOnly(...args);
    this.observer.observe(args[0], answer.tipHeight);
    return answer;
  }

  async getContractInterface(
    ...args: Parameters<NodeApi['getContractInterface']>
  ): Promise<ContractInterfaceAnswer> {
    const answer = await this.node.getContractInterface(...args);
    this.observer.observe(args[0], answer.tipHeight);
    return answer;
  }

  async send(...args: Parameters<NonNullable<NodeApi['send']>>): Promise<NodeAnswer<ForwardedAnswer>> {
    if (this.node.send === undefined) throw new TypeError('this node API forwards no node route');
    const answer = await this.node.send(...args);
    this.observer.observe(args[0], answer.tipHeight);
    return answer;
  }

  async getInfo(...args: Parameters<NodeApi['getInfo']>): Promise<NodeInfoAnswer> {
    const answer = await this.node.getInfo(...args);
    this.observer.observe(args[0], answer.tipHeight);
    return answer;
  }
}
