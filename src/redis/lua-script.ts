/**
 * A Redis Lua script run by its SHA (EVALSHA), loaded on demand: a server that does not
 * know it yet (first use, or a restarted Redis whose script cache is empty) answers NOSCRIPT
 * and the script is sent once in full (EVAL), which also caches it there.
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

export class LuaScript {
  readonly sha: string;

  constructor(readonly source: string) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  async run(client: Redis, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    try {
      return await client.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return client.eval(this.source, keys.length, ...keys, ...args);
    }
  }
}
