/**
 * The node API as the services use it: every successful answer's tip height
 * (X-Canonical-Stacks-Tip-Height, carried as AnswerMeta.tipHeight) is taught to the chain
 * tracker on the way back. Learning sits here, around the NodeApi, rather than inside the
 * attempt loop: the upstream layer reports, the chain layer decides what it means (and the
 * loop stays free to pick among several upstreams, whose lag is their own business).
 */
import type { Network } from '../network.js';
import type { NodeEndpoint } from '../upstream/endpoints.js';
import type { AnswerOf, NodeAnswer, NodeApi, NodeCall, RequestContext } from '../upstream/node-api.js';

export interface TipObserver {
  observe(network: Network, height: number | undefined): void;
}

export class ObservedNode implements NodeApi {
  constructor(
    private readonly node: NodeApi,
    private readonly observer: TipObserver,
  ) {}

  // The call is passed on exactly as given (options and the request context included), so
  // that the wrapped client sees the very call the service made.
  async send<C extends NodeCall>(
    endpoint: NodeEndpoint,
    call: C,
    ctx?: RequestContext,
  ): Promise<NodeAnswer<AnswerOf<C>>> {
    const answer = await this.node.send(endpoint, call, ctx);
    this.observer.observe(call.network, answer.tipHeight);
    return answer;
  }
}
