/**
 * The Node ceiling for a miss: a bare node:http server in front of the upstream with undici, and
 * nothing else. It reads the request body, parses it as JSON (as any JSON endpoint must), sends
 * the same method, path and body upstream over an undici Pool (keep-alive connections, as the
 * gateway's upstream client keeps), reads the whole answer and sends its status, Content-Type
 * and bytes back. No cache, no validation, no decoding: what forwarding a request costs Node.
 *
 * Usage: PORT=... UPSTREAM=<http://host:port> node --import tsx bench/proxy-reference.ts
 * Logs "proxy listening on <port>" once it accepts connections.
 */
import http from 'node:http';
import { Pool } from 'undici';

const upstream = process.env.UPSTREAM;
if (upstream === undefined) throw new Error('UPSTREAM is not set');
const pool = new Pool(upstream, { connections: 64, pipelining: 1 });

const server = http.createServer({ keepAliveTimeout: 72_000 }, (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    try {
      if (body.length > 0) JSON.parse(body.toString('utf8'));
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end('{"success":false}');
      return;
    }
    pool
      .request({
        method: (req.method ?? 'GET') as 'GET',
        path: req.url ?? '/',
        headers: { 'content-type': 'application/json' },
        body: body.length > 0 ? body : null,
      })
      .then(async (answer) => {
        const bytes = Buffer.from(await answer.body.arrayBuffer());
        res.writeHead(answer.statusCode, {
          'content-type': String(answer.headers['content-type'] ?? 'application/json'),
          'content-length': bytes.length,
        });
        res.end(bytes);
      })
      .catch(() => {
        res.writeHead(502, { 'content-type': 'application/json' });
        res.end('{"success":false}');
      });
  });
});

server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  process.stdout.write(`proxy listening on ${port}\n`);
});

const stop = (): void => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
  void pool.close();
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
