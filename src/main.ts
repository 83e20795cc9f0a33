/**
 * Entry point: configuration from the environment, the gateway on PORT/HOST, graceful
 * shutdown on SIGTERM and SIGINT (stop accepting, finish in-flight requests, close the store).
 */
import { createGateway } from './app.js';
import { ConfigError, loadConfig } from './config.js';
import { startupFacts } from './observability/startup-line.js';

async function main(): Promise<void> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`clarity-cache: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  const gateway = await createGateway(config);
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
  const facts = startupFacts(config);
  app.log.info(
    { address, ...facts },
    `clarity-cache listening on ${address}; upstreams ${facts.upstreams.join(', ')}; store ${facts.store}${facts.dataDir === undefined ? '' : ` in ${facts.dataDir}`}${facts.redis === undefined ? '' : ` at ${facts.redis}`}`,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(
    `clarity-cache: failed to start: ${err instanceof Error ? err.message : String(err)}\n`,
  );
  process.exit(1);
});
