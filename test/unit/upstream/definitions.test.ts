/** The upstream lists (STACKS_API_URL_*, UPSTREAMS_FILE) and their one-line errors. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config/index.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'cc-defs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
function file(content: unknown): string {
  const p = path.join(dir, `u${files++}.json`);
  writeFileSync(p, typeof content === 'string' ? content : JSON.stringify(content));
  return p;
}

function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('upstream lists', () => {
  it('defaults to Hiro’s API, one upstream per network named after it, with STACKS_API_KEY', () => {
    const c = loadConfig({ STACKS_API_KEY: 'k' });
    expect(c.upstreams).toEqual([
      {
        id: 'mainnet',
        network: 'mainnet',
        url: 'https://api.hiro.so',
        apiKey: 'k',
        rateLimitPerMinute: 20,
        priority: 0,
      },
      {
        id: 'testnet',
        network: 'testnet',
        url: 'https://api.testnet.hiro.so',
        apiKey: 'k',
        rateLimitPerMinute: 20,
        priority: 0,
      },
    ]);
    expect(Object.isFrozen(c.upstreams)).toBe(true);
  });

  it('reads comma-separated lists in priority order; the first keeps the network’s name', () => {
    const c = loadConfig({
      STACKS_API_URL_MAINNET: ' http://localhost:20443/ , https://api.hiro.so',
      UPSTREAM_RATE_LIMIT_PER_MINUTE: '30',
    });
    expect(c.upstreams.filter((u) => u.network === 'mainnet')).toEqual([
      expect.objectContaining({
        id: 'mainnet',
        url: 'http://localhost:20443',
        priority: 0,
        rateLimitPerMinute: 30,
      }),
      expect.objectContaining({ id: 'mainnet-2', url: 'https://api.hiro.so', priority: 1 }),
    ]);
    expect(c.upstreamUrls.mainnet).toBe('http://localhost:20443');
  });

  it('reads UPSTREAMS_FILE: its own keys, rates and priorities; unlisted networks keep their variable', () => {
    const f = file([
      {
        url: 'https://api.hiro.so',
        network: 'mainnet',
        apiKey: 'hiro-key',
        rateLimitPerMinute: 500,
        priority: 1,
      },
      { url: 'http://localhost:20443', network: 'mainnet', priority: 0 },
    ]);
    const c = loadConfig({
      UPSTREAMS_FILE: f,
      STACKS_API_KEY: 'global',
      STACKS_API_URL_TESTNET: 'http://t.example',
    });
    expect(c.upstreams).toEqual([
      {
        id: 'mainnet',
        network: 'mainnet',
        url: 'http://localhost:20443',
        apiKey: undefined,
        rateLimitPerMinute: 20,
        priority: 0,
      },
      {
        id: 'mainnet-2',
        network: 'mainnet',
        url: 'https://api.hiro.so',
        apiKey: 'hiro-key',
        rateLimitPerMinute: 500,
        priority: 1,
      },
      {
        id: 'testnet',
        network: 'testnet',
        url: 'http://t.example',
        apiKey: 'global',
        rateLimitPerMinute: 20,
        priority: 0,
      },
    ]);
  });

  it('allows one URL in both networks’ lists (a local devnet), not twice in one', () => {
    expect(() =>
      loadConfig({ STACKS_API_URL_MAINNET: 'http://n:1', STACKS_API_URL_TESTNET: 'http://n:1' }),
    ).not.toThrow();
    const err = configError({ STACKS_API_URL_TESTNET: 'http://n:1,http://N:1/' });
    expect(err.message).toBe(
      'invalid configuration: STACKS_API_URL_TESTNET entry 2: duplicate URL http://N:1 (already given as STACKS_API_URL_TESTNET entry 1)',
    );
  });

  it.each([
    [
      { STACKS_API_URL_MAINNET: 'http://a.example,,http://b.example' },
      'STACKS_API_URL_MAINNET entry 2 is empty',
    ],
    [{ STACKS_API_URL_MAINNET: 'http://a.example,' }, 'STACKS_API_URL_MAINNET entry 2 is empty'],
    [
      { STACKS_API_URL_TESTNET: 'http://a.example, ftp://b' },
      'STACKS_API_URL_TESTNET entry 2 must be an http(s) URL, got "ftp://b"',
    ],
    [{ STACKS_API_URL_TESTNET: 'not a url' }, 'STACKS_API_URL_TESTNET entry 1 must be an http(s) URL'],
    [{ UPSTREAM_HEDGE_MS: '-5' }, 'UPSTREAM_HEDGE_MS must be a whole number'],
    [{ UPSTREAM_BREAKER_FAILURES: '0' }, 'UPSTREAM_BREAKER_FAILURES must be between 1'],
    [{ TRUST_PROXY: 'maybe' }, 'TRUST_PROXY must be true, false or a number of proxies'],
  ])('refuses %j in one line naming the variable and the entry', (env, message) => {
    const err = configError(env as Record<string, string>);
    expect(err.message).toContain(message);
    expect(err.message.split('\n')).toHaveLength(1);
  });

  it('never repeats the credentials of a URL it refuses', () => {
    const err = configError({ STACKS_API_URL_MAINNET: 'http://a.example,ftp://user:hunter2@b.example' });
    expect(err.message).toContain('entry 2');
    expect(err.message).not.toContain('hunter2');
  });

  it.each([
    ['[{"url": "http://a", "network": "mainnet", "weight": 2}]', 'entry 1: unknown field "weight"'],
    [
      '[{"url": "http://a", "network": "devnet"}]',
      'entry 1: "network" must be "mainnet" or "testnet", got "devnet"',
    ],
    [
      '[{"url": "http://a", "network": "mainnet"}, {"url": "gopher://b", "network": "mainnet"}]',
      'entry 2 must be an http(s) URL',
    ],
    ['[{"url": "", "network": "mainnet"}]', 'entry 1 is empty'],
    ['[{"network": "mainnet"}]', 'entry 1: "url" must be a string'],
    [
      '[{"url": "http://a", "network": "mainnet", "rateLimitPerMinute": 0}]',
      '"rateLimitPerMinute" must be a whole number of at least 1, got 0',
    ],
    [
      '[{"url": "http://a", "network": "mainnet", "rateLimitPerMinute": "10"}]',
      '"rateLimitPerMinute" must be a whole number',
    ],
    [
      '[{"url": "http://a", "network": "mainnet", "priority": 1.5}]',
      '"priority" must be a whole number of at least 0, got 1.5',
    ],
    [
      '[{"url": "http://a", "network": "mainnet", "apiKey": ""}]',
      'entry 1: "apiKey" must be a non-empty string',
    ],
    [
      '[{"url": "http://a", "network": "mainnet"}, {"url": "http://a/", "network": "mainnet"}]',
      'entry 2: duplicate URL',
    ],
    ['[42]', 'entry 1: must be an object'],
    ['[]', 'must hold a non-empty JSON array'],
    ['{"url": "http://a"}', 'must hold a non-empty JSON array'],
    ['{not json', 'is not JSON'],
  ])('refuses the file %s in one line naming the file, the entry and the problem', (content, message) => {
    const f = file(content);
    const err = configError({ UPSTREAMS_FILE: f });
    expect(err.message).toContain(`UPSTREAMS_FILE ${f}`);
    expect(err.message).toContain(message);
    expect(err.message.split('\n')).toHaveLength(1);
  });

  it('refuses a missing file, and a network given both in the file and in its variable', () => {
    expect(configError({ UPSTREAMS_FILE: path.join(dir, 'nope.json') }).message).toContain(
      'cannot be read: ENOENT',
    );
    const f = file([{ url: 'http://a', network: 'testnet' }]);
    expect(configError({ UPSTREAMS_FILE: f, STACKS_API_URL_TESTNET: 'http://b' }).message).toContain(
      'STACKS_API_URL_TESTNET is set, but UPSTREAMS_FILE',
    );
  });

  it('never repeats an API key it refuses', () => {
    const f = file([{ url: 'http://a', network: 'mainnet', apiKey: 12345678 }]);
    const err = configError({ UPSTREAMS_FILE: f });
    expect(err.message).not.toContain('12345678');
  });

  it('reads the new knobs with their defaults', () => {
    expect(loadConfig({})).toMatchObject({
      upstreamBreakerFailures: 5,
      upstreamBreakerCooldownMs: 30_000,
      upstreamHedgeMs: undefined,
      upstreamMaxLagBlocks: 2,
      upstreamMaxWaitingPerClient: 16,
      trustProxy: 0,
    });
    expect(loadConfig({ UPSTREAM_HEDGE_MS: '0' }).upstreamHedgeMs).toBeUndefined();
    expect(loadConfig({ UPSTREAM_HEDGE_MS: '250', TRUST_PROXY: 'true' })).toMatchObject({
      upstreamHedgeMs: 250,
      trustProxy: 1,
    });
    expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(loadConfig({ TRUST_PROXY: 'false' }).trustProxy).toBe(0);
  });
});
