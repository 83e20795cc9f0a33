/**
 * API keys (docs/access-control.md): the keys file read once at start-up, and the lookup of a
 * presented key.
 *
 * Keys are held only as SHA-256 digests (a `key` in the file is hashed when read), and a
 * presented key is hashed and compared digest to digest by sameSecret (secret.ts, the same
 * comparison the admin token goes through): the time a lookup takes does not depend on how
 * much of a key was right. A file may name a key by its digest alone (`keySha256`), so the
 * file need not hold the secret itself.
 */
import { readFileSync } from 'node:fs';
import { ConfigError } from '../../config/error.js';
import { sameSecret, secretDigest } from './secret.js';

export interface ApiKey {
  /** The key's name: what logs, metrics and admin routes show (never the key). */
  readonly name: string;
  /** All requests made with the key, per minute (a token bucket); undefined = no limit. */
  readonly requestsPerMinute: number | undefined;
  /** Upstream requests made for the key's requests, per minute; undefined = no limit. */
  readonly upstreamPerMinute: number | undefined;
  /** Units (docs/usage.md) per minute, a token bucket; undefined = no limit. */
  readonly unitsPerMinute?: number | undefined;
  /** Units recorded in the current UTC calendar month, fleet-wide; undefined = no limit. */
  readonly unitsPerMonth?: number | undefined;
}

/** Most presented texts remembered as valid (each is one of the file's keys). */
const MAX_PROVEN = 1024;

interface HeldKey extends ApiKey {
  readonly digest: Buffer;
}

export class ApiKeyRing {
  /** By the digest's hex: a presented key's digest finds its candidate in one map lookup. */
  readonly #byDigest = new Map<string, HeldKey>();

  constructor(keys: readonly HeldKey[]) {
    for (const key of keys) this.#byDigest.set(key.digest.toString('hex'), key);
  }

  /** The keys, without their secrets, in file order. */
  list(): ApiKey[] {
    return [...this.#byDigest.values()].map(
      ({ name, requestsPerMinute, upstreamPerMinute, unitsPerMinute, unitsPerMonth }) => ({
        name,
        requestsPerMinute,
        upstreamPerMinute,
        ...(unitsPerMinute === undefined ? {} : { unitsPerMinute }),
        ...(unitsPerMonth === undefined ? {} : { unitsPerMonth }),
      }),
    );
  }

  get size(): number {
    return this.#byDigest.size;
  }

  /**
   * Keys already proven valid, by the exact text presented: a client repeats its key on every
   * request, and hashing it each time was most of the admission's cost on a cache hit. Only
   * texts that passed the constant-time check are remembered (a wrong key is hashed and
   * compared every time), bounded.
   */
  readonly #proven = new Map<string, HeldKey>();

  /** The key a client presented, or undefined when it is not one of ours. */
  find(presented: string): ApiKey | undefined {
    const proven = this.#proven.get(presented);
    if (proven !== undefined) return proven;
    const digest = secretDigest(presented);
    const held = this.#byDigest.get(digest.toString('hex'));
    // The map lookup found it by digest; the constant-time comparison is the one that decides.
    if (held === undefined || !sameSecret(digest, held.digest)) return undefined;
    if (this.#proven.size >= MAX_PROVEN) this.#proven.clear();
    this.#proven.set(presented, held);
    return held;
  }
}

/**
 * Read and check the keys file. Errors name the file and the entry's position or name, never
 * a key: a key with a syntax error around it must not end up in a start-up log.
 */
export function loadApiKeys(file: string): ApiKeyRing {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(
      'API_KEYS_FILE',
      `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    // JSON.parse's message quotes the text around the error, which may be a key: not shown.
    throw new ConfigError('API_KEYS_FILE', `${file} is not valid JSON (expected an array of keys)`);
  }
  return new ApiKeyRing(parseApiKeys(parsed, file));
}

/** The keys of a parsed keys file (exported for tests). */
export function parseApiKeys(parsed: unknown, file = 'API_KEYS_FILE'): HeldKey[] {
  if (!Array.isArray(parsed))
    throw new ConfigError('API_KEYS_FILE', `${file} must hold a JSON array of keys`);
  const names = new Set<string>();
  const digests = new Set<string>();
  return parsed.map((item, i) => {
    const where = `${file}: entry ${i + 1}`;
    if (typeof item !== 'object' || item === null || Array.isArray(item))
      throw new ConfigError('API_KEYS_FILE', `${where} must be an object`);
    const o = item as Record<string, unknown>;
    for (const field of Object.keys(o))
      if (
        ![
          'name',
          'key',
          'keySha256',
          'requestsPerMinute',
          'upstreamPerMinute',
          'unitsPerMinute',
          'unitsPerMonth',
        ].includes(field)
      )
        throw new ConfigError('API_KEYS_FILE', `${where} has an unknown field "${field.slice(0, 40)}"`);
    const name = o['name'];
    if (typeof name !== 'string' || !/^[A-Za-z0-9._:@-]{1,64}$/.test(name))
      throw new ConfigError('API_KEYS_FILE', `${where}: "name" must be 1 to 64 letters, digits or . _ : @ -`);
    if (names.has(name)) throw new ConfigError('API_KEYS_FILE', `${where}: the name "${name}" is used twice`);
    names.add(name);
    const key = o['key'];
    const keySha256 = o['keySha256'];
    let digest: Buffer;
    if (key !== undefined && keySha256 !== undefined)
      throw new ConfigError('API_KEYS_FILE', `${where} ("${name}") has both "key" and "keySha256"; give one`);
    if (typeof key === 'string') {
      if (key.length < 16)
        throw new ConfigError('API_KEYS_FILE', `${where} ("${name}"): "key" must be at least 16 characters`);
      digest = secretDigest(key);
    } else if (typeof keySha256 === 'string') {
      if (!/^[0-9a-fA-F]{64}$/.test(keySha256))
        throw new ConfigError('API_KEYS_FILE', `${where} ("${name}"): "keySha256" must be 64 hex digits`);
      digest = Buffer.from(keySha256, 'hex');
    } else
      throw new ConfigError('API_KEYS_FILE', `${where} ("${name}") needs a "key" or a "keySha256" string`);
    const hex = digest.toString('hex');
    if (digests.has(hex))
      throw new ConfigError('API_KEYS_FILE', `${where} ("${name}") repeats another entry's key`);
    digests.add(hex);
    return {
      name,
      digest,
      requestsPerMinute: perMinute(o['requestsPerMinute'], `${where} ("${name}"): "requestsPerMinute"`),
      upstreamPerMinute: perMinute(o['upstreamPerMinute'], `${where} ("${name}"): "upstreamPerMinute"`),
      unitsPerMinute: perMinute(o['unitsPerMinute'], `${where} ("${name}"): "unitsPerMinute"`),
      unitsPerMonth: perMinute(o['unitsPerMonth'], `${where} ("${name}"): "unitsPerMonth"`),
    };
  });
}

function perMinute(value: unknown, what: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 100_000_000)
    throw new ConfigError('API_KEYS_FILE', `${what} must be a whole number from 1 to 100000000`);
  return value;
}
