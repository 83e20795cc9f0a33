/**
 * The Fastify floor: the gateway's framework set-up with none of the gateway's work. Fastify 5
 * with a pino logger at `warn` (so a child logger per request, as in the gateway), random UUID
 * request ids, the read-only route pattern with its three path parameters, the body parsed as
 * JSON; the handler answers the bytes the gateway gave (as bench/reference-server.ts does).
 * It shows how much of the gap to bare node:http the framework alone takes.
 *
 * Usage: PORT=... REFERENCE_RESPONSES=<file> node --import tsx bench/fastify-floor.ts
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import Fastify from 'fastify';

const file = process.env.REFERENCE_RESPONSES;
if (file === undefined) throw new Error('REFERENCE_RESPONSES is not set');
const answers = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, string>;

const app = Fastify({ logger: { level: 'warn' }, genReqId: () => randomUUID(), requestIdHeader: false });
const reply = (url: string): string | undefined => answers[url];
app.post('/contract-calls/read-only/:contractAddress/:contractName/:functionName', async (request, res) =>
  res.type('application/json; charset=utf-8').send(reply(request.url) ?? '{"success":false}'),
);
app.post('/contract-calls/decode-clarity-value', async (request, res) =>
  res.type('application/json; charset=utf-8').send(reply(request.url) ?? '{"success":false}'),
);

const address = await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' });
process.stdout.write(`fastify floor listening on ${address}\n`);

const stop = (): void => {
  app.close().then(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
