/**
 * Every secret the configuration holds (docs/access-control.md): what no client answer, error
 * or log line may show, whoever echoes it. The values themselves, as given and as each is sent
 * (an upstream URL's query value both percent-encoded, as the URL holds it, and decoded).
 */
import type { Config } from './index.js';

export type SecretsConfig = Pick<Config, 'adminToken' | 'stacksApiKey' | 'upstreams' | 'redisUrl'>;

export function configuredSecrets(config: SecretsConfig): string[] {
  const out = new Set<string>();
  const add = (value: string | undefined): void => {
    if (value !== undefined && value.trim() !== '') out.add(value);
  };
  add(config.adminToken);
  add(config.stacksApiKey);
  for (const u of config.upstreams) {
    add(u.apiKey);
    const url = parsed(u.url);
    if (url === undefined) continue;
    add(url.password);
    add(decoded(url.password));
    // Some providers take their key in the URL's query: every value may be one.
    for (const part of url.search.replace(/^\?/, '').split('&')) {
      const eq = part.indexOf('=');
      if (eq >= 0) add(part.slice(eq + 1));
    }
    for (const value of url.searchParams.values()) add(value);
  }
  if (config.redisUrl !== undefined) {
    const url = parsed(config.redisUrl);
    add(url?.password);
    add(decoded(url?.password));
  }
  return [...out];
}

function parsed(url: string): URL | undefined {
  try {
    return new URL(url);
  } catch {
    return undefined;
  }
}

function decoded(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}
