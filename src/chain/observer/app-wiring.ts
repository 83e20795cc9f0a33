/** The gateway's event observer from its configuration: off unless EVENT_OBSERVER_PORT is set. */
import type { ContractSourcePort } from '../../clarity/analysis/index.js';
import type { Config } from '../../config/index.js';
import { type NodeRouteReader, nodeContractSource } from './node-source.js';
import { type EventObserver, type EventObserverOptions, startEventObserver } from './start.js';

export function startObserver(
  config: Config,
  deps: {
    readonly contractSource?: ContractSourcePort | undefined;
    readonly routes?: NodeRouteReader | undefined;
  },
  options: Omit<EventObserverOptions, 'config' | 'network' | 'source'>,
): Promise<EventObserver | undefined> {
  const network = config.eventObserverNetwork;
  if (config.eventObserverPort === undefined || network === undefined) return Promise.resolve(undefined);
  const source =
    deps.contractSource ??
    (deps.routes === undefined
      ? () => Promise.reject(new Error('no node routes to read contract sources through'))
      : nodeContractSource(deps.routes, network));
  return startEventObserver({ ...options, config, network, source });
}
