/**
 * Entry point: configuration from the environment, the gateway on PORT/HOST, graceful
 * shutdown on SIGTERM and SIGINT (stop accepting, finish in-flight requests, close the store).
 */
import { createGateway } from './app.js';
import { ConfigError, loadConfig } from './config/index.js';
import { redact } from './config/redact.js';
import { unknownVariableWarnings } from './config/unknown.js';
import { tuneHeapGrowth } from './observability/heap-growth.js';
import { publicUrl, startupFacts } from './observability/startup-line.js';

async function main(): Promise<void> {
  tuneHeapGrowth();
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`clarity-cache: ${redact(err.message)}\n`);
      process.exit(1);
    }
    throw err;
  }
  // createGateway registers the configuration's secrets first thing: from here on no message
  // or log line shows them.
  const gateway = await createGateway(config);
  // A misspelt variable does nothing: say so once, with the name it probably meant.
  for (const warning of unknownVariableWarnings(process.env)) gateway.app.log.warn(warning);
  const { app } = gateway;

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down: finishing in-flight requests');
    const force = setTimeout(() => {
      app.log.error('shutdown grace period elapsed; exiting');
      process.exit(1);
    }, config.shutdownGraceMs);
    force.unref();
    gateway.close().then(
      () => {
        app.log.info('stopped');
        process.exit(0);
      },
      (err: unknown) => {
        app.log.error({ err }, 'error during shutdown');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));

  const address = await app.listen({ port: config.port, host: config.host });
  startupChecks(gateway, config);
  const facts = startupFacts(config);
  app.log.info(
    { address, ...facts },
    `clarity-cache listening on ${address}; upstreams ${facts.upstreams.join(', ')}; store ${facts.store}${facts.dataDir === undefined ? '' : ` in ${facts.dataDir}`}${facts.redis === undefined ? '' : ` at ${facts.redis}`}`,
  );
}

/**
 * What an operator would otherwise learn the hard way, said once each at start-up, after the
 * gateway listens (never delaying readiness): that latest-state entries are kept without end
 * when nothing bounds them, and which upstream did not answer its one GET /v2/info.
 */
function startupChecks(
  gateway: Awaited<ReturnType<typeof createGateway>>,
  config: ReturnType<typeof loadConfig>,
): void {
  const log = gateway.app.log;
  if (config.cacheMaxBlocks === undefined)
    log.warn(
      'latest-state entries are kept indefinitely: without CACHE_MAX_BLOCKS (or a ttl or maxBlocks per request) a cached read is answered however far the chain has moved since; set CACHE_MAX_BLOCKS to bound it',
    );
  // One GET /v2/info of each upstream: the chain each network serves and its first tip.
  void gateway.startupRound?.().then(
    (failures) => {
      for (const { upstream, failure } of failures)
        log.warn(
          { upstream: upstream.id, url: publicUrl(upstream.label) },
          `upstream ${upstream.id} (${publicUrl(upstream.label)}) did not answer GET /v2/info at start-up: ${redact(failure)}`,
        );
    },
    () => {},
  );
}

main().catch((err: unknown) => {
  process.stderr.write(
    `clarity-cache: failed to start: ${redact(err instanceof Error ? err.message : String(err))}\n`,
  );
  process.exit(1);
});
