import { describe, expect, it } from 'vitest';
import { luaScript } from '../../bench/load.js';
import { END, generated, START, splice } from '../../bench/report.js';
import type { CaseRecord } from '../../bench/support.js';

const record: CaseRecord = {
  case: 'demo',
  title: 'a demo case',
  startedAt: '2026-01-01T00:00:00.000Z',
  elapsedS: 1,
  command: 'node --import tsx bench/run.ts demo',
  gatewayEntry: 'dist/clarity-cache.mjs',
  commit: 'abc1234',
  machine: { nproc: 2, cpu: 'cpu', memoryGiB: 1, node: 'v20', os: 'Linux', loadAverageAtStart: [0, 0, 0] },
  status: 'MET',
  settings: {},
  rows: [
    { figure: 'a | b', value: '1 ms', reference: '2 ms', ratio: '0.50×', target: '≤ 1.00×', status: 'MET' },
  ],
  notes: ['How it is taken.'],
  results: {},
};

describe('bench report', () => {
  it('replaces only the text between the markers', () => {
    const md = `# Benchmarks\n\nhand-written top\n\n${START}\nold figures\n${END}\n\nhand-written bottom\n`;
    const out = splice(md, generated([record]));
    expect(out.startsWith('# Benchmarks\n\nhand-written top\n\n')).toBe(true);
    expect(out.endsWith('\n\nhand-written bottom\n')).toBe(true);
    expect(out).not.toContain('old figures');
    expect(out).toContain('| demo | a \\| b | 1 ms | 2 ms | 0.50× | ≤ 1.00× | MET | — |');
    expect(out).toContain('**demo** (a demo case).\nHow it is taken.');
  });

  it('appends the generated part, markers included, when there are no markers', () => {
    const out = splice('# Benchmarks\n\nhand-written\n', generated([]));
    expect(out).toMatch(
      /^# Benchmarks\n\nhand-written\n\n<!-- bench:start -->\n[\s\S]*<!-- bench:end -->\n$/,
    );
  });
});

describe('wrk Lua script', () => {
  it('cycles through the given bodies, one per request', () => {
    const lua = luaScript(
      {
        url: 'http://127.0.0.1:1/x',
        method: 'POST',
        bodies: ['{"a":1}', '{"a":2}', '{"a":3}'],
        connections: 1,
        warmupSeconds: 0,
        durationSeconds: 1,
      },
      100,
    );
    expect(lua).toContain('local bodies = { "{\\"a\\":1}", "{\\"a\\":2}", "{\\"a\\":3}" }');
    expect(lua).toContain('turn = turn % #bodies + 1');
    expect(lua).not.toContain('wrk.body =');
  });
});
