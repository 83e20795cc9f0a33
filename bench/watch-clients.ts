/**
 * Subscribers of the watched-reads case (bench/cases/watch.ts): thousands of event streams
 * held by one process over raw `net` sockets, so that a stream costs its client a socket and a
 * few small strings (no EventSource, no http.Agent, no per-stream parser object). Each
 * stream's response is read just enough to be sure of it: the status line, the chunked
 * framing, and the `event:` / `id:` lines of each Server-Sent Event. Every `values` event is
 * recorded with the time its bytes arrived, on the monotonic clock (process.hrtime, the
 * system's CLOCK_MONOTONIC on Linux), which the parent's clock shares, so a time taken there
 * before a block is posted and one taken here are comparable.
 *
 * Messages in: {id, cmd, …}; out: {id, result} or {id, error}; first out: {ready: true}.
 */
import net from 'node:net';

/** One stream to open: `key` is the parent's name for it. */
export interface StreamSpec {
  readonly key: number;
  readonly path: string;
}

export type ClientCommand =
  /** Open the streams, at most `parallel` waiting for their first event at a time. */
  | { cmd: 'open'; port: number; streams: StreamSpec[]; parallel: number }
  /** The streams that got a `values` event of block `height`: [key, arrival ms][]. */
  | { cmd: 'events'; height: number }
  /** How many streams got a `values` event of block `height`. */
  | { cmd: 'count'; height: number }
  | { cmd: 'stats' }
  | { cmd: 'close' };

export interface OpenResult {
  readonly opened: number;
  readonly failed: { key: number; why: string }[];
}

export interface ClientStats {
  /** Streams whose first `values` event came and whose socket is still open. */
  readonly open: number;
  /** Sockets that closed (or failed) after their stream had opened. */
  readonly closedAfterOpen: number;
  readonly valuesEvents: number;
  readonly otherEvents: Record<string, number>;
}

/** Now, ms on the monotonic clock shared by every process of the machine. */
export const monotonicMs = (): number => Number(process.hrtime.bigint()) / 1e6;

interface Stream {
  readonly key: number;
  socket: net.Socket | undefined;
  /** Bytes not parsed yet (latin1: one char a byte, so chunk sizes count chars). */
  pending: string;
  headDone: boolean;
  chunked: boolean;
  /** Bytes left of the current chunk; 0 = its CRLF next; -1 = a size line next. */
  need: number;
  /** Event-stream text not yet ended by a blank line. */
  text: string;
  /** Block heights of the `values` events, with their arrival times (ms). */
  readonly heights: number[];
  readonly times: number[];
  opened: boolean;
  closed: boolean;
}

const streams: Stream[] = [];
const otherEvents: Record<string, number> = {};
let closedAfterOpen = 0;

function consume(s: Stream, data: string, at: number, onFirst: () => void, onFail: (why: string) => void) {
  s.pending += data;
  if (!s.headDone) {
    const end = s.pending.indexOf('\r\n\r\n');
    if (end === -1) return;
    const head = s.pending.slice(0, end);
    s.pending = s.pending.slice(end + 4);
    s.headDone = true;
    if (!head.startsWith('HTTP/1.1 200')) {
      onFail(`${head.split('\r\n')[0]} ${s.pending.slice(0, 300)}`);
      return;
    }
    s.chunked = /\r\ntransfer-encoding:\s*chunked/i.test(head);
  }
  let body = '';
  if (!s.chunked) {
    body = s.pending;
    s.pending = '';
  } else {
    for (;;) {
      if (s.need === -1) {
        const eol = s.pending.indexOf('\r\n');
        if (eol === -1) break;
        const size = Number.parseInt(s.pending.slice(0, eol), 16);
        s.pending = s.pending.slice(eol + 2);
        if (size === 0) break;
        s.need = size;
      } else if (s.need === 0) {
        if (s.pending.length < 2) break;
        s.pending = s.pending.slice(2);
        s.need = -1;
      } else {
        if (s.pending.length === 0) break;
        const take = Math.min(s.need, s.pending.length);
        body += s.pending.slice(0, take);
        s.pending = s.pending.slice(take);
        s.need -= take;
      }
    }
  }
  s.text += body;
  for (let end = s.text.indexOf('\n\n'); end !== -1; end = s.text.indexOf('\n\n')) {
    const block = s.text.slice(0, end);
    s.text = s.text.slice(end + 2);
    let event = '';
    let id = '';
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) event = line.slice(7);
      else if (line.startsWith('id: ')) id = line.slice(4);
    }
    if (event === 'values') {
      s.heights.push(Number(id.slice(0, id.indexOf(':'))));
      s.times.push(at);
      if (!s.opened) {
        s.opened = true;
        onFirst();
      }
    } else if (event !== '') {
      otherEvents[event] = (otherEvents[event] ?? 0) + 1;
    }
  }
}

function openOne(port: number, spec: StreamSpec): Promise<string | undefined> {
  return new Promise((resolve) => {
    const s: Stream = {
      key: spec.key,
      socket: undefined,
      pending: '',
      headDone: false,
      chunked: false,
      need: -1,
      text: '',
      heights: [],
      times: [],
      opened: false,
      closed: false,
    };
    let settled = false;
    const settle = (why: string | undefined): void => {
      if (settled) return;
      settled = true;
      if (why === undefined) streams.push(s);
      else socket.destroy();
      resolve(why);
    };
    const socket = net.connect({ host: '127.0.0.1', port, noDelay: true });
    s.socket = socket;
    socket.setEncoding('latin1');
    const timer = setTimeout(() => settle('no first event within 60 s'), 60_000);
    socket.on('connect', () => {
      socket.write(
        `GET ${spec.path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: text/event-stream\r\nCache-Control: no-cache\r\n\r\n`,
      );
    });
    socket.on('data', (data: string) => {
      const at = monotonicMs();
      consume(
        s,
        data,
        at,
        () => {
          clearTimeout(timer);
          settle(undefined);
        },
        (why) => {
          clearTimeout(timer);
          settle(why);
        },
      );
    });
    socket.on('error', (err) => {
      clearTimeout(timer);
      settle(err.message);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      if (s.opened && !s.closed) closedAfterOpen++;
      s.closed = true;
      settle('closed before its first event');
    });
  });
}

async function open(port: number, specs: readonly StreamSpec[], parallel: number): Promise<OpenResult> {
  const failed: { key: number; why: string }[] = [];
  let next = 0;
  let opened = 0;
  const worker = async (): Promise<void> => {
    while (next < specs.length) {
      const spec = specs[next++]!;
      const why = await openOne(port, spec);
      if (why === undefined) opened++;
      else failed.push({ key: spec.key, why });
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, parallel) }, worker));
  return { opened, failed };
}

function handle(c: ClientCommand): unknown {
  switch (c.cmd) {
    case 'open':
      return open(c.port, c.streams, c.parallel);
    case 'events': {
      const out: [number, number][] = [];
      for (const s of streams) {
        const i = s.heights.indexOf(c.height);
        if (i !== -1) out.push([s.key, s.times[i]!]);
      }
      return out;
    }
    case 'count': {
      let n = 0;
      for (const s of streams) if (s.heights.includes(c.height)) n++;
      return n;
    }
    case 'stats': {
      let openNow = 0;
      let values = 0;
      for (const s of streams) {
        if (!s.closed) openNow++;
        values += s.heights.length;
      }
      const stats: ClientStats = { open: openNow, closedAfterOpen, valuesEvents: values, otherEvents };
      return stats;
    }
    case 'close':
      for (const s of streams) s.socket?.destroy();
      return null;
  }
}

function main(): void {
  process.on('message', (msg: { id: number } & ClientCommand) => {
    Promise.resolve()
      .then(() => handle(msg))
      .then(
        (result) => process.send?.({ id: msg.id, result }),
        (err: unknown) =>
          process.send?.({ id: msg.id, error: err instanceof Error ? err.message : String(err) }),
      );
  });
  // The parent going away (or closing the channel) ends this process.
  process.on('disconnect', () => process.exit(0));
  process.send?.({ ready: true });
}

if (process.argv[1] !== undefined && import.meta.filename === process.argv[1]) main();
