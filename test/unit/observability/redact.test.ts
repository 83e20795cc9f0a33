import { describe, expect, it } from 'vitest';
import { loggedUrl, SecretRedactor } from '../../../src/config/redact.js';
import { configuredSecrets } from '../../../src/config/secrets.js';

describe('SecretRedactor', () => {
  const r = new SecretRedactor(['LongSecret/With"Quote&', 'k7', undefined, '  ']);

  it('replaces a long secret wherever it occurs, in each way an echo writes it', () => {
    expect(r.redact('a LongSecret/With"Quote& b')).toBe('a [redacted] b');
    expect(r.redact('?apikey=LongSecret%2FWith%22Quote%26&x')).toBe('?apikey=[redacted]&x');
    expect(r.redact('{"seen":"LongSecret/With\\"Quote&"}')).toBe('{"seen":"[redacted]"}');
    expect(r.redact('<p>LongSecret/With&quot;Quote&amp;</p>')).toBe('<p>[redacted]</p>');
    expect(r.redact('xLongSecret/With"Quote&y')).toBe('x[redacted]y');
  });

  it('replaces a short secret only where it stands as a whole word', () => {
    expect(r.redact('x-api-key: k7\napikey=k7&{"k":"k7"}')).toBe(
      'x-api-key: [redacted]\napikey=[redacted]&{"k":"[redacted]"}',
    );
    expect(r.redact('0x6b37 k7x k7-1 ak7 k7_')).toBe('0x6b37 k7x k7-1 ak7 k7_');
  });

  it('gives back the very string when it holds no secret, and does nothing without secrets', () => {
    const body = `{"result":"0x${'00'.repeat(1000)}"}`;
    expect(r.redact(body)).toBe(body);
    const none = new SecretRedactor([]);
    expect(none.empty).toBe(true);
    expect(none.redact('k7 LongSecret')).toBe('k7 LongSecret');
  });
});

describe('configuredSecrets', () => {
  it('lists upstream keys, every value of an upstream query (as given and decoded), the admin token and the Redis password', () => {
    const secrets = configuredSecrets({
      adminToken: 'admin-token-1',
      stacksApiKey: undefined,
      upstreams: [
        {
          id: 'mainnet',
          network: 'mainnet',
          url: 'https://user:url%2Fpass@node.example/?apikey=q%2Fkey&region=eu',
          apiKey: 'file-key',
          rateLimitPerMinute: 1,
          priority: 0,
        },
      ],
      redisUrl: 'redis://:redis%40pw@localhost:6379/0',
    });
    expect(secrets).toEqual(
      expect.arrayContaining([
        'admin-token-1',
        'file-key',
        'url%2Fpass',
        'url/pass',
        'q%2Fkey',
        'q/key',
        'eu',
        'redis%40pw',
        'redis@pw',
      ]),
    );
  });

  it('survives a password that is not valid percent-encoding', () => {
    expect(() =>
      configuredSecrets({
        adminToken: undefined,
        stacksApiKey: undefined,
        upstreams: [],
        redisUrl: 'redis://:bad%zz@localhost',
      }),
    ).not.toThrow();
  });
});

describe('loggedUrl', () => {
  it("hides every query value of a route that is not the API's, and only credential-named ones on the API's", () => {
    expect(loggedUrl('/admin/cache/stats?token=abc&verbose', false)).toBe(
      '/admin/cache/stats?token=[redacted]&[redacted]',
    );
    expect(loggedUrl('/v2/info?tip=latest&api_key=abc&token=def', true)).toBe(
      '/v2/info?tip=latest&api_key=[redacted]&token=[redacted]',
    );
    const plain = '/v2/info';
    expect(loggedUrl(plain, true)).toBe(plain);
  });
});
