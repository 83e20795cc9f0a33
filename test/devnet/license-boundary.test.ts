/**
 * @stacks/clarinet-sdk is GPL-3.0: it must stay a devDependency, imported only under
 * src/devnet (and by tests and scripts), never from the production server path.
 */
import { readdir, readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';

const root = new URL('../../', import.meta.url);

async function sourceFiles(dir: URL): Promise<URL[]> {
  const out: URL[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const url = new URL(entry.isDirectory() ? `${entry.name}/` : entry.name, dir);
    if (entry.isDirectory()) out.push(...(await sourceFiles(url)));
    else if (/\.(?:ts|mts|cts|js|mjs)$/.test(entry.name)) out.push(url);
  }
  return out;
}

describe('GPL boundary around the devnet', () => {
  it('nothing in src outside src/devnet imports clarinet-sdk or the devnet', async () => {
    const offenders: string[] = [];
    for (const file of await sourceFiles(new URL('src/', root))) {
      const path = file.pathname.slice(root.pathname.length);
      if (path.startsWith('src/devnet/')) continue;
      const text = await readFile(file, 'utf8');
      if (/@stacks\/clarinet-sdk/.test(text) || /from\s+['"][^'"]*\/devnet(?:\/[^'"]*)?['"]/.test(text)) {
        offenders.push(path);
      }
    }
    expect(offenders).toEqual([]);
  });

  it('clarinet-sdk is a devDependency and the production build leaves src/devnet out', async () => {
    const pkg = JSON.parse(await readFile(new URL('package.json', root), 'utf8'));
    expect(pkg.dependencies?.['@stacks/clarinet-sdk']).toBeUndefined();
    expect(pkg.devDependencies?.['@stacks/clarinet-sdk']).toBeDefined();
    const build = JSON.parse(await readFile(new URL('tsconfig.build.json', root), 'utf8'));
    expect(build.exclude).toContain('src/devnet');
  });
});
