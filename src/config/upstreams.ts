/**
 * Which upstreams each network has (docs/upstreams.md), from the environment:
 *
 * - `STACKS_API_URL_MAINNET` / `STACKS_API_URL_TESTNET`: one base URL or a comma-separated
 *   list; the list order is the priority (first preferred). `STACKS_API_KEY` is sent to every
 *   upstream of these lists, as it always was; each has UPSTREAM_RATE_LIMIT_PER_MINUTE.
 * - `UPSTREAMS_FILE`: a JSON array of `{url, network, rateLimitPerMinute?, apiKey?, priority?}`.
 *   A network the file lists takes its upstreams from the file only; its
 *   STACKS_API_URL_<NETWORK> must then be unset (two sources for one list would leave the
 *   reader guessing which wins). `apiKey` goes only to that entry's URL.
 *
 * Ids are what logs, metric labels, answers and Redis keys name an upstream by: credential-free
 * and stable while the list keeps its order. A network's first upstream is named after the
 * network (`mainnet`), so a single-upstream deployment keeps the Redis budget key it always had;
 * the others are `mainnet-2`, `mainnet-3`, ...
 *
 * A URL may appear once per network (the same node may serve both networks' lists, as a
 * local devnet or a test double does). Bad input stops start-up with one line (ConfigError) naming the variable or file, the entry
 * (1-based) and the problem. A URL is only ever shown without its user:password part.
 */

import { readFileSync } from 'node:fs';
import type { Network } from '../network.js';
import { ConfigError } from './error.js';
import { redact } from './redact.js';

export interface UpstreamDefinition {
  readonly id: string;
  readonly network: Network;
  /** Base URL, trailing slashes removed. */
  readonly url: string;
  readonly apiKey: string | undefined;
  readonly rateLimitPerMinute: number;
  /** Lower is preferred. */
  readonly priority: number;
}

type Env = Record<string, string | undefined>;

const NETWORK_NAMES: readonly Network[] = ['mainnet', 'testnet'];
const DEFAULT_URLS: Readonly<Record<Network, string>> = {
  mainnet: 'https://api.hiro.so',
  testnet: 'https://api.testnet.hiro.so',
};
const FILE_FIELDS = new Set(['url', 'network', 'rateLimitPerMinute', 'apiKey', 'priority']);

interface Draft {
  network: Network;
  url: string;
  apiKey: string | undefined;
  rateLimitPerMinute: number;
  priority: number;
  /** Where it came from, for the duplicate message. */
  where: string;
}

/** Every upstream of both networks, each network's in preference order. */
export function loadUpstreamDefinitions(
  env: Env,
  defaults: { readonly apiKey: string | undefined; readonly rateLimitPerMinute: number },
): UpstreamDefinition[] {
  const file = nonEmpty(env['UPSTREAMS_FILE']);
  const fromFile = file === undefined ? [] : readUpstreamsFile(file, defaults.rateLimitPerMinute);
  const drafts: Draft[] = [];
  for (const network of NETWORK_NAMES) {
    const variable = `STACKS_API_URL_${network.toUpperCase()}`;
    const listed = fromFile.filter((d) => d.network === network);
    const raw = nonEmpty(env[variable]);
    if (listed.length > 0) {
      if (raw !== undefined) {
        throw new ConfigError(
          variable,
          `is set, but UPSTREAMS_FILE ${file} also lists ${network} upstreams: give them in one place`,
        );
      }
      drafts.push(...listed);
      continue;
    }
    const entries = (raw ?? DEFAULT_URLS[network]).split(',');
    entries.forEach((entry, i) => {
      const where = `entry ${i + 1}`;
      drafts.push({
        network,
        url: parseUrl(variable, where, entry),
        apiKey: defaults.apiKey,
        rateLimitPerMinute: defaults.rateLimitPerMinute,
        priority: i,
        where: `${variable} ${where}`,
      });
    });
  }
  const seen = new Map<string, Draft>();
  for (const d of drafts) {
    const key = `${d.network} ${sameUrlKey(d.url)}`;
    const first = seen.get(key);
    if (first !== undefined) {
      const [variable, ...rest] = d.where.split(' ');
      throw new ConfigError(
        variable!,
        `${rest.join(' ')}: duplicate URL ${redact(d.url)} (already given as ${first.where})`,
      );
    }
    seen.set(key, d);
  }
  const out: UpstreamDefinition[] = [];
  for (const network of NETWORK_NAMES) {
    const list = drafts.filter((d) => d.network === network);
    // Stable: equal priorities keep the given order.
    list.sort((a, b) => a.priority - b.priority);
    list.forEach((d, i) => {
      out.push({
        id: i === 0 ? network : `${network}-${i + 1}`,
        network,
        url: d.url,
        apiKey: d.apiKey,
        rateLimitPerMinute: d.rateLimitPerMinute,
        priority: d.priority,
      });
    });
  }
  return out;
}

function readUpstreamsFile(file: string, defaultRate: number): Draft[] {
  const variable = `UPSTREAMS_FILE ${file}`;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(variable, `cannot be read: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    // JSON.parse's message quotes the text around the error, which may be an apiKey: only
    // where it is, never what is there.
    const at = err instanceof Error ? /position (\d+)/.exec(err.message)?.[1] : undefined;
    throw new ConfigError(
      variable,
      `is not JSON${at === undefined ? '' : ` (syntax error at character ${at})`}`,
    );
  }
  if (!Array.isArray(json) || json.length === 0) {
    throw new ConfigError(variable, 'must hold a non-empty JSON array of upstreams');
  }
  return json.map((entry: unknown, i): Draft => {
    const where = `entry ${i + 1}`;
    const fail = (problem: string): never => {
      throw new ConfigError(variable, `${where}: ${problem}`);
    };
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) fail('must be an object');
    const e = entry as Record<string, unknown>;
    for (const field of Object.keys(e)) {
      if (!FILE_FIELDS.has(field)) {
        fail(`unknown field "${field}" (allowed: ${[...FILE_FIELDS].join(', ')})`);
      }
    }
    if (typeof e['url'] !== 'string') fail('"url" must be a string');
    const url = parseUrl(variable, where, e['url'] as string);
    const network = e['network'];
    if (network !== 'mainnet' && network !== 'testnet') {
      fail(`"network" must be "mainnet" or "testnet", got ${JSON.stringify(network ?? null)}`);
    }
    const rate = e['rateLimitPerMinute'];
    if (rate !== undefined && !(Number.isSafeInteger(rate) && (rate as number) >= 1)) {
      fail(`"rateLimitPerMinute" must be a whole number of at least 1, got ${JSON.stringify(rate)}`);
    }
    const priority = e['priority'];
    if (priority !== undefined && !(Number.isSafeInteger(priority) && (priority as number) >= 0)) {
      fail(`"priority" must be a whole number of at least 0, got ${JSON.stringify(priority)}`);
    }
    const apiKey = e['apiKey'];
    if (apiKey !== undefined && (typeof apiKey !== 'string' || apiKey.trim() === '')) {
      // The value is a secret: never repeat it.
      fail('"apiKey" must be a non-empty string');
    }
    return {
      network: network as Network,
      url,
      apiKey: apiKey === undefined ? undefined : (apiKey as string).trim(),
      rateLimitPerMinute: (rate as number | undefined) ?? defaultRate,
      priority: (priority as number | undefined) ?? i,
      where: `${variable} ${where}`,
    };
  });
}

function parseUrl(variable: string, where: string, entry: string): string {
  const raw = entry.trim();
  if (raw === '') throw new ConfigError(variable, `${where} is empty`);
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(variable, `${where} must be an http(s) URL, got "${redact(raw)}"`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new ConfigError(variable, `${where} must be an http(s) URL, got "${redact(raw)}"`);
  }
  return raw.replace(/\/+$/, '');
}

/** Two spellings of one upstream (case of the host, default port, credentials) are one URL. */
function sameUrlKey(url: string): string {
  const u = new URL(url);
  return `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, '')}${u.search}`;
}

/** The URL without its credentials and query values, for messages (docs/access-control.md). */
export { redact };

function nonEmpty(v: string | undefined): string | undefined {
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}
