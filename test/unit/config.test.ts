import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/index.js';

describe('loadConfig', () => {
  it('gives the documented defaults and a frozen object', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      port: 3000,
      host: '0.0.0.0',
      upstreamUrls: { mainnet: 'https://api.hiro.so', testnet: 'https://api.testnet.hiro.so' },
      stacksApiKey: undefined,
      cacheStore: 'sqlite',
      upstreamTimeoutMs: 5000,
      upstreamRetries: 3,
      upstreamRetryBaseMs: 500,
      upstreamRateLimitPerMinute: 20,
      upstreamQueueTimeoutMs: 10000,
      bodyLimitBytes: 1024 * 1024,
      logLevel: 'info',
      adminToken: undefined,
    });
    expect(c.dataDir.endsWith('/data')).toBe(true);
    expect(Object.isFrozen(c)).toBe(true);
    expect(Object.isFrozen(c.upstreamUrls)).toBe(true);
  });

  it('leaves chain-aware freshness off by default and reads its variables', () => {
    expect(loadConfig({})).toMatchObject({
      chainTipMaxAgeMs: 5000,
      cacheMaxBlocks: undefined,
      cacheStaleWhileRevalidateS: 0,
      cacheStaleIfErrorS: 0,
      cacheStaleMaxS: 86_400,
    });
    expect(
      loadConfig({
        CHAIN_TIP_MAX_AGE_MS: '250',
        CACHE_MAX_BLOCKS: '0',
        CACHE_STALE_WHILE_REVALIDATE_S: '30',
        CACHE_STALE_IF_ERROR_S: '600',
        CACHE_STALE_MAX_S: '3600',
      }),
    ).toMatchObject({
      chainTipMaxAgeMs: 250,
      cacheMaxBlocks: 0,
      cacheStaleWhileRevalidateS: 30,
      cacheStaleIfErrorS: 600,
      cacheStaleMaxS: 3600,
    });
    for (const name of ['CACHE_MAX_BLOCKS', 'CACHE_STALE_IF_ERROR_S', 'CHAIN_TIP_MAX_AGE_MS']) {
      expect(() => loadConfig({ [name]: '-1' })).toThrow(name);
      expect(() => loadConfig({ [name]: '1.5' })).toThrow(name);
    }
  });

  it('reads every variable, trimming trailing slashes from upstream URLs', () => {
    const c = loadConfig({
      PORT: '8080',
      STACKS_API_URL_MAINNET: 'http://localhost:20443/',
      STACKS_API_KEY: 'k',
      CACHE_STORE: 'Memory',
      UPSTREAM_RETRIES: '0',
      UPSTREAM_QUEUE_TIMEOUT_MS: '0',
      LOG_LEVEL: 'warn',
      ADMIN_TOKEN: 'secret',
    });
    expect(c).toMatchObject({
      port: 8080,
      upstreamUrls: { mainnet: 'http://localhost:20443' },
      stacksApiKey: 'k',
      cacheStore: 'memory',
      upstreamRetries: 0,
      upstreamQueueTimeoutMs: 0,
      logLevel: 'warn',
      adminToken: 'secret',
    });
  });

  it.each([
    ['PORT', '-1'],
    ['PORT', 'abc'],
    ['UPSTREAM_TIMEOUT_MS', '0'],
    ['UPSTREAM_TIMEOUT_MS', '1.5'],
    ['UPSTREAM_RETRIES', '11'],
    ['UPSTREAM_RATE_LIMIT_PER_MINUTE', '0'],
    ['CACHE_STORE', 'postgres'],
    ['LOG_LEVEL', 'loud'],
    ['STACKS_API_URL_TESTNET', 'not a url'],
    ['STACKS_API_URL_TESTNET', 'ftp://x'],
  ])('refuses %s=%s naming the variable', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(name);
  });

  it('bounds the hot tier and the parsed-ABI memo in bytes (HOT_CACHE_MAX_BYTES, ABI_MEMO_MAX_BYTES)', () => {
    const defaults = loadConfig({});
    expect(defaults.hotCacheMaxBytes).toBe(32 * 1024 * 1024);
    expect(defaults.abiMemoMaxBytes).toBe(16 * 1024 * 1024);
    // The hot tier is sized in bytes; a count bound only when asked for.
    expect(defaults.hotCacheMaxEntries).toBeUndefined();
    expect(loadConfig({ HOT_CACHE_MAX_ENTRIES: '500' }).hotCacheMaxEntries).toBe(500);
    const set = loadConfig({ HOT_CACHE_MAX_BYTES: '8388608', ABI_MEMO_MAX_BYTES: '4194304' });
    expect(set.hotCacheMaxBytes).toBe(8 * 1024 * 1024);
    expect(set.abiMemoMaxBytes).toBe(4 * 1024 * 1024);
    for (const name of ['HOT_CACHE_MAX_BYTES', 'ABI_MEMO_MAX_BYTES']) {
      expect(() => loadConfig({ [name]: '1000' })).toThrow(`invalid configuration: ${name} must be between`);
      expect(() => loadConfig({ [name]: '32MB' })).toThrow(`${name} must be a whole number`);
    }
  });

  it('bounds a batch by BATCH_MAX_CALLS (default 100)', () => {
    expect(loadConfig({}).batchMaxCalls).toBe(100);
    expect(loadConfig({ BATCH_MAX_CALLS: '7' }).batchMaxCalls).toBe(7);
    expect(() => loadConfig({ BATCH_MAX_CALLS: '0' })).toThrow('BATCH_MAX_CALLS must be between 1');
    expect(() => loadConfig({ BATCH_MAX_CALLS: 'many' })).toThrow('BATCH_MAX_CALLS must be a whole number');
  });

  it('remembers unknown contracts for CACHE_NEGATIVE_TTL_S seconds (default 30, 0 = never, at most a day)', () => {
    expect(loadConfig({}).cacheNegativeTtlS).toBe(30);
    expect(loadConfig({ CACHE_NEGATIVE_TTL_S: '0' }).cacheNegativeTtlS).toBe(0);
    expect(loadConfig({ CACHE_NEGATIVE_TTL_S: '86400' }).cacheNegativeTtlS).toBe(86_400);
    expect(() => loadConfig({ CACHE_NEGATIVE_TTL_S: '86401' })).toThrow(
      'invalid configuration: CACHE_NEGATIVE_TTL_S must be between 0 and 86400',
    );
    expect(() => loadConfig({ CACHE_NEGATIVE_TTL_S: '-1' })).toThrow(
      'CACHE_NEGATIVE_TTL_S must be a whole number',
    );
    expect(() => loadConfig({ CACHE_NEGATIVE_TTL_S: '30s' })).toThrow(
      'CACHE_NEGATIVE_TTL_S must be a whole number',
    );
  });

  it('needs a redis:// REDIS_URL for CACHE_STORE=redis', () => {
    expect(() => loadConfig({ CACHE_STORE: 'redis' })).toThrow('REDIS_URL');
    expect(() => loadConfig({ CACHE_STORE: 'redis', REDIS_URL: 'http://x' })).toThrow('REDIS_URL');
    expect(loadConfig({ CACHE_STORE: 'redis', REDIS_URL: 'redis://127.0.0.1:6379' }).redisUrl).toBe(
      'redis://127.0.0.1:6379',
    );
  });
  it('reads the HTTP limits and CORS origins, with their defaults', () => {
    const defaults = loadConfig({});
    expect(defaults).toMatchObject({
      corsOrigins: ['*'],
      httpHeadersTimeoutMs: 10_000,
      httpRequestTimeoutMs: 30_000,
      httpMaxConnections: 10_000,
    });
    expect(loadConfig({ CORS_ORIGINS: 'none' }).corsOrigins).toEqual([]);
    expect(loadConfig({ CORS_ORIGINS: 'NONE' }).corsOrigins).toEqual([]);
    expect(loadConfig({ CORS_ORIGINS: 'https://a.example, http://localhost:5173' }).corsOrigins).toEqual([
      'https://a.example',
      'http://localhost:5173',
    ]);
    expect(
      loadConfig({
        HTTP_HEADERS_TIMEOUT_MS: '500',
        HTTP_REQUEST_TIMEOUT_MS: '900',
        HTTP_MAX_CONNECTIONS: '3',
      }),
    ).toMatchObject({ httpHeadersTimeoutMs: 500, httpRequestTimeoutMs: 900, httpMaxConnections: 3 });
  });

  it.each([
    ['CORS_ORIGINS', 'https://a.example/path'],
    ['CORS_ORIGINS', 'a.example'],
    ['CORS_ORIGINS', '*, https://a.example'],
    ['HTTP_HEADERS_TIMEOUT_MS', '0'],
    ['HTTP_REQUEST_TIMEOUT_MS', 'soon'],
    ['HTTP_MAX_CONNECTIONS', '0'],
  ])('refuses %s=%s naming the variable', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(name);
  });

  it('refuses a headers timeout longer than the request timeout', () => {
    expect(() => loadConfig({ HTTP_HEADERS_TIMEOUT_MS: '5000', HTTP_REQUEST_TIMEOUT_MS: '4000' })).toThrow(
      'HTTP_HEADERS_TIMEOUT_MS',
    );
  });
});

describe('event observer configuration', () => {
  it('is off by default, with its documented defaults', () => {
    const c = loadConfig({});
    expect(c.eventObserverPort).toBeUndefined();
    expect(c.eventObserverHost).toBe('127.0.0.1');
    expect(c.eventObserverNetwork).toBeUndefined();
    expect(c.eventObserverBodyLimitMb).toBe(500);
  });

  it('needs EVENT_OBSERVER_NETWORK with the port, and checks it', () => {
    expect(() => loadConfig({ EVENT_OBSERVER_PORT: '3700' })).toThrow('EVENT_OBSERVER_NETWORK');
    expect(() => loadConfig({ EVENT_OBSERVER_PORT: '3700', EVENT_OBSERVER_NETWORK: 'devnet' })).toThrow(
      'EVENT_OBSERVER_NETWORK',
    );
    const c = loadConfig({
      EVENT_OBSERVER_PORT: '3700',
      EVENT_OBSERVER_NETWORK: 'testnet',
      EVENT_OBSERVER_HOST: '0.0.0.0',
      EVENT_OBSERVER_BODY_LIMIT_MB: '64',
    });
    expect(c).toMatchObject({
      eventObserverPort: 3700,
      eventObserverNetwork: 'testnet',
      eventObserverHost: '0.0.0.0',
      eventObserverBodyLimitMb: 64,
    });
    expect(() => loadConfig({ EVENT_OBSERVER_BODY_LIMIT_MB: '0' })).toThrow('EVENT_OBSERVER_BODY_LIMIT_MB');
  });
});

describe('attested answers configuration (UPSTREAM_CONSENSUS_*)', () => {
  const three = 'http://a.example,http://b.example,http://c.example';
  const two = 'http://a.example,http://b.example';
  const refusal = (env: Record<string, string>): ConfigError => {
    try {
      loadConfig(env);
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return err as ConfigError;
    }
    throw new Error(`accepted ${JSON.stringify(env)}`);
  };

  it('is off (1/1) by default, with its documented defaults', () => {
    const c = loadConfig({});
    expect(c.upstreamConsensus).toEqual({ mainnet: { k: 1, n: 1 }, testnet: { k: 1, n: 1 } });
    expect(Object.isFrozen(c.upstreamConsensus)).toBe(true);
    expect(c.upstreamConsensusLow).toBe('error');
    expect(c.upstreamConsensusStrikes).toBe(3);
    expect(c.upstreamConsensusLog).toBeUndefined();
  });

  it('accepts 2/3 with three upstreams of that network, each network on its own', () => {
    const c = loadConfig({
      STACKS_API_URL_TESTNET: three,
      UPSTREAM_CONSENSUS_TESTNET: ' 2/3 ',
      UPSTREAM_CONSENSUS_LOW: 'accept',
      UPSTREAM_CONSENSUS_STRIKES: '5',
      UPSTREAM_CONSENSUS_LOG: '/tmp/votes.jsonl',
    });
    expect(c.upstreamConsensus).toEqual({ mainnet: { k: 1, n: 1 }, testnet: { k: 2, n: 3 } });
    expect(Object.isFrozen(c.upstreamConsensus.testnet)).toBe(true);
    expect(c).toMatchObject({
      upstreamConsensusLow: 'accept',
      upstreamConsensusStrikes: 5,
      upstreamConsensusLog: '/tmp/votes.jsonl',
    });
    expect(
      loadConfig({ STACKS_API_URL_MAINNET: three, UPSTREAM_CONSENSUS_MAINNET: '3/3' }).upstreamConsensus
        .mainnet,
    ).toEqual({ k: 3, n: 3 });
    expect(
      loadConfig({ STACKS_API_URL_MAINNET: two, UPSTREAM_CONSENSUS_MAINNET: '2/2' }).upstreamConsensus
        .mainnet,
    ).toEqual({ k: 2, n: 2 });
  });

  it.each([
    ['3/2', three, /1 <= k <= n/],
    ['0/1', three, /1 <= k <= n/],
    ['1/2', three, /k > n\/2/],
    ['2/4', three, /asks 4 upstreams but mainnet has 3/],
    ['2/3', two, /asks 3 upstreams but mainnet has 2/],
    ['abc', three, /must be k\/n/],
    ['2/', three, /must be k\/n/],
    ['-1/1', three, /must be k\/n/],
    ['1.5/3', three, /must be k\/n/],
  ])('refuses UPSTREAM_CONSENSUS_MAINNET=%s', (value, urls, why) => {
    const err = refusal({ STACKS_API_URL_MAINNET: urls, UPSTREAM_CONSENSUS_MAINNET: value });
    expect(err.variable).toBe('UPSTREAM_CONSENSUS_MAINNET');
    expect(err.message).toMatch(why);
  });

  it('counts only the upstreams of its own network', () => {
    const err = refusal({ STACKS_API_URL_MAINNET: three, UPSTREAM_CONSENSUS_TESTNET: '2/3' });
    expect(err.variable).toBe('UPSTREAM_CONSENSUS_TESTNET');
    expect(err.message).toMatch(/testnet has 1/);
  });

  it('refuses a low-participation choice or strike limit it does not know', () => {
    expect(refusal({ UPSTREAM_CONSENSUS_LOW: 'maybe' }).variable).toBe('UPSTREAM_CONSENSUS_LOW');
    expect(refusal({ UPSTREAM_CONSENSUS_STRIKES: '0' }).variable).toBe('UPSTREAM_CONSENSUS_STRIKES');
  });
});
