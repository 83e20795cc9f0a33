// When the production bundle needs a build (scripts/start.mjs, `npm start`): when it is
// missing, or older than any of its sources. See start.mjs for why modification times.
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

/** The bundle `npm start` runs. */
export function bundlePath(root) {
  return path.join(root, 'dist', 'clarity-cache.mjs');
}

/** Whether the project at `root` has the sources the bundle is built from (an image has none). */
export function hasSources(root) {
  return existsSync(path.join(root, 'src'));
}

/** Files whose change calls for a new build (none under src/ where there is no src/). */
function inputs(root) {
  const files = ['scripts/bundle.mjs', 'package.json', 'package-lock.json'];
  for (const name of readdirSync(root)) if (/^tsconfig.*\.json$/.test(name)) files.push(name);
  const walk = (dir) => {
    for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
      const rel = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(rel);
      else files.push(rel);
    }
  };
  if (hasSources(root)) walk('src');
  return files;
}

/** Why the bundle of the project at `root` must be built, or undefined when it is current. */
export function staleReason(root, env = process.env) {
  const bundle = bundlePath(root);
  if (env.FORCE_BUILD === '1') return 'FORCE_BUILD=1';
  let built;
  try {
    built = statSync(bundle).mtimeMs;
  } catch {
    return `${path.relative(root, bundle)} does not exist yet`;
  }
  for (const file of inputs(root)) {
    let changed;
    try {
      changed = statSync(path.join(root, file)).mtimeMs;
    } catch {
      continue; // an optional input (package-lock.json in a tarball install)
    }
    if (changed > built) return `${file} changed since the last build`;
  }
  return undefined;
}
