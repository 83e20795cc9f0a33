/**
 * What the start-up line says besides the address: which upstreams each network uses and
 * which store holds the cache, so an operator reading the log knows what this process talks
 * to. Never a secret: upstream URLs lose their user:password, query and fragment (an API key
 * can hide in any of them, and STACKS_API_KEY / apiKey are never shown), a Redis URL keeps
 * only its host, port and database.
 */
import { resolve } from 'node:path';
import type { Config } from '../config/index.js';

export interface StartupFacts {
  /** `id url` for each upstream, each network's in preference order. */
  readonly upstreams: string[];
  readonly store: string;
  /** CACHE_STORE=sqlite: the absolute DATA_DIR. */
  readonly dataDir?: string;
  /** CACHE_STORE=redis: host:port[/db], without credentials. */
  readonly redis?: string;
}

export function startupFacts(
  config: Pick<Config, 'upstreams' | 'cacheStore' | 'dataDir' | 'redisUrl'>,
): StartupFacts {
  const upstreams = config.upstreams.map((u) => `${u.id} ${publicUrl(u.url)}`);
  if (config.cacheStore === 'sqlite') {
    return { upstreams, store: 'sqlite', dataDir: resolve(config.dataDir) };
  }
  if (config.cacheStore === 'redis' && config.redisUrl !== undefined) {
    return { upstreams, store: 'redis', redis: redisHost(config.redisUrl) };
  }
  return { upstreams, store: config.cacheStore };
}

/** Origin and path only. */
export function publicUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname.replace(/\/+$/, '')}`;
  } catch {
    return '(unparsable URL)';
  }
}

function redisHost(url: string): string {
  try {
    const u = new URL(url);
    const db = u.pathname.replace(/^\/+/, '');
    return db === '' ? u.host : `${u.host}/${db}`;
  } catch {
    return '(unparsable URL)';
  }
}
