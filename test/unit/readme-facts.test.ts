/**
 * What the README states about the project, checked against the project itself where a fact has
 * a source: the demo's script, the CORS headers the server sends, the CI script's list of tools,
 * the folders and files of the code map, package.json. (The README's commands are run against the demo by
 * test/integration/process/demo.test.ts; these are the sentences around them.)
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { commandsOf, isAssignment, SKIPPED_BY_DESIGN, shellBlocks } from '../../scripts/readme-check.js';
import { CORS_ALLOW_HEADERS } from '../../src/http/cors.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
const README = read('README.md');

/** A `## ` section of the README, its whitespace runs made single spaces (Markdown wraps lines anywhere). */
function section(title: string): string {
  const start = README.indexOf(`\n## ${title}`);
  expect(start, title).toBeGreaterThan(-1);
  const end = README.indexOf('\n## ', start + 1);
  return README.slice(start, end === -1 ? undefined : end).replace(/\s+/g, ' ');
}

describe('the README', () => {
  it('says what `npm install` does: it installs, and builds nothing', () => {
    const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
    for (const hook of ['preinstall', 'install', 'postinstall', 'prepare'])
      expect(pkg.scripts[hook]).toBeUndefined();
    const line = README.split('\n').find((l) => /^npm install\s+#/.test(l));
    expect(line).toBeDefined();
    expect(line).not.toMatch(/\bbuilds?\b(?! nothing)/);
    expect(line).toContain('builds nothing');
  });

  it('tells where the demo keeps its cache and every port it takes, as scripts/demo.ts does', () => {
    const demo = read('scripts/demo.ts');
    const own = /ownDataDir \? '([^']+)'/.exec(demo)?.[1];
    expect(own).toBe('.demo-data');
    const text = section('Try it');
    expect(text).toContain(`\`${own}/\``);
    expect(text).toContain('emptied at each start');
    expect(text).not.toMatch(/demo[^.]*`DATA_DIR` \(default `\.\/data`\)/);
    const ports = [...demo.matchAll(/portFrom\('([A-Z_]+)', (\d+)\)/g)].map((m) => [m[1]!, m[2]!] as const);
    expect(ports.map(([name]) => name).sort()).toEqual(['DEVNET_PORT', 'EVENT_OBSERVER_PORT', 'PORT']);
    for (const [name, port] of ports) {
      expect(text, name).toContain(`\`${name}\`, default ${port}`);
      // The busy-port check covers it too.
      expect(demo).toContain(`ensureFree('${name}'`);
    }
    expect(text).toContain('A `PORT`, `DEVNET_PORT` or `EVENT_OBSERVER_PORT` that another process holds');
  });

  it('lists the request headers CORS allows, as the server sends them', () => {
    expect(README).toContain(`\`Access-Control-Allow-Headers: ${CORS_ALLOW_HEADERS}\``);
    expect(README).not.toContain('`Access-Control-Allow-Headers: content-type` ');
  });

  it('says stale-if-error never dates an entry "since now" when the tip is unknown, as the code does', () => {
    const text = section('Freshness');
    expect(text).not.toContain('counts as stale since now');
    expect(text).toContain('never "since now"');
    expect(read('docs/freshness.md').replace(/\s+/g, ' ')).toContain('never "since now"');
    expect(read('src/cache/judge.ts')).toContain('Never "since now"');
  });

  it('names every tool `npm test` needs that the CI script installs', () => {
    const packages = [...read('.ci/run').matchAll(/missing\+=\(([^)]+)\)/g)].map((m) => m[1]!);
    expect(packages.sort()).toEqual(['chromium', 'nginx-light', 'redis-server']);
    const text = section('The two commands');
    for (const name of packages) expect(text, name).toContain(name);
  });

  it('has a code map of folders that exist, in one table', () => {
    expect(README).toContain('\n## Code map\n');
    const lines = README.slice(README.indexOf('\n## Code map\n') + 1).split('\n');
    const end = lines.findIndex((l, i) => i > 0 && l.startsWith('## '));
    const map = lines.slice(0, end === -1 ? undefined : end);
    const rows = map.map((l, i) => [l, i] as const).filter(([l]) => l.startsWith('|'));
    expect(rows.length).toBeGreaterThan(10);
    // One table: its rows are consecutive lines (a row after the text below it renders as text).
    expect(rows.at(-1)![1] - rows[0]![1]).toBe(rows.length - 1);
    for (const [row] of rows.slice(2)) {
      const folders = [...row.split('|')[1]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
      expect(folders.length, row).toBeGreaterThan(0);
      for (const folder of folders) {
        const at = path.join(ROOT, folder);
        expect(existsSync(at) && statSync(at).isDirectory(), folder).toBe(true);
      }
    }
  });

  it('names in its code map only files that exist, in the row’s folder or by their path', () => {
    const lines = README.slice(README.indexOf('\n## Code map\n') + 1).split('\n');
    const end = lines.findIndex((l, i) => i > 0 && l.startsWith('## '));
    const rows = lines.slice(0, end === -1 ? undefined : end).filter((l) => l.startsWith('| `'));
    const missing: string[] = [];
    for (const row of rows) {
      const [, folderCell = '', text = ''] = row.split('|');
      const folders = [...folderCell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
      for (const [, file] of text.matchAll(/`([^`\s]+\.(?:ts|mjs))`/g)) {
        const found = [file!, ...folders.map((f) => path.join(f, file!))].some((p) =>
          existsSync(path.join(ROOT, p)),
        );
        if (!found) missing.push(`${folders.join(', ')}: ${file}`);
      }
    }
    expect(missing).toEqual([]);
  });
});

describe("the README check's reading of a command", () => {
  it('takes a command run with a variable set for it as a command, not an assignment', () => {
    expect(
      isAssignment('ADMIN_TOKEN="$(openssl rand -hex 32)" docker compose -f deploy/compose.yaml up'),
    ).toBe(false);
    expect(isAssignment('API_KEYS_FILE=./keys.json npm start')).toBe(false);
    expect(isAssignment('H="authorization: Bearer $ADMIN_TOKEN"')).toBe(true);
    expect(
      isAssignment('TIP=0x$(curl -s localhost:20443/v2/info | sed \'s/.*"h":\\([0-9]*\\).*/\\1/\')'),
    ).toBe(true);
    expect(isAssignment('HEIGHT=$(curl -s x) # the tip')).toBe(true);
    const [command] = shellBlocks(
      '```sh\nADMIN_TOKEN="$(openssl rand -hex 32)" docker compose -f deploy/compose.yaml up --build -d\n```\n',
    ).flatMap(commandsOf);
    expect(command?.prelude).toEqual([]);
    expect(SKIPPED_BY_DESIGN.some((s) => s.pattern.test(command!.text))).toBe(true);
  });
});
