/**
 * Typed results, one reply (docs/architecture.md): services and everything below them return
 * values (an answer's text, a cache view, the tip it was read at, an error's code, variant and
 * retry time); src/http/reply.ts alone turns them into a status and headers. Checked on the
 * parsed sources with TypeScript's own parser, so a comment or a doc string never counts:
 *
 * - the names of the headers an answer carries (`Cache-Status`, `Retry-After`,
 *   `X-Canonical-Stacks-Tip-Height`) are written in reply.ts alone, as a header literal: the
 *   name itself in any case, a raw `Name: value` line, or one of a comma-separated list of
 *   header names. Prose that mentions them (OpenAPI descriptions) is not a header literal, and
 *   reading an upstream's header (`headers['retry-after']`) writes nothing;
 * - no GatewayError is given a status of its own outside src/http (and the error table,
 *   src/errors.ts): its status is its code's row, or the row's entry for its variant;
 * - a service answers no HTTP status: it returns values (a node route passes the node's own
 *   status through, which is not a literal).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = path.join(import.meta.dirname, '../..');

function sourceFiles(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.(m?ts)$/.test(e.name) && !e.name.endsWith('.d.ts'))
    .map((e) => path.relative(ROOT, path.join(e.parentPath, e.name)).split(path.sep).join('/'));
}

const SOURCES = new Map(
  sourceFiles('src').map((f) => {
    const text = readFileSync(path.join(ROOT, f), 'utf8');
    return [f, ts.createSourceFile(f, text, ts.ScriptTarget.Latest, true)] as const;
  }),
);

/**
 * Every string a file writes (literals, template heads and spans), with where it stands. A
 * literal that is only the key of a read (`headers['retry-after']`, not the target of an
 * assignment) reads a message the gateway received, an upstream's answer: it writes nothing.
 */
function strings(source: ts.SourceFile): { text: string; line: number }[] {
  const out: { text: string; line: number }[] = [];
  const add = (node: ts.Node, text: string): void => {
    out.push({ text, line: source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1 });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) {
      if (!isReadKey(node)) add(node, node.text);
    } else if (ts.isTemplateExpression(node)) {
      add(node.head, node.head.text);
      for (const span of node.templateSpans) add(span.literal, span.literal.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

function isReadKey(node: ts.Node): boolean {
  const access = node.parent;
  if (access === undefined || !ts.isElementAccessExpression(access) || access.argumentExpression !== node)
    return false;
  const user = access.parent;
  const written =
    user !== undefined &&
    ts.isBinaryExpression(user) &&
    user.left === access &&
    user.operatorToken.kind >= ts.SyntaxKind.FirstAssignment &&
    user.operatorToken.kind <= ts.SyntaxKind.LastAssignment;
  return !written;
}

/** Whether `text` writes header `name`: the name alone, a raw header line, or a list of names. */
function writesHeader(text: string, name: string): boolean {
  const t = text.trim().toLowerCase();
  if (t === name || t.startsWith(`${name}:`)) return true;
  const items = t.split(',').map((s) => s.trim());
  return items.length > 1 && items.every((s) => /^[a-z0-9-]+$/.test(s)) && items.includes(name);
}

const HOME = 'src/http/reply.ts';
const ANSWER_HEADERS = ['cache-status', 'retry-after', 'x-canonical-stacks-tip-height'];

/**
 * Where these names may also be written, and why: neither answers a client of the gateway.
 * (The client package, client/, reads them too; it is not in src/.)
 */
const ALLOWED: readonly { readonly prefix: string; readonly why: string }[] = [
  { prefix: 'src/explorer/page/', why: 'the explorer page shows an answer’s headers under their names' },
  { prefix: 'src/devnet/', why: 'the local chain plays the node, whose answers carry its tip height' },
];

function allowed(file: string): boolean {
  return file === HOME || ALLOWED.some((a) => file.startsWith(a.prefix));
}

/** `new GatewayError(...)` calls whose options (or any object argument) name a `status`. */
function statusOverrides(source: ts.SourceFile): number[] {
  const lines: number[] = [];
  const visit = (node: ts.Node): void => {
    if (
      ts.isNewExpression(node) &&
      ts.isIdentifier(node.expression) &&
      node.expression.text === 'GatewayError' &&
      node.arguments?.some(
        (arg) =>
          ts.isObjectLiteralExpression(arg) &&
          arg.properties.some(
            (p) => p.name !== undefined && ts.isIdentifier(p.name) && p.name.text === 'status',
          ),
      )
    ) {
      lines.push(source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return lines;
}

/** Object literal properties `status: <number>` (an HTTP status chosen on the spot). */
function statusLiterals(source: ts.SourceFile): number[] {
  const lines: number[] = [];
  const visit = (node: ts.Node): void => {
    if (
      ts.isPropertyAssignment(node) &&
      ts.isIdentifier(node.name) &&
      node.name.text === 'status' &&
      ts.isNumericLiteral(node.initializer)
    ) {
      lines.push(source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return lines;
}

describe('typed results, one reply', () => {
  it('parses the server’s sources', () => {
    expect(SOURCES.size).toBeGreaterThan(150);
    expect(SOURCES.has(HOME)).toBe(true);
  });

  it.each(ANSWER_HEADERS)('writes the header %s in src/http/reply.ts only', (name) => {
    const found = [...SOURCES].flatMap(([file, source]) =>
      strings(source)
        .filter((s) => writesHeader(s.text, name))
        .map((s) => `${file}:${s.line}: ${JSON.stringify(s.text)}`),
    );
    expect(found.filter((f) => !allowed(f.slice(0, f.indexOf(':'))))).toEqual([]);
    // The home writes it: the rule checks a name that is really there.
    expect(found.filter((f) => f.startsWith(`${HOME}:`)).length).toBeGreaterThan(0);
  });

  it('gives no GatewayError a status of its own outside src/http and the error table', () => {
    const found = [...SOURCES]
      .filter(([file]) => !file.startsWith('src/http/') && file !== 'src/errors.ts')
      .flatMap(([file, source]) => statusOverrides(source).map((line) => `${file}:${line}`));
    expect(found).toEqual([]);
  });

  it('has services answer no HTTP status', () => {
    const found = [...SOURCES]
      .filter(([file]) => file.startsWith('src/service/'))
      .flatMap(([file, source]) => statusLiterals(source).map((line) => `${file}:${line}`));
    expect(found).toEqual([]);
  });

  it('recognises a header literal, and only one', () => {
    expect(writesHeader('Retry-After', 'retry-after')).toBe(true);
    expect(writesHeader('retry-after', 'retry-after')).toBe(true);
    expect(writesHeader('Retry-After: 5', 'retry-after')).toBe(true);
    expect(writesHeader('Cache-Status, Age, Retry-After', 'cache-status')).toBe(true);
    expect(writesHeader('Carries Cache-Status (RFC 9211) and Age headers', 'cache-status')).toBe(false);
    expect(writesHeader('its Cache-Status header', 'cache-status')).toBe(false);
    const keys = (code: string) =>
      strings(ts.createSourceFile('x.ts', code, ts.ScriptTarget.Latest, true)).map((s) => s.text);
    expect(keys("const a = res.headers['retry-after'];")).toEqual([]);
    expect(keys("headers['retry-after'] = '1';")).toEqual(['retry-after', '1']);
    expect(keys("reply.header('Retry-After', '1');")).toEqual(['Retry-After', '1']);
  });
});
