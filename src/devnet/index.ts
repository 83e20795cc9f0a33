/**
 * A local Stacks devnet for clarity-cache: an HTTP server speaking the subset of the Stacks
 * node RPC the gateway uses, backed by the real Clarity VM of @stacks/clarinet-sdk (simnet),
 * with the sample contracts of contracts/ deployed from the devnet deployer.
 *
 * For development, the demo and tests only: @stacks/clarinet-sdk is GPL-3.0 and a
 * devDependency; nothing outside src/devnet, scripts and tests imports this module, and the
 * production build (tsconfig.build.json) leaves src/devnet out.
 */
import { DEPLOYER, DEVNET_ACCOUNTS, type DevnetAccounts } from './accounts.js';
import { DevnetChain, type DevnetEpoch } from './chain.js';
import { EventDispatcher, observerUrls } from './event-dispatcher.js';
import { postBlocksTo } from './observers.js';
import { DevnetServer } from './server.js';

export {
  DEPLOYER,
  DEVNET_ACCOUNTS,
  DEVNET_PRIVATE_KEYS,
  type DevnetAccountName,
  type DevnetAccounts,
} from './accounts.js';
export type { BlockIdentity } from './blocks.js';
export type { CallReadResult, ContractInterface, DevnetEpoch, PublicCallOutcome } from './chain.js';
export { SAMPLE_CONTRACTS } from './contracts.js';

export interface DevnetOptions {
  /** Port to listen on; 0 picks a free one. Default 20443, a node's RPC port. */
  readonly port?: number;
  /** Default 127.0.0.1. */
  readonly host?: string;
  /** Receives one line per start-up step and state change; silent by default. */
  readonly log?: (line: string) => void;
  /** Event observers every block is posted to as /new_block; default EVENT_OBSERVER_URLS (comma-separated). */
  readonly eventObserverUrls?: readonly string[];
  /**
   * The epoch the chain runs in: '3.1' (default) deploys every contract as Clarity 3; '3.3'
   * deploys a broadcast deployment as the Clarity version its payload names (up to 4, which
   * has `stacks-block-time`), the sample contracts as Clarity 3.
   */
  readonly epoch?: DevnetEpoch;
}

export interface Devnet {
  /** Base URL of the node RPC, e.g. http://127.0.0.1:20443 (no trailing slash). */
  readonly url: string;
  readonly port: number;
  /** The devnet deployer, which deployed every sample contract. */
  readonly deployer: string;
  /** The well-known Clarinet devnet accounts, each funded with 100M STX. */
  readonly accounts: DevnetAccounts;
  /** Deployed contract ids (`address.name`), in deployment order. */
  readonly contracts: readonly string[];
  /** Milliseconds from the call to startDevnet until the server listened. */
  readonly startupMs: number;
  /** Current Stacks tip height. */
  tipHeight(): number;
  close(): Promise<void>;
}

export async function startDevnet(options: DevnetOptions = {}): Promise<Devnet> {
  const started = performance.now();
  const host = options.host ?? '127.0.0.1';
  const log = options.log ?? (() => {});
  const chain = await DevnetChain.create({ epoch: options.epoch });
  log(`devnet: deployed ${chain.contracts.join(', ')}; tip height ${chain.tipHeight}`);
  const server = new DevnetServer(chain, log);
  // EVENT_OBSERVER_URLS: every block made is posted to these observers as /new_block.
  const observers = options.eventObserverUrls ?? observerUrls();
  const stopPosting =
    observers.length === 0
      ? undefined
      : postBlocksTo(
          chain,
          new EventDispatcher({
            urls: observers,
            onError: (url, err) => log(`devnet: /new_block to ${url} failed: ${String(err)}`),
          }),
        );
  let port: number;
  try {
    port = await server.listen(options.port ?? 20443, host);
  } catch (error) {
    await chain.close();
    throw error;
  }
  const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  const url = `http://${urlHost}:${port}`;
  const startupMs = Math.round(performance.now() - started);
  log(`devnet: node RPC listening on ${url} (started in ${startupMs} ms)`);
  let closing: Promise<void> | undefined;
  return {
    url,
    port,
    deployer: DEPLOYER,
    accounts: DEVNET_ACCOUNTS,
    contracts: chain.contracts,
    startupMs,
    tipHeight: () => chain.tipHeight,
    close() {
      closing ??= (async () => {
        stopPosting?.();
        await server.close();
        await chain.close();
      })();
      return closing;
    },
  };
}
