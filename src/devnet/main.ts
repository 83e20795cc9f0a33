/**
 * Starts the devnet alone: `node --import tsx src/devnet/main.ts`.
 * DEVNET_PORT (default 20443) and DEVNET_HOST (default 127.0.0.1) choose where it listens.
 */
import { startDevnet } from './index.js';

function port(): number {
  const raw = process.env.DEVNET_PORT ?? '20443';
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value > 65535) {
    console.error(`invalid configuration: DEVNET_PORT must be a port number, got "${raw}"`);
    process.exit(1);
  }
  return value;
}

const devnet = await startDevnet({
  port: port(),
  host: process.env.DEVNET_HOST ?? '127.0.0.1',
  log: (line) => console.log(line),
});
console.log(`devnet: deployer ${devnet.deployer}`);
for (const [name, address] of Object.entries(devnet.accounts))
  console.log(`devnet:   ${name.padEnd(8)} ${address}`);

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    console.log(`devnet: ${signal}, stopping`);
    devnet.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}
