/**
 * Comments that point somewhere must point at something: a comment of the code (src/, test/,
 * scripts/, bench/) that cites a file of the repository (`src/...`, `docs/...`, a path's end
 * such as `budget/local.ts`, a bare `name.ts`) names one that exists, and no comment leans on
 * a document or a moment the reader cannot see ("the spec", "§6", "section 7", "this round"). Read from the
 * parsed sources, so strings and code never count.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(rel));
    else if (/\.(m?ts)$/.test(entry.name) && !entry.name.endsWith('.d.ts')) out.push(rel);
  }
  return out;
}

/** Every comment of a source file, once each, with its line. */
function commentsOf(file: string): { line: number; text: string }[] {
  const text = readFileSync(path.join(ROOT, file), 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const seen = new Map<number, { line: number; text: string }>();
  const take = (ranges: readonly ts.CommentRange[] | undefined): void => {
    for (const r of ranges ?? []) {
      if (seen.has(r.pos)) continue;
      seen.set(r.pos, {
        line: source.getLineAndCharacterOfPosition(r.pos).line + 1,
        text: text.slice(r.pos, r.end),
      });
    }
  };
  const visit = (node: ts.Node): void => {
    take(ts.getLeadingCommentRanges(text, node.pos));
    take(ts.getTrailingCommentRanges(text, node.end));
    node.forEachChild(visit);
  };
  visit(source);
  take(ts.getLeadingCommentRanges(text, source.endOfFileToken.pos));
  return [...seen.values()];
}

/** The code whose comments are read: the server, its tests, scripts and benchmarks (this file quotes what it looks for). */
const SOURCES = ['src', 'test', 'scripts', 'bench']
  .flatMap(filesUnder)
  .filter((f) => f !== path.relative(ROOT, import.meta.filename));
/** Every file name of the repository's code, for comments that cite one by its name alone. */
const PATHS = ['src', 'test', 'scripts', 'bench', 'client/src', 'bin', 'docs', 'deploy'].flatMap((d) =>
  existsSync(path.join(ROOT, d)) ? allFiles(d) : [],
);
const NAMES = new Set(PATHS.map((f) => path.basename(f)));
const ROOTED_START = /^(?:src|docs|test|scripts|bench|client|deploy|contracts)\//;

function allFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    if (entry.name === 'node_modules') continue;
    const rel = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...allFiles(rel));
    else out.push(rel);
  }
  return out;
}

/** `src/cache/keys.ts`, `docs/events.md`, `test/unit/`: a path from the repository's root (a pattern such as `bench/results/*.json` is not checked). */
const ROOTED =
  /(?<![\w./@-])((?:src|docs|test|scripts|bench|client|deploy|contracts)\/[\w./*{},<>-]*[\w/*}>])/g;
/** `read-through.ts`, `node-api.ts`: a file cited by its name alone. */
const BARE = /(?<![\w./@-])([\w-]+\.(?:ts|mts|mjs))\b/g;
/** `upstream/pool.ts`, `budget/local.ts`: a file cited by the end of its path. */
const PARTIAL = /(?<![\w./@-])((?:[\w-]+\/)+[\w.-]+\.(?:ts|mts|mjs|md))\b/g;

/** A spec, a section of one or a round that only its author could see. */
const VAGUE = /\bthe spec\b|\bthis round\b|§\s*\d|\bsection \d/i;

function exists(rel: string): boolean {
  const at = path.join(ROOT, rel);
  return existsSync(at) && (statSync(at).isFile() || statSync(at).isDirectory());
}

describe('comments of the code', () => {
  const comments = SOURCES.flatMap((file) => commentsOf(file).map((c) => ({ file, ...c })));

  it('reads every source file', () => {
    expect(SOURCES.filter((f) => f.startsWith('src/')).length).toBeGreaterThan(150);
    expect(comments.length).toBeGreaterThan(1000);
  });

  it('cite only files and folders that exist', () => {
    const missing: string[] = [];
    for (const { file, line, text } of comments) {
      for (const [, cited] of text.matchAll(ROOTED)) {
        if (/[*{<]/.test(cited!) || exists(cited!)) continue;
        missing.push(`${file}:${line} ${cited}`);
      }
      for (const [, name] of text.matchAll(BARE)) {
        if (NAMES.has(name!) || exists(name!)) continue;
        missing.push(`${file}:${line} ${name}`);
      }
      for (const [, tail] of text.matchAll(PARTIAL)) {
        // dist/ is the build's output, not in the repository.
        if (/^(?:dist)\//.test(tail!) || ROOTED_START.test(tail!)) continue;
        if (PATHS.some((p) => p.endsWith(`/${tail}`) || p === tail)) continue;
        missing.push(`${file}:${line} ${tail}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('lean on no document or moment the reader cannot see', () => {
    const vague = comments
      .filter(({ text }) => VAGUE.test(text))
      .map(
        ({ file, line, text }) =>
          `${file}:${line} ${new RegExp(`.*(?:${VAGUE.source}).*`, 'i').exec(text)![0].trim()}`,
      );
    expect(vague).toEqual([]);
  });
});
