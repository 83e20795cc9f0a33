/**
 * The event observer's own listener (docs/events.md): a small Fastify instance on its own port
 * and body limit that the Stacks node posts its events to. The node blocks until answered
 * and retries anything but a 200 forever, so every route answers 200 as soon as the body is
 * read, and the work follows (follower.ts). Even a body that is too large or unreadable is
 * answered 200 and counted as a rejected payload: a cache may lose an event, it must never
 * stop the node.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import type { ChainFollower } from './follower.js';

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
  const app = Fastify({ bodyLimit: options.bodyLimitBytes, logger: options.logger ?? false });
  // Every body is taken as bytes, whatever its content type: parsing (and its failures) is
  // the follower's business, after the answer.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

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
    const body = request.body as Buffer | undefined;
    setImmediate(() => follower.newBlock(body));
  });
  app.post('/new_burn_block', (request, reply) => {
    reply.code(200).send();
    const body = request.body as Buffer | undefined;
    setImmediate(() => follower.newBurnBlock(body));
  });
  for (const route of IGNORED_ROUTES) app.post(route, (_request, reply) => reply.code(200).send());
  return app;
}
