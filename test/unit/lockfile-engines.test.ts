/**
 * `npm ci` on the Node version the project declares installs without an engine warning: every
 * package the lockfile pins accepts the lowest Node that package.json's `engines` allows (a
 * transitive dependency that moved to a newer Node is held back with an `overrides` entry).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

// npm's own range semantics (the package npm uses, here through the tree; it ships no types).
const semver = createRequire(import.meta.url)('semver') as {
  minVersion(range: string): { version: string } | null;
  satisfies(version: string, range: string): boolean;
};

const ROOT = path.resolve(import.meta.dirname, '../..');
const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  engines: { node: string };
};
const lock = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { version?: string; engines?: { node?: string } | string[] }>;
};

describe('the lockfile', () => {
  it('pins only packages that run on the lowest Node the project declares', () => {
    const lowest = semver.minVersion(pkg.engines.node)?.version;
    expect(lowest).toBeDefined();
    const refused = Object.entries(lock.packages)
      .filter(([name]) => name !== '')
      .flatMap(([name, entry]) => {
        // An old form of the field lists strings ("node >= 0.8"): npm ignores it, so do we.
        const range = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
        return range !== undefined && !semver.satisfies(lowest!, range)
          ? [`${name}@${entry.version} wants node ${range}`]
          : [];
      });
    expect(refused).toEqual([]);
  });
});
