/**
 * HTTP over raw sockets (node:net), for what fetch cannot send: half-sent requests, malformed
 * request lines, conflicting framing headers, oversized header sections, exact Content-Type
 * control. Everything waits on socket events, never on timers.
 */
import net from 'node:net';

export interface RawResponse {
  /** Everything the server wrote before closing (or before `untilResponse` was satisfied). */
  readonly raw: string;
  readonly status: number | undefined;
  readonly headers: Record<string, string>;
  readonly bodyText: string;
  // biome-ignore lint/suspicious/noExplicitAny: test assertions read arbitrary envelope shapes
  readonly body: any;
  /** Whether the server closed the connection. */
  readonly closed: boolean;
}

export function parseRawResponse(raw: string, closed: boolean): RawResponse {
  const headEnd = raw.indexOf('\r\n\r\n');
  const head = headEnd < 0 ? raw : raw.slice(0, headEnd);
  const bodyText = headEnd < 0 ? '' : raw.slice(headEnd + 4);
  const [statusLine = '', ...lines] = head.split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body: unknown;
  try {
    body = JSON.parse(bodyText);
  } catch {
    body = undefined;
  }
  return { raw, status: m === null ? undefined : Number(m[1]), headers, bodyText, body, closed };
}

function hostPort(baseUrl: string): { host: string; port: number } {
  const u = new URL(baseUrl);
  return { host: u.hostname, port: Number(u.port) };
}

/**
 * Open a connection, write `data` (string chunks written in order), and resolve with what the
 * server answered once it closes the connection, or once one complete response (by
 * Content-Length) has arrived when `untilResponse` is set.
 */
export function rawExchange(
  baseUrl: string,
  data: string | Buffer | ReadonlyArray<string | Buffer>,
  opts: { untilResponse?: boolean } = {},
): Promise<RawResponse> {
  const { host, port } = hostPort(baseUrl);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = net.connect(port, host);
    let settled = false;
    const finish = (closed: boolean) => {
      if (settled) return;
      settled = true;
      socket.destroy();
      resolve(parseRawResponse(Buffer.concat(chunks).toString('latin1'), closed));
    };
    socket.on('connect', () => {
      for (const part of Array.isArray(data) ? data : [data]) socket.write(part);
    });
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      if (!opts.untilResponse) return;
      const parsed = parseRawResponse(Buffer.concat(chunks).toString('latin1'), false);
      const length = Number(parsed.headers['content-length'] ?? Number.NaN);
      if (parsed.status !== undefined && Buffer.byteLength(parsed.bodyText, 'latin1') >= length)
        finish(false);
    });
    // A reset after the answer was written still counts as closed with that answer.
    socket.on('error', (err) => {
      if (chunks.length > 0 || (err as NodeJS.ErrnoException).code === 'ECONNRESET') finish(true);
      else if (!settled) {
        settled = true;
        reject(err);
      }
    });
    socket.on('close', () => finish(true));
  });
}

/** A connected socket that has written `data` and keeps the connection open. */
export function openSocket(baseUrl: string, data = ''): Promise<net.Socket> {
  const { host, port } = hostPort(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, host, () => {
      if (data !== '') socket.write(data);
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

/** Resolves with what the socket received once the server closes it. */
export function receivedUntilClose(socket: net.Socket): Promise<RawResponse> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', () => {});
    const done = () => resolve(parseRawResponse(Buffer.concat(chunks).toString('latin1'), true));
    if (socket.destroyed) done();
    else socket.once('close', done);
  });
}

/** One complete HTTP/1.1 request as text. */
export function httpRequest(
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): string {
  const lines = [`${method} ${path} HTTP/1.1`, 'Host: localhost', 'Connection: close'];
  for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
  if (body !== undefined && !Object.keys(headers).some((k) => k.toLowerCase() === 'transfer-encoding')) {
    lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
  }
  return `${lines.join('\r\n')}\r\n\r\n${body ?? ''}`;
}
