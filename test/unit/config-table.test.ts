/**
 * The configuration's one declaration (src/config/variables.ts) and what comes from it: the
 * README's table (regenerate with `npm run config-table`), every variable the parser reads,
 * `serve --help`, and the warning for a misspelt variable.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { configTableMarkdown, renderConfigHelp, TABLE_END, TABLE_START } from '../../src/config/docs.js';
import { loadConfig } from '../../src/config/index.js';
import { editDistance, unknownVariableWarnings } from '../../src/config/unknown.js';
import { VARIABLES } from '../../src/config/variables.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

describe('the configuration table', () => {
  it('is in the README exactly as the declaration says (npm run config-table rewrites it)', () => {
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const start = readme.indexOf(TABLE_START);
    const end = readme.indexOf(TABLE_END);
    expect(start).toBeGreaterThan(0);
    expect(readme.slice(start, end + TABLE_END.length)).toBe(configTableMarkdown());
  });

  it('declares every variable the configuration code reads, and nothing it does not', () => {
    const sources = ['src/config/index.ts', 'src/config/upstreams.ts']
      .map((f) => readFileSync(path.join(ROOT, f), 'utf8'))
      .join('\n');
    const read = new Set([...sources.matchAll(/'([A-Z][A-Z0-9_]{2,})'/g)].map((m) => m[1] as string));
    // STACKS_API_URL_<NETWORK> is built from the network's name.
    read.add('STACKS_API_URL_MAINNET').add('STACKS_API_URL_TESTNET');
    const declared = new Set(VARIABLES.map((v) => v.name));
    for (const name of read)
      if (/^[A-Z]+_[A-Z_]+$|^PORT$|^HOST$/.test(name)) expect(declared, name).toContain(name);
    for (const v of VARIABLES) expect(read, v.name).toContain(v.name);
  });

  it('gives the parser its defaults: an empty environment loads the declared defaults', () => {
    const config = loadConfig({});
    expect(config.port).toBe(3000);
    expect(config.upstreamRetries).toBe(3);
    expect(config.hotCacheMaxBytes).toBe(32 * 1024 * 1024);
    expect(config.cacheMaxBlocks).toBeUndefined();
    expect(config.eventObserverBodyLimitMb).toBe(500);
  });

  it('stops on a value out of its declared bounds, naming the variable and what it accepts', () => {
    expect(() => loadConfig({ UPSTREAM_RETRIES: '11' })).toThrow(/UPSTREAM_RETRIES must be between 0 and 10/);
    expect(() => loadConfig({ CACHE_STORE: 'disk' })).toThrow(
      /CACHE_STORE must be one of sqlite, memory, redis/,
    );
  });

  it('lists every variable in serve --help', () => {
    const help = renderConfigHelp();
    for (const v of VARIABLES) expect(help).toContain(v.name);
  });
});

describe('misspelt variables', () => {
  it('names an unknown variable with our prefix once, with the nearest known name', () => {
    const warnings = unknownVariableWarnings({
      CACHE_TTL_SECOND: '5',
      UPSTREAM_RETRY: '2',
      NODE_ENV: 'production',
      NODE_OPTIONS: '--max-old-space-size=512',
      HTTP_PROXY: 'http://proxy',
      DEVNET_PORT: '20443',
      CLARITY_CACHE_URL: 'http://x',
      EVENT_OBSERVER_URLS: 'http://y',
      PORT: '3000',
      UNRELATED_THING: '1',
    });
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toContain('CACHE_TTL_SECOND');
    expect(warnings[1]).toMatch(/UPSTREAM_RETRY is ignored; did you mean UPSTREAM_RETRIES\?/);
  });

  it('measures edit distance', () => {
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('', 'abc')).toBe(3);
    expect(editDistance('same', 'same')).toBe(0);
  });
});
