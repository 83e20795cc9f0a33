/**
 * The local chain with the gateway as its node's event observer (docs/events.md): the gateway
 * reads from the devnet, every block the devnet makes is posted to the gateway's observer, and
 * the dependency analysis reads the contracts' source from the repository's contracts/ (the
 * ones the devnet deploys).
 */
import { readFile } from 'node:fs/promises';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { type RunningGateway, startGateway, testEnv } from '../support/gateway.js';
import { freePort } from '../support/process.js';

export interface ObservedDevnet {
  readonly devnet: Devnet;
  readonly gw: RunningGateway;
  /** Closes the gateway, then the devnet. */
  close(): Promise<void>;
}

/** A contract's source as the devnet deployed it. */
export function repositorySource(contractId: string): Promise<string> {
  return readFile(`contracts/${contractId.split('.')[1]}.clar`, 'utf8');
}

export async function startObservedDevnet(env: Record<string, string> = {}): Promise<ObservedDevnet> {
  const observerPort = await freePort();
  const devnet = await startDevnet({ port: 0, eventObserverUrls: [`http://127.0.0.1:${observerPort}`] });
  const gw = await startGateway(
    testEnv(devnet.url, {
      EVENT_OBSERVER_PORT: String(observerPort),
      EVENT_OBSERVER_NETWORK: 'testnet',
      CHAIN_TIP_MAX_AGE_MS: '60000',
      ...env,
    }),
    { contractSource: repositorySource },
  );
  return {
    devnet,
    gw,
    close: async () => {
      await gw.close();
      await devnet.close();
    },
  };
}
