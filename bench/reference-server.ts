/**
 * The Node ceiling: a bare node:http server that does the least a JSON endpoint can do. It
 * reads the request body, parses it as JSON, and answers with the exact bytes the gateway gave
 * for the same request (bench/run.ts captures them first and passes them in).
 *
 * A key "<path>\n<request body>" answers that exact request body on that path (when the load
 * rotates over several bodies whose answers differ); only when such keys are given does the
 * server look the request body up at all.
 *
 * Usage: PORT=... REFERENCE_RESPONSES=<file: JSON {"<path>": "<response body>"}> \
 *          node --import tsx bench/reference-server.ts
 * Logs "reference listening on <port>" once it accepts connections.
 */
import fs from 'node:fs';
import http from 'node:http';

const file = process.env.REFERENCE_RESPONSES;
if (file === undefined) throw new Error('REFERENCE_RESPONSES is not set');
const answers = new Map<string, Buffer>(
  Object.entries(JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, string>).map(([path, body]) => [
    path,
    Buffer.from(body),
  ]),
);
const notFound = Buffer.from('{"success":false}');
const byBody = [...answers.keys()].some((k) => k.includes('\n'));
const answerOf = byBody
  ? (url: string, raw: Buffer[]): Buffer =>
      answers.get(`${url}\n${Buffer.concat(raw).toString('utf8')}`) ?? answers.get(url) ?? notFound
  : (url: string): Buffer => answers.get(url) ?? notFound;

const server = http.createServer({ keepAliveTimeout: 72_000 }, (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    let status = 200;
    try {
      if (chunks.length > 0) JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      status = 400;
    }
    const body = answerOf(req.url ?? '', chunks);
    if (body === notFound) status = 404;
    res.writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': body.length,
    });
    res.end(body);
  });
});

server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  process.stdout.write(`reference listening on ${port}\n`);
});

const stop = (): void => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
