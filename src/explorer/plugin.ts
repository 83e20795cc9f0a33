/**
 * GET /explorer: the explorer page (docs/explorer.md), with its assets under
 * /explorer/assets/. Everything is served from this gateway (no CDN; works offline), and the
 * Content-Security-Policy lets the page reach nothing but this origin.
 *
 * Where the files come from: the production bundle reads the files `npm run build` wrote
 * beside it (dist/explorer/, named by __EXPLORER_DIR__, which scripts/bundle.mjs defines);
 * from the sources the page is built in memory on its first request, so it is never stale.
 */
import { readFile } from 'node:fs/promises';
import type { FastifyPluginAsync } from 'fastify';
import { GatewayError } from '../errors.js';
import type { ExplorerAsset, ExplorerAssets } from './assets.js';

declare const __EXPLORER_DIR__: string | undefined;

/** Only this origin, for scripts, styles and fetches alike; the favicon is an inline data: URL. */
const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  'img-src data:',
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

async function loadPrebuilt(dir: URL): Promise<ExplorerAssets> {
  const manifest = JSON.parse(await readFile(new URL('manifest.json', dir), 'utf8')) as {
    html: string;
    types: Record<string, string>;
  };
  const files = new Map<string, ExplorerAsset>();
  for (const [name, contentType] of Object.entries(manifest.types)) {
    files.set(name, { body: await readFile(new URL(`assets/${name}`, dir)), contentType });
  }
  return { html: manifest.html, files };
}

async function loadAssets(): Promise<ExplorerAssets> {
  if (typeof __EXPLORER_DIR__ === 'string') return loadPrebuilt(new URL(__EXPLORER_DIR__, import.meta.url));
  // A computed specifier: bundlers leave it alone, so esbuild never enters the production bundle.
  const builder = './build.js';
  const { buildExplorerAssets } = (await import(builder)) as typeof import('./build.js');
  return buildExplorerAssets();
}

export const explorerRoutes: FastifyPluginAsync = async (app) => {
  let assets: Promise<ExplorerAssets> | undefined;
  const getAssets = (): Promise<ExplorerAssets> => {
    assets ??= loadAssets().catch((err: unknown) => {
      assets = undefined; // try again on the next request
      app.log.error({ err }, 'the explorer page could not be loaded');
      throw new GatewayError(
        'SERVICE_UNAVAILABLE',
        'the explorer page is not available (were its files built?)',
      );
    });
    return assets;
  };

  app.get('/explorer', { schema: { hide: true } }, async (request, reply) => {
    // The router ignores a trailing slash, but the page refers to its assets relatively
    // (explorer/assets/...), which /explorer/ would break: send it to /explorer.
    if (request.url.split('?')[0]?.endsWith('/')) return reply.redirect('../explorer', 301);
    const { html } = await getAssets();
    return reply
      .headers({
        'content-type': 'text/html; charset=utf-8',
        'cache-control': 'no-cache',
        'content-security-policy': CSP,
        'x-content-type-options': 'nosniff',
        'referrer-policy': 'no-referrer',
      })
      .send(html);
  });

  app.get<{ Params: { file: string } }>(
    '/explorer/assets/:file',
    { schema: { hide: true } },
    async (request, reply) => {
      const asset = (await getAssets()).files.get(request.params.file);
      if (asset === undefined) {
        throw new GatewayError('NOT_FOUND', `no explorer asset named ${JSON.stringify(request.params.file)}`);
      }
      return reply
        .headers({
          'content-type': asset.contentType,
          'cache-control': 'public, max-age=31536000, immutable',
          'x-content-type-options': 'nosniff',
        })
        .send(asset.body);
    },
  );
};
