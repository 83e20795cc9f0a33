import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/index.js';
import { startupFacts } from '../../../src/observability/startup-line.js';

describe('startupFacts', () => {
  it('names the Redis host, port and database without the password', () => {
    const config = loadConfig({
      CACHE_STORE: 'redis',
      REDIS_URL: 'redis://default:hunter2@cache.internal:6380/2',
      STACKS_API_URL_MAINNET: 'https://user:pw@node.example/v1/?api_key=k1,https://backup.example',
    });
    const facts = startupFacts(config);
    expect(facts).toEqual({
      upstreams: [
        'mainnet https://node.example/v1',
        'mainnet-2 https://backup.example',
        'testnet https://api.testnet.hiro.so',
      ],
      store: 'redis',
      redis: 'cache.internal:6380/2',
    });
    expect(JSON.stringify(facts)).not.toMatch(/hunter2|pw|k1|user/);
  });

  it('says memory for the memory store, with no path', () => {
    expect(startupFacts(loadConfig({ CACHE_STORE: 'memory' }))).toMatchObject({ store: 'memory' });
    expect(startupFacts(loadConfig({ CACHE_STORE: 'memory' }))).not.toHaveProperty('dataDir');
  });
});
