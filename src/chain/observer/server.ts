/**
 * The event observer's own listener (docs/events.md): a small Fastify instance on its own port
 * and body limit that the Stacks node posts its events to. The node blocks until answered
 * and retries anything but a 200 forever, so every route answers 200 as soon as the body is
 * read, and the work follows (follower.ts). Even a body that is too large or unreadable is
 * answered 200 and counted as a rejected payload: a cache may lose an event, it must never
 * stop the node.
 *
 * A body is never gathered on the main thread: as its chunks arrive (each a buffer of its own),
 * those of a large body are moved a few at a time to the follower's worker thread, which joins
 * and parses them (payload-reader.ts); held here and joined at the end, as Fastify does, a
 * 100 MB body would pause the main thread again and again to collect them, then once more to
 * write 100 MB of fresh memory. A large body is also taken a few chunks per turn of the event
 * loop, with the hits in between. Closing the listener ends the worker.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import type { ChainFollower } from './follower.js';
import type { BodyStream, PayloadBody } from './payload-reader.js';

/** The node's other event routes: answered, not acted on. */
export const IGNORED_ROUTES = [
  '/new_mempool_tx',
  '/drop_mempool_tx',
  '/mined_block',
  '/mined_microblock',
  '/mined_nakamoto_block',
  '/new_microblocks',
  '/attachments/new',
  '/stackerdb_chunks',
  '/proposal_response',
] as const;

export interface ObserverServerOptions {
  readonly follower: ChainFollower;
  readonly bodyLimitBytes: number;
  /** pino logger options or instance for this listener (default off). */
  readonly logger?: boolean | object;
}

export function createObserverServer(options: ObserverServerOptions): FastifyInstance {
  const { follower } = options;
  const limit = options.bodyLimitBytes;
  const app = Fastify({ bodyLimit: limit, logger: options.logger ?? false });
  // Every body is taken as bytes, whatever its content type: parsing (and its failures) is
  // the follower's business, after the answer.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (request, payload, done) => {
    const announced = Number(request.headers['content-length'] ?? Number.NaN);
    const length = Number.isSafeInteger(announced) && announced >= 0 ? announced : undefined;
    // Only the two routes acted on keep their bodies; the others' are read and dropped.
    const path = request.url.split('?')[0];
    const kept = path === '/new_block' || path === '/new_burn_block';
    readBody(payload, length, limit, kept ? follower.reader.openBody(length) : DROPPED, done);
  });
  app.addHook('onClose', () => follower.close());

  app.setErrorHandler((err: Error, request, reply) => {
    // The route is a metric label: only the two acted-on routes by name, the rest as "other".
    const path = request.url.split('?')[0]!;
    const route = path === '/new_block' || path === '/new_burn_block' ? path : 'other';
    follower.unreadable(route, `unreadable payload: ${err.message}`);
    return reply.code(200).send();
  });
  app.setNotFoundHandler((_request, reply) => reply.code(200).send());

  app.post('/new_block', (request, reply) => {
    reply.code(200).send();
    const body = request.body as PayloadBody | undefined;
    setImmediate(() => follower.newBlock(body));
  });
  app.post('/new_burn_block', (request, reply) => {
    reply.code(200).send();
    const body = request.body as PayloadBody | undefined;
    setImmediate(() => follower.newBurnBlock(body));
  });
  for (const route of IGNORED_ROUTES) app.post(route, (_request, reply) => reply.code(200).send());
  return app;
}

/** The body of a route not acted on: read (the node waits for that) and dropped. */
const DROPPED: BodyStream = {
  push: () => {},
  flush: () => {},
  end: () => Buffer.alloc(0),
  abort: () => {},
};

/** Bytes of a body taken in one turn of the event loop, at most (about: whole chunks). */
const TURN_BYTES = 512 * 1024;

/**
 * Reads a body of at most `limit` bytes (`length` when its request announced it) into `body`
 * (PayloadReader.openBody): its chunks as Node hands them over, each a buffer of its own.
 * After TURN_BYTES in one turn of the event loop the stream pauses until the next, what came
 * so far goes on (`flush`), and the requests arriving meanwhile are answered between the
 * chunks of a large body. The errors are Fastify's own for the same faults.
 */
function readBody(
  payload: NodeJS.ReadableStream,
  length: number | undefined,
  limit: number,
  body: BodyStream,
  done: (err: Error | null, body?: PayloadBody) => void,
): void {
  let received = 0;
  let turn = 0;
  let finished = false;
  const finish = (err: Error | null, read?: PayloadBody): void => {
    if (finished) return;
    finished = true;
    payload.removeListener('data', onData);
    payload.removeListener('end', onEnd);
    payload.removeListener('error', onError);
    if (err !== null) body.abort();
    done(err, read);
  };
  const onData = (chunk: Buffer | string): void => {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    received += bytes.length;
    if (received > limit) {
      finish(tooLarge());
      return;
    }
    body.push(bytes);
    turn += bytes.length;
    if (turn < TURN_BYTES) return;
    turn = 0;
    body.flush();
    payload.pause();
    setImmediate(() => {
      if (!finished) payload.resume();
    });
  };
  const onEnd = (): void => {
    if (length !== undefined && received !== length) finish(invalidLength());
    else finish(null, body.end());
  };
  const onError = (err: Error & { statusCode?: number }): void => {
    if (!(typeof err.statusCode === 'number' && err.statusCode >= 400)) err.statusCode = 400;
    finish(err);
  };
  if (length !== undefined && length > limit) {
    finish(tooLarge());
    return;
  }
  payload.on('data', onData);
  payload.on('end', onEnd);
  payload.on('error', onError);
  payload.resume();
}

const tooLarge = (): Error =>
  Object.assign(new Error('Request body is too large'), {
    code: 'FST_ERR_CTP_BODY_TOO_LARGE',
    statusCode: 413,
  });
const invalidLength = (): Error =>
  Object.assign(new Error('Request body size did not match Content-Length'), {
    code: 'FST_ERR_CTP_INVALID_CONTENT_LENGTH',
    statusCode: 400,
  });
