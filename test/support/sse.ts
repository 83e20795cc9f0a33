/**
 * A test's Server-Sent Events reader over real HTTP (node:http, so that a test can leave a
 * stream unread or close it mid-way): the events as they arrive, and waits for the next one
 * that matches. Parses as a browser's EventSource does (event, data lines, id, comments).
 */
import http from 'node:http';

export interface SseEvent {
  readonly event: string;
  readonly id: string | undefined;
  readonly data: string;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON shapes
  readonly json: any;
}

export interface SseConnection {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  /** The local port of the connection (the server sees it as the remote port). */
  readonly localPort: number | undefined;
  /** The body's text, when the answer is not a stream (an error envelope). */
  readonly text: Promise<string>;
  readonly events: SseEvent[];
  readonly comments: string[];
  /** The `retry:` field, when sent. */
  retry: number | undefined;
  /** Resolves when the server ends the stream. */
  readonly ended: Promise<void>;
  /** The next event (after those already taken by next()) matching `match`. */
  next(match?: (e: SseEvent) => boolean, timeoutMs?: number): Promise<SseEvent>;
  close(): void;
  /** Stop reading (the socket's buffers fill up: a slow consumer). */
  pause(): void;
  /** Read again after pause(): what the server queued meanwhile arrives. */
  resume(): void;
}

export function openSse(url: string, headers: Record<string, string> = {}): Promise<SseConnection> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers: { accept: 'text/event-stream', ...headers } }, (res) => {
      const events: SseEvent[] = [];
      const comments: string[] = [];
      let taken = 0;
      const waiters: (() => void)[] = [];
      let buffer = '';
      let endResolve!: () => void;
      const ended = new Promise<void>((r) => {
        endResolve = r;
      });
      let whole = '';
      let textResolve!: (t: string) => void;
      const text = new Promise<string>((r) => {
        textResolve = r;
      });
      const stream = (res.headers['content-type'] ?? '').startsWith('text/event-stream');
      const conn: SseConnection = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        localPort: res.socket.localPort,
        text,
        events,
        comments,
        retry: undefined,
        ended,
        next(match = () => true, timeoutMs = 20_000) {
          return new Promise<SseEvent>((resolveNext, rejectNext) => {
            const timer = setTimeout(
              () =>
                rejectNext(
                  new Error(
                    `no matching event within ${timeoutMs} ms; got ${JSON.stringify(events.slice(taken))}`,
                  ),
                ),
              timeoutMs,
            );
            const look = (): boolean => {
              while (taken < events.length) {
                const e = events[taken++]!;
                if (match(e)) {
                  clearTimeout(timer);
                  resolveNext(e);
                  return true;
                }
              }
              return false;
            };
            if (look()) return;
            const waiter = (): void => {
              if (!look()) waiters.push(waiter);
            };
            waiters.push(waiter);
          });
        },
        close: () => {
          req.destroy();
        },
        pause: () => {
          res.pause();
        },
        resume: () => {
          res.resume();
        },
      };
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        whole += chunk;
        if (!stream) return;
        buffer += chunk;
        let cut = buffer.indexOf('\n\n');
        while (cut >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          let event = 'message';
          let id: string | undefined;
          const data: string[] = [];
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) comments.push(line.slice(1).trim());
            else if (line.startsWith('event: ')) event = line.slice(7);
            else if (line.startsWith('id: ')) id = line.slice(4);
            else if (line.startsWith('data: ')) data.push(line.slice(6));
            else if (line.startsWith('retry: ')) conn.retry = Number(line.slice(7));
          }
          if (data.length > 0) {
            const text = data.join('\n');
            let json: unknown;
            try {
              json = JSON.parse(text);
            } catch {
              json = undefined;
            }
            events.push({ event, id, data: text, json });
            for (const w of waiters.splice(0)) w();
          }
          cut = buffer.indexOf('\n\n');
        }
      });
      const finish = (): void => {
        textResolve(whole);
        endResolve();
        for (const w of waiters.splice(0)) w();
      };
      res.on('end', finish);
      res.on('close', finish);
      res.on('error', finish);
      resolve(conn);
    });
    req.on('error', reject);
  });
}
