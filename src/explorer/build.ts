/**
 * Builds the explorer page with esbuild (a devDependency): the script bundled for browsers
 * with the typed client inside, the stylesheet, both under hashed names, and the HTML that
 * names them. Used at build time (scripts/bundle.mjs writes the result to dist/explorer/)
 * and, when the gateway runs from its sources (development, tests), in memory on the first
 * request for the page. Never loaded by the production bundle.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { ASSET_PREFIX, type ExplorerAsset, type ExplorerAssets, hashedName } from './assets.js';

const PAGE_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'page');

export async function buildExplorerAssets(): Promise<ExplorerAssets> {
  const bundled = await build({
    entryPoints: [path.join(PAGE_DIR, 'main.ts')],
    bundle: true,
    write: false,
    platform: 'browser',
    format: 'esm',
    target: ['es2022'],
    minify: true,
    legalComments: 'none',
    logLevel: 'silent',
  });
  const script = Buffer.from(bundled.outputFiles[0]!.contents);
  const style = await readFile(path.join(PAGE_DIR, 'style.css'));
  const scriptName = hashedName('app.js', script);
  const styleName = hashedName('style.css', style);
  const template = await readFile(path.join(PAGE_DIR, 'index.html'), 'utf8');
  const html = template
    .replace('%SCRIPT%', `${ASSET_PREFIX}${scriptName}`)
    .replace('%STYLE%', `${ASSET_PREFIX}${styleName}`);
  const files = new Map<string, ExplorerAsset>([
    [scriptName, { body: script, contentType: 'text/javascript; charset=utf-8' }],
    [styleName, { body: style, contentType: 'text/css; charset=utf-8' }],
  ]);
  return { html, files };
}

/** The manifest file of a built explorer: the HTML and each asset's content type. */
const MANIFEST = 'manifest.json';

/**
 * Write the built page to `dir`, for the production bundle. Assets have content-hashed names,
 * so writing one again is harmless; the manifest is replaced atomically (write, then rename),
 * so a gateway or a concurrent build never reads half of it.
 */
export async function writeExplorerAssets(dir: string): Promise<void> {
  const assets = await buildExplorerAssets();
  await mkdir(path.join(dir, 'assets'), { recursive: true });
  const types: Record<string, string> = {};
  for (const [name, asset] of assets.files) {
    await writeFile(path.join(dir, 'assets', name), asset.body);
    types[name] = asset.contentType;
  }
  const tmp = path.join(dir, `${MANIFEST}.${process.pid}.tmp`);
  await writeFile(tmp, JSON.stringify({ html: assets.html, types }));
  await rename(tmp, path.join(dir, MANIFEST));
}
