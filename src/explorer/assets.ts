/**
 * The explorer page's files as the gateway serves them: the HTML (never cached, so a new
 * deployment is seen at once) and assets whose names carry a hash of their content (cached
 * for a year, immutable: a changed file gets a new name).
 */
import { createHash } from 'node:crypto';

export interface ExplorerAsset {
  readonly body: Buffer;
  readonly contentType: string;
}

export interface ExplorerAssets {
  readonly html: string;
  /** By file name, e.g. `app.3f2a9c1b7d.js`. */
  readonly files: ReadonlyMap<string, ExplorerAsset>;
}

/** `app.js` with content -> `app.<10 hex of sha256>.js`. */
export function hashedName(name: string, body: Buffer | string): string {
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 10);
  const dot = name.lastIndexOf('.');
  return `${name.slice(0, dot)}.${hash}${name.slice(dot)}`;
}

/** Where the HTML refers to the assets: relative, so the page also works under a path prefix. */
export const ASSET_PREFIX = 'explorer/assets/';
