/**
 * Things the house keeps in one home each (docs/architecture.md), checked on the source text
 * with TypeScript's own parser (so a comment or a doc string never counts, and a literal is
 * found however it is quoted):
 *
 * - the secret compare (constant-time, on digests): src/http/admission/secret.ts;
 * - undici, the upstream HTTP client: imported in src/upstream/ only, its connection pools
 *   made in transport.ts alone;
 * - the node's paths (`/v2/...`, `/v3/...`): written in the endpoint table
 *   (src/upstream/endpoints.ts) alone. Besides it, admission's classification of a path
 *   and the router's catch-all for unknown node paths name the prefixes, and the local chain
 *   (src/devnet), which plays the node, has its own.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = path.join(import.meta.dirname, '../..');

function sourceFiles(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.(m?ts)$/.test(e.name) && !e.name.endsWith('.d.ts'))
    .map((e) => path.relative(ROOT, path.join(e.parentPath, e.name)));
}

const SERVER = sourceFiles('src').filter((f) => !f.startsWith('src/devnet/'));

function parse(file: string): ts.SourceFile {
  return ts.createSourceFile(file, readFileSync(path.join(ROOT, file), 'utf8'), ts.ScriptTarget.Latest, true);
}

/** Every string a file writes: literals, template heads and spans, as their text. */
function strings(source: ts.SourceFile): string[] {
  const out: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) out.push(node.text);
    else if (ts.isTemplateExpression(node)) {
      out.push(node.head.text);
      for (const span of node.templateSpans) out.push(span.literal.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

/** Identifiers a file uses (calls and references), not words in comments. */
function identifiers(source: ts.SourceFile): Set<string> {
  const out = new Set<string>();
  const visit = (node: ts.Node): void => {
    if (ts.isIdentifier(node)) out.add(node.text);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

/** Module specifiers of a file's imports and re-exports, with whether the import is type-only. */
function imports(source: ts.SourceFile): { from: string; typeOnly: boolean }[] {
  const out: { from: string; typeOnly: boolean }[] = [];
  for (const s of source.statements) {
    if (ts.isImportDeclaration(s) && ts.isStringLiteral(s.moduleSpecifier)) {
      const clause = s.importClause;
      const typeOnly =
        clause !== undefined &&
        (clause.isTypeOnly ||
          (clause.name === undefined &&
            clause.namedBindings !== undefined &&
            ts.isNamedImports(clause.namedBindings) &&
            clause.namedBindings.elements.every((e) => e.isTypeOnly)));
      out.push({ from: s.moduleSpecifier.text, typeOnly });
    }
  }
  return out;
}

const parsed = new Map(SERVER.map((f) => [f, parse(f)] as const));

describe('one home each', () => {
  it('parses the server’s sources', () => {
    expect(parsed.size).toBeGreaterThan(150);
  });

  it('compares secrets in one place', () => {
    const users = [...parsed].filter(([, s]) => identifiers(s).has('timingSafeEqual')).map(([f]) => f);
    expect(users).toEqual(['src/http/admission/secret.ts']);
  });

  it('imports undici in the upstream client only, and makes its pools in transport.ts', () => {
    const importers = [...parsed].flatMap(([f, s]) =>
      imports(s)
        .filter((i) => i.from === 'undici' || i.from.startsWith('undici/'))
        .map((i) => ({ file: f, typeOnly: i.typeOnly })),
    );
    expect(importers.length).toBeGreaterThan(0);
    expect(importers.filter((i) => !i.file.startsWith('src/upstream/'))).toEqual([]);
    expect(importers.filter((i) => !i.typeOnly).map((i) => i.file)).toEqual(['src/upstream/transport.ts']);
  });

  it('writes the node’s paths in the endpoint table only', () => {
    const ALLOWED = new Set([
      'src/upstream/endpoints.ts', // the table itself
      'src/http/admission/routes.ts', // which rules a path falls under: the two prefixes
      'src/http/routes/node-routes.ts', // the catch-all answering unknown node paths NOT_FOUND
    ]);
    const found = [...parsed].flatMap(([f, s]) =>
      strings(s)
        .filter((t) => /^\/v[23](\/|$)/.test(t))
        .map((t) => `${f}: ${t}`),
    );
    const table = found.filter((x) => x.startsWith('src/upstream/endpoints.ts'));
    expect(table.length).toBeGreaterThan(10);
    expect(found.filter((x) => !ALLOWED.has(x.slice(0, x.indexOf(':'))))).toEqual([]);
  });
});
