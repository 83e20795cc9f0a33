/**
 * Contract sources for the dependency analysis, asked through the endpoint table's `source`
 * route like any client's request (GET /v2/contracts/source/{address}/{name}?proof=0): the
 * same cache (a deployed contract's code never changes, so the answer is kept indefinitely),
 * upstream pool, budget, circuit breaker, failover, and each upstream's own path prefix and
 * key. The analysis also memoises what it learned, so each contract is asked for about once.
 * Nothing here speaks HTTP: the one node client (StacksNodeClient.send) does, behind the read.
 */
import type { ContractSourcePort } from '../../clarity/analysis/index.js';
import type { Network } from '../../network.js';
import { type NodeEndpoint, SOURCE } from '../../upstream/endpoints.js';
import type { ForwardedAnswer } from '../../upstream/node-api.js';

/** One node route's cached read (src/service/node-route-service.ts). */
export type NodeRouteReader = (req: {
  readonly endpoint: NodeEndpoint;
  readonly params: Readonly<Record<string, string>>;
  readonly query: Readonly<Record<string, string | undefined>>;
  readonly network: Network;
}) => Promise<ForwardedAnswer>;

export function nodeContractSource(read: NodeRouteReader, network: Network): ContractSourcePort {
  return async (contractId) => {
    const dot = contractId.indexOf('.');
    const answer = await read({
      endpoint: SOURCE,
      params: { address: contractId.slice(0, dot), contract: contractId.slice(dot + 1) },
      query: { proof: '0' },
      network,
    });
    if (answer.status !== 200) throw new Error(`contract source of ${contractId}: HTTP ${answer.status}`);
    const body = JSON.parse(answer.body) as { source?: unknown } | null;
    if (typeof body?.source !== 'string')
      throw new Error(`contract source of ${contractId}: no source field`);
    return body.source;
  };
}
