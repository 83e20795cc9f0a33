/**
 * The generated part of BENCHMARKS.md, from the records the cases wrote (bench/results/<case>.json,
 * see bench/run.ts): a figures table (every figure with its reference measured in the same run,
 * the ratio, the goal and MET / MISSED), when and where each case ran, and how each figure is
 * taken. Only the text between `<!-- bench:start -->` and `<!-- bench:end -->` is replaced; the
 * hand-written sections around it stay as they are (without the markers, the generated part is
 * appended at the end, markers included).
 *
 * It reads JSON only: it imports no case and not bench/run.ts (bench/run.ts calls it after a run).
 *
 *   node --import tsx bench/report.ts [BENCHMARKS.md]
 */
import fs from 'node:fs';
import path from 'node:path';
import type { CaseRecord, Row } from './support.js';

const ROOT = path.resolve(import.meta.dirname, '..');
export const RESULTS_DIR = path.join(ROOT, 'bench/results');
export const START = '<!-- bench:start -->';
export const END = '<!-- bench:end -->';

/** Display order; a case not listed comes after these, by name. */
const ORDER = [
  'hits',
  'hit-rotating',
  'bursts',
  'miss',
  'miss-overhead',
  'hedging',
  'scale',
  'startup',
  'soak',
  'access-and-observer',
];

const isRecord = (v: unknown): v is CaseRecord =>
  typeof v === 'object' &&
  v !== null &&
  typeof (v as CaseRecord).case === 'string' &&
  Array.isArray((v as CaseRecord).rows) &&
  Array.isArray((v as CaseRecord).notes);

/** Every case record in `dir` (other JSON files there, e.g. older whole-run records, are skipped). */
export function readRecords(dir = RESULTS_DIR): CaseRecord[] {
  if (!fs.existsSync(dir)) return [];
  const records: CaseRecord[] = [];
  for (const f of fs.readdirSync(dir).filter((n) => n.endsWith('.json'))) {
    let v: unknown;
    try {
      v = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'));
    } catch {
      continue;
    }
    if (isRecord(v)) records.push(v);
  }
  const rank = (name: string): number => {
    const i = ORDER.indexOf(name);
    return i === -1 ? ORDER.length : i;
  };
  return records.sort((a, b) => rank(a.case) - rank(b.case) || a.case.localeCompare(b.case));
}

const cell = (s: string): string => s.replace(/\|/g, '\\|');

function figures(records: readonly CaseRecord[]): string[] {
  const row = (c: CaseRecord, r: Row): string =>
    `| ${c.case} | ${cell(r.figure)} | ${cell(r.value)} | ${cell(r.reference)} | ${r.ratio} | ${r.target} | ${r.status} | ${r.loadCpu ?? '—'} |`;
  return [
    '| case | figure | measured | reference (same run) | ratio | goal | status | wrk CPU (gateway / ref runs) |',
    '| --- | --- | ---: | ---: | ---: | --- | --- | ---: |',
    ...records.flatMap((c) => c.rows.map((r) => row(c, r))),
  ];
}

function runs(records: readonly CaseRecord[]): string[] {
  return [
    '| case | status | date | took | commit | gateway | machine | load average at start |',
    '| --- | --- | --- | ---: | --- | --- | --- | --- |',
    ...records.map((c) => {
      const m = c.machine;
      const quick = c.settings['quick'] === true ? ' (quick)' : '';
      return `| ${c.case} | ${c.status}${quick} | ${c.startedAt} | ${c.elapsedS} s | ${c.commit} | \`${c.gatewayEntry}\` | ${m.nproc} × ${m.cpu}, ${m.memoryGiB} GiB, Node ${m.node} | ${m.loadAverageAtStart.join(' / ')} |`;
    }),
  ];
}

/** The generated part, markers included. */
export function generated(records: readonly CaseRecord[]): string {
  const lines = [
    START,
    '',
    '## Figures (generated)',
    '',
    'Written by `node --import tsx bench/report.ts` from the records in `bench/results/<case>.json`, which',
    '`node --import tsx bench/run.ts [case …]` writes (after `npm run build`; `npm run bench` runs every case).',
    'Do not edit between the `bench:start` / `bench:end` markers. These machines are shared and noisy, so every',
    'figure is measured next to a reference in the same run and the goals apply to the ratios where one is',
    'given. Load: wrk (Debian package `wrk`, /usr/bin/wrk) `-t1`, the body set by a Lua script (bench/load.ts),',
    "which also reports wrk's own CPU time (last column: median % of one core in the gateway's runs / the",
    "reference's runs). The gateway, the bare reference, the fake Stacks node and wrk each run in a process of",
    'their own, on 127.0.0.1. Each case keeps the figures of its last run; the table below says when that was.',
    '',
    ...(records.length === 0 ? ['No case has been run yet.'] : figures(records)),
    '',
    '### Runs',
    '',
    ...runs(records),
    '',
    '### How each figure is taken (generated)',
    '',
    ...records.flatMap((c) => [`**${c.case}** (${c.title}).`, ...c.notes, '']),
    END,
  ];
  return lines.join('\n');
}

/** Replace the generated part of `markdown`, keeping everything outside the markers. */
export function splice(markdown: string, part: string): string {
  const start = markdown.indexOf(START);
  const end = markdown.indexOf(END);
  if (start === -1 || end === -1 || end < start) return `${markdown.trimEnd()}\n\n${part}\n`;
  return `${markdown.slice(0, start)}${part}${markdown.slice(end + END.length)}`;
}

export function writeReport(file = path.join(ROOT, 'BENCHMARKS.md')): CaseRecord[] {
  const records = readRecords();
  const before = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '# Benchmarks\n';
  fs.writeFileSync(file, splice(before, generated(records)));
  return records;
}

if (process.argv[1] !== undefined && import.meta.filename === path.resolve(process.argv[1])) {
  const file = path.resolve(process.argv[2] ?? path.join(ROOT, 'BENCHMARKS.md'));
  const records = writeReport(file);
  process.stderr.write(
    `${path.relative(ROOT, file)}: generated part from ${records.length} case record(s)\n`,
  );
}
