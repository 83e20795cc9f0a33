/** The gateway's event observer from its configuration: off unless EVENT_OBSERVER_PORT is set. */
import type { ContractSourcePort } from '../../clarity/analysis/index.js';
import type { Config } from '../../config/index.js';
import { nodeContractSource } from './node-source.js';
import { type EventObserver, type EventObserverOptions, startEventObserver } from './start.js';

export function startObserver(
  config: Config,
  deps: { readonly contractSource?: ContractSourcePort },
  options: Omit<EventObserverOptions, 'config' | 'network' | 'source'>,
): Promise<EventObserver | undefined> {
  const network = config.eventObserverNetwork;
  if (config.eventObserverPort === undefined || network === undefined) return Promise.resolve(undefined);
  const upstream = config.upstreams.find((u) => u.network === network)!;
  return startEventObserver({
    ...options,
    config,
    network,
    source: deps.contractSource ?? nodeContractSource(upstream, config.upstreamTimeoutMs),
  });
}
