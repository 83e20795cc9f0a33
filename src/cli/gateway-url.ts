/**
 * Where the command line sends its requests: `--url`, else CLARITY_CACHE_URL, else
 * http://localhost:3000. A base path (`https://h/cache/`) is kept. Credentials in the URL
 * (`https://user:secret@h/`) are taken out of it and sent as HTTP Basic authentication; they
 * are never printed, neither the password nor the encoded header: messages show the URL
 * without them. A query or a fragment would end up in the middle of every request's path, so
 * it is a usage error.
 */
import { UsageError } from './args.js';

export const DEFAULT_URL = 'http://localhost:3000';

export interface GatewayTarget {
  /** The URL without credentials: safe to print. */
  readonly baseUrl: string;
  /** `authorization: Basic ...` when the URL had credentials. */
  readonly headers: Record<string, string>;
}

/** The URL as typed with any `user:password@` replaced, for messages. */
function redactUrl(text: string): string {
  const shown = text.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#]*@/i, '$1***@');
  return shown.length > 200 ? `${shown.slice(0, 197)}...` : shown;
}

export function gatewayTarget(
  flag: string | undefined,
  env: Record<string, string | undefined>,
): GatewayTarget {
  const fromEnv = env['CLARITY_CACHE_URL'];
  const source =
    flag !== undefined ? '--url' : fromEnv !== undefined && fromEnv !== '' ? 'CLARITY_CACHE_URL' : undefined;
  const text = flag ?? (source === undefined ? DEFAULT_URL : (fromEnv as string));
  const shown = JSON.stringify(redactUrl(text));
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`${source} is not a URL: ${shown}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UsageError(`${source} must be an http:// or https:// URL, got ${shown}`);
  }
  if (text.includes('?') || text.includes('#')) {
    throw new UsageError(
      `${source} must be the gateway's base URL, without a query or a fragment (such as http://localhost:3000 or https://example.org/cache/), got ${shown}`,
    );
  }
  const headers: Record<string, string> = {};
  if (url.username !== '' || url.password !== '') {
    const credentials = `${decode(url.username, source)}:${decode(url.password, source)}`;
    headers['authorization'] = `Basic ${Buffer.from(credentials, 'utf8').toString('base64')}`;
    url.username = '';
    url.password = '';
  }
  return { baseUrl: url.href, headers };
}

function decode(part: string, source: string | undefined): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new UsageError(`${source}: the credentials in the URL are not properly percent-encoded`);
  }
}
