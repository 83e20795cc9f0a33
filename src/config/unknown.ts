/**
 * Misspelt variables (docs/configuration.md): a variable the gateway does not know is named once
 * at start-up, with the known name nearest by edit distance, when
 *
 * - it has one of the gateway's prefixes (`CACHE_TTL_SECOND`), or
 * - it is a near miss of a known name, whatever its prefix: `API_KEY_FILE` for `API_KEYS_FILE`
 *   leaves the gateway open without a word otherwise.
 *
 * A near miss is at most two edits away, and at most one edit per four characters of the shorter
 * of the two names (so 4-7 characters allow one edit, 8 or more two, under 4 none): the
 * environment of any shell holds short names of its own (`PWD`, `HOME`, `TERM`, `USER`) only
 * two or three edits from `PORT` and `HOST`, and a warning about them would be noise that
 * teaches operators to ignore the real one. Names are compared without regard to case, so
 * `log_level` is caught too. Node's and the system's own variables (`NODE_ENV`, `HTTP_PROXY`,
 * `PATH`, ...) and npm's (`npm_*`) are never named.
 */
import { OTHER_PROGRAMS_VARIABLES, OUR_PREFIXES, VARIABLES } from './variables.js';

/**
 * Variables of Node.js, of the system and of common tools: never named, even when they share a
 * prefix with ours or come close to one of our names. The rule on distance already keeps the
 * short ones out; they are listed as well so that no change of that rule can bring them back.
 */
const NOT_OURS = new Set([
  // Node.js (its documented variables, and what its official images and CI set).
  'NODE_ENV',
  'NODE_OPTIONS',
  'NODE_EXTRA_CA_CERTS',
  'NODE_PATH',
  'NODE_DEBUG',
  'NODE_DEBUG_NATIVE',
  'NODE_NO_WARNINGS',
  'NODE_TLS_REJECT_UNAUTHORIZED',
  'NODE_V8_COVERAGE',
  'NODE_COMPILE_CACHE',
  'NODE_DISABLE_COMPILE_CACHE',
  'NODE_PENDING_DEPRECATION',
  'NODE_PENDING_PIPE_INSTANCES',
  'NODE_REDIRECT_WARNINGS',
  'NODE_ICU_DATA',
  'NODE_CHANNEL_FD',
  'NODE_CHANNEL_SERIALIZATION_MODE',
  'NODE_UNIQUE_ID',
  'NODE_REPL_HISTORY',
  'NODE_REPL_EXTERNAL_MODULE',
  'NODE_DISABLE_COLORS',
  'NODE_PRESERVE_SYMLINKS',
  'NODE_SKIP_PLATFORM_CHECK',
  'NODE_TEST_CONTEXT',
  'NODE_USE_ENV_PROXY',
  'NODE_USE_SYSTEM_CA',
  // The official node Docker images (deploy/Dockerfile's base) set it in every container.
  'NODE_VERSION',
  // actions/setup-node.
  'NODE_AUTH_TOKEN',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'ALL_PROXY',
  'CACHE_DIR',
  // systemd, for a unit with CacheDirectory=.
  'CACHE_DIRECTORY',
  // Marathon (Mesos) gives a task its ports as PORTS and PORT0, PORT1, ...
  'PORTS',
  // The shell's, the login's and the terminal's.
  'PATH',
  'HOME',
  'PWD',
  'OLDPWD',
  'USER',
  'LOGNAME',
  'SHELL',
  'SHLVL',
  'TERM',
  'LANG',
  'HOSTNAME',
  'HOSTTYPE',
  'OSTYPE',
  'MAIL',
  'TZ',
  'CI',
  'TMPDIR',
  'TEMP',
  'TMP',
  'EDITOR',
  'PAGER',
  'DISPLAY',
  'COLUMNS',
  'LINES',
  // Windows.
  'OS',
  'USERNAME',
  'USERPROFILE',
  'COMPUTERNAME',
  'HOMEPATH',
  'HOMEDRIVE',
  'PATHEXT',
  'PUBLIC',
]);

const KNOWN = [...VARIABLES.map((v) => v.name), ...OTHER_PROGRAMS_VARIABLES.map((v) => v.name)];
const KNOWN_SET = new Set(KNOWN);

export interface NearestName {
  readonly name: string;
  readonly distance: number;
}

/**
 * One warning per variable the gateway ignores though it was probably meant for it, naming the
 * nearest known one. `platform`: on Windows the environment ignores case (`Port` is `PORT`),
 * so a name differing from a known one in case alone is that variable, not a mistake.
 */
export function unknownVariableWarnings(
  env: Record<string, string | undefined>,
  platform: NodeJS.Platform = process.platform,
): string[] {
  const warnings: string[] = [];
  for (const name of Object.keys(env).sort()) {
    if (KNOWN_SET.has(name) || name.startsWith('npm_') || /^PORT\d+$/.test(name)) continue;
    const upper = name.toUpperCase();
    if (NOT_OURS.has(name) || NOT_OURS.has(upper)) continue;
    if (platform === 'win32' && KNOWN_SET.has(upper)) continue;
    const nearest = nearestName(name);
    if (OUR_PREFIXES.some((p) => name.startsWith(p)) || isNearMiss(upper, nearest))
      warnings.push(`unknown configuration variable ${name} is ignored; did you mean ${nearest.name}?`);
  }
  return warnings;
}

/** At most two edits, and at most one per four characters of the shorter name. */
function isNearMiss(name: string, nearest: NearestName): boolean {
  const shorter = Math.min(name.length, nearest.name.length);
  return nearest.distance <= 2 && nearest.distance <= Math.floor(shorter / 4);
}

/** The known name nearest to `name` (case ignored); the table's first among equals. */
export function nearestName(name: string): NearestName {
  const upper = name.toUpperCase();
  let best: NearestName = { name: KNOWN[0] as string, distance: Number.POSITIVE_INFINITY };
  for (const known of KNOWN) {
    const distance = editDistance(upper, known);
    if (distance < best.distance) best = { name: known, distance };
  }
  return best;
}

/**
 * Damerau-Levenshtein distance in its restricted form (optimal string alignment): insertions,
 * deletions, substitutions, and a swap of two adjacent characters, each one edit. A swap is the
 * commonest typing slip (`LOG_LEVLE`), and plain Levenshtein would count it as two.
 */
export function editDistance(a: string, b: string): number {
  // Three rows: the one before the previous is needed for a swap.
  let before: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(
        (previous[j] as number) + 1,
        (current[j - 1] as number) + 1,
        (previous[j - 1] as number) + cost,
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d = Math.min(d, (before[j - 2] as number) + 1);
      current[j] = d;
    }
    before = previous;
    previous = current;
  }
  return previous[b.length] as number;
}
