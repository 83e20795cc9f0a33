import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { lazyChildLogger } from '../../../src/http/lazy-logger.js';

function capture(level: string) {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(JSON.parse(chunk.toString()));
      done();
    },
  });
  const parent = pino({ level }, stream);
  let children = 0;
  const child = parent.child.bind(parent);
  parent.child = ((b: pino.Bindings, o?: pino.ChildLoggerOptions) => {
    children++;
    return child(b, o);
  }) as unknown as typeof parent.child;
  return { parent, lines, children: () => children };
}

describe('lazyChildLogger', () => {
  it('creates no child for a request that logs nothing or only below the level', () => {
    const { parent, children, lines } = capture('warn');
    const log = lazyChildLogger(parent, { reqId: 'r1' }, {});
    log.info('hidden');
    log.debug('hidden');
    expect(children()).toBe(0);
    expect(lines).toEqual([]);
  });

  it('writes through one child carrying the bindings', () => {
    const { parent, children, lines } = capture('info');
    const log = lazyChildLogger(parent, { reqId: 'r2' }, {});
    log.info({ a: 1 }, 'first');
    log.warn('second');
    expect(children()).toBe(1);
    expect(lines.map((l) => [l.reqId, l.msg])).toEqual([
      ['r2', 'first'],
      ['r2', 'second'],
    ]);
    expect(lines[0]?.a).toBe(1);
    expect(log.level).toBe('info');
  });
});
