/**
 * Misspelt variables (docs/configuration.md): a variable with one of the gateway's prefixes that
 * it does not know is named once at start-up, with the known name nearest by edit distance, so
 * `CACHE_TTL_SECOND` does not silently do nothing. Node's and the system's own variables
 * (`NODE_ENV`, `HTTP_PROXY`, ...) are not the gateway's and are left alone.
 */
import { OTHER_PROGRAMS_VARIABLES, OUR_PREFIXES, VARIABLES } from './variables.js';

/** Variables of Node.js and of the system that share our prefixes. */
const NOT_OURS = new Set([
  'NODE_ENV',
  'NODE_OPTIONS',
  'NODE_EXTRA_CA_CERTS',
  'NODE_PATH',
  'NODE_DEBUG',
  'NODE_NO_WARNINGS',
  'NODE_TLS_REJECT_UNAUTHORIZED',
  'NODE_V8_COVERAGE',
  'NODE_COMPILE_CACHE',
  'NODE_PENDING_DEPRECATION',
  'NODE_REDIRECT_WARNINGS',
  'NODE_ICU_DATA',
  'NODE_CHANNEL_FD',
  'NODE_UNIQUE_ID',
  'NODE_REPL_HISTORY',
  'NODE_DISABLE_COLORS',
  'NODE_PRESERVE_SYMLINKS',
  'NODE_USE_ENV_PROXY',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'CACHE_DIR',
]);

const KNOWN = [...VARIABLES.map((v) => v.name), ...OTHER_PROGRAMS_VARIABLES.map((v) => v.name)];
const KNOWN_SET = new Set(KNOWN);

/** One warning per unknown variable with our prefixes, naming the nearest known one. */
export function unknownVariableWarnings(env: Record<string, string | undefined>): string[] {
  const warnings: string[] = [];
  for (const name of Object.keys(env).sort()) {
    if (KNOWN_SET.has(name) || NOT_OURS.has(name) || name.startsWith('npm_')) continue;
    if (!OUR_PREFIXES.some((p) => name.startsWith(p))) continue;
    const nearest = nearestName(name);
    warnings.push(`unknown configuration variable ${name} is ignored; did you mean ${nearest}?`);
  }
  return warnings;
}

function nearestName(name: string): string {
  let best = KNOWN[0] as string;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const known of KNOWN) {
    const d = editDistance(name, known);
    if (d < bestDistance) {
      best = known;
      bestDistance = d;
    }
  }
  return best;
}

/** Levenshtein distance (insertions, deletions, substitutions). */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      current[j] = Math.min(
        (previous[j] as number) + 1,
        (current[j - 1] as number) + 1,
        (previous[j - 1] as number) + cost,
      );
    }
    previous = current;
  }
  return previous[b.length] as number;
}
