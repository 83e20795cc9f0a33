/**
 * How the gateway ends an HTTP connection without its client losing an answer: a lingering
 * close, as nginx does it, for answers that end their connection and for the drain on SIGTERM.
 *
 * Why: closing a TCP socket that still holds unread bytes makes the kernel send a reset (RST)
 * instead of a FIN, and a reset makes the client's kernel drop what it received but its
 * program had not read yet. Node ends a connection that way after an answer that closes it
 * (destroySoon: destroyed as soon as the answer is flushed), so a 413 written while the
 * oversized body is still arriving, or a parser error's envelope, reached the client about half
 * the time as ECONNRESET or EPIPE instead. And server.close() destroys every idle keep-alive
 * connection at once (Node's closeIdleConnections), including those whose next request is
 * already in the socket's buffer, unread: those clients got a reset for a request the server
 * had received.
 *
 * What it does instead:
 * - A connection the gateway ends is half-closed: its answer, then a FIN. What the client still
 *   sends is read and discarded until the client closes its side, then the socket is closed
 *   (no unread bytes, no reset), for at most LINGER_MS and LINGER_BYTES, after which it is
 *   destroyed whatever comes. A request that arrives on it after the FIN is never dispatched:
 *   nothing can be answered any more, and its client sees a clean close of a connection it
 *   may retry (the keep-alive race every HTTP/1.1 client handles).
 * - Closing the server (the drain) ends idle connections that way, but only after the event
 *   loop has read what had already arrived (two turns: setImmediate, then a poll, then
 *   setImmediate), so a request already sent is dispatched and answered, with
 *   `Connection: close` while draining. A connection that is answering is left to its answer;
 *   it is ended the same way when that answer is done. One whose next request has begun to
 *   arrive gets LINGER_MS to complete it.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** Longest wait for a client to close its side after the gateway closed its own. */
const LINGER_MS = 5000;
/** Most bytes read and discarded from a client after the gateway closed its side. */
const LINGER_BYTES = 16 * 1024 * 1024;
/** How often a lingering connection's bounds are checked. */
const LINGER_CHECK_MS = 50;

export interface LingerBounds {
  readonly ms: number;
  readonly bytes: number;
}

const DEFAULT_BOUNDS: LingerBounds = { ms: LINGER_MS, bytes: LINGER_BYTES };

/** Connections whose gateway side is closed: read and discarded until they end. */
const lingering = new WeakSet<Socket>();

/**
 * End a connection gracefully: FIN once what was written is flushed, then read and discard
 * until the client closes its side (then close: nothing unread, no reset), or until a bound.
 */
function lingeringClose(socket: Socket, bounds: LingerBounds = DEFAULT_BOUNDS): void {
  if (lingering.has(socket) || socket.destroyed) return;
  lingering.add(socket);
  const destroy = () => socket.destroy();
  // Read through Node's own HTTP parser, which consumes the socket natively (a 'data' listener
  // would take the socket back from it, and could leave it paused): the rest of a body goes to
  // the dumped request, a further request to the gate of manageConnections. The bytes are
  // counted from the socket's total, checked a few times a second.
  const startedAt = Date.now();
  const readBefore = socket.bytesRead;
  const check = setInterval(() => {
    if (Date.now() - startedAt >= bounds.ms || socket.bytesRead - readBefore > bounds.bytes) destroy();
  }, LINGER_CHECK_MS);
  check.unref();
  socket.once('close', () => clearInterval(check));
  // The client has closed its side: nothing more can arrive, so closing sends no reset.
  const clientDone = () => {
    if (socket.writableFinished) destroy();
    else socket.once('finish', destroy);
  };
  if (socket.readableEnded) clientDone();
  else socket.once('end', clientDone);
  socket.end();
  // Node pauses the socket while a request's body is not being read (a body refused before it
  // was read is one): the client's close can only be seen by reading.
  socket.resume();
}

interface ConnectionState {
  /** Requests dispatched on it whose answer is not done. */
  answering: number;
  /** Bytes it had read when its last answer was done: more means a next request has begun. */
  readWhenIdle: number;
  /** A partly received request was given LINGER_MS to complete. */
  waiting: boolean;
}

type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * Put the lingering close on every connection of the server: after answers that end their
 * connection, for requests arriving on a closed one, and for server.close(). Call after every
 * other 'request' listener is in place (the fast lane's included), so that a request on a
 * closed connection reaches none of them.
 */
export function manageConnections(server: Server, bounds: LingerBounds = DEFAULT_BOUNDS): void {
  const open = new Map<Socket, ConnectionState>();
  let closing = false;

  const closeIfIdle = (socket: Socket, state: ConnectionState): void => {
    if (state.answering > 0 || socket.destroyed) return;
    if (socket.bytesRead === state.readWhenIdle) {
      lingeringClose(socket, bounds);
      return;
    }
    // The next request has begun to arrive: it is answered (with Connection: close) when it
    // completes in time; a request head that never completes is not waited for.
    if (state.waiting) return;
    state.waiting = true;
    setTimeout(() => {
      if (state.answering === 0) lingeringClose(socket, bounds);
    }, bounds.ms).unref();
  };

  server.on('connection', (socket: Socket) => {
    const state: ConnectionState = { answering: 0, readWhenIdle: 0, waiting: false };
    open.set(socket, state);
    socket.once('close', () => open.delete(socket));
    // Node calls destroySoon() to end a connection after an answer that closes it (and the
    // parser-error answers of client-errors.ts do too): linger instead.
    socket.destroySoon = () => lingeringClose(socket, bounds);
  });

  const listeners = server.listeners('request') as RequestListener[];
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket;
    // Arrived after the gateway closed its side: it cannot be answered, so it is not started
    // (no route, no upstream request); its bytes are discarded with the rest.
    if (lingering.has(socket)) {
      req.resume();
      return;
    }
    const state = open.get(socket);
    if (state !== undefined) {
      state.answering++;
      res.once('close', () => {
        state.answering--;
        state.readWhenIdle = socket.bytesRead;
        if (closing) closeIfIdle(socket, state);
      });
    }
    for (const listener of listeners) listener.call(server, req, res);
  });

  // server.close() calls this first (and would otherwise destroy every idle connection).
  server.closeIdleConnections = () => {
    closing = true;
    // Two turns of the event loop: whatever had arrived when the drain began is read and
    // dispatched first, and its connection is no longer idle.
    setImmediate(() =>
      setImmediate(() => {
        for (const [socket, state] of open) closeIfIdle(socket, state);
      }),
    );
  };
}
