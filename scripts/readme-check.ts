/**
 * Runs every shell command of README.md's ```sh blocks against a running gateway, so that the
 * README cannot drift from what the service does. The examples are written for the demo
 * (`npm run demo`: the devnet's contracts, the gateway on localhost:3000); this check runs them
 * as written, with only `localhost:3000` replaced by the gateway it is given and
 * `localhost:20443` (the demo devnet) by the devnet it is given: addresses, never a command. A
 * command that works only after some rewriting would fail for the reader, so `npx clarity-cache`
 * runs as `npx clarity-cache` (package.json's bin, which works in a fresh clone).
 *
 * What counts as success:
 * - `curl`: exit status 0 and a JSON envelope with `"success": true`; when the command is
 *   followed by a comment line holding JSON (`# {"success":true,...}`), exactly that JSON. A
 *   node route (`/v2/...`, `/v3/...`) answers in the node's shape, not the envelope: exit
 *   status 0 of `curl -f` (an HTTP error fails) and a JSON body.
 * - `npx clarity-cache ...`: exit status 0.
 *
 * Commands that cannot run in a test are listed in SKIPPED_BY_DESIGN with the reason; any
 * other command this script does not know fails the check, so a new README command is never
 * silently ignored. The `node <file>` of a skipped command must still name a file the build
 * produces (the README once ran `node dist/src/main.js`, which does not exist).
 *
 * Usage: tsx scripts/readme-check.ts <gateway URL> [<devnet URL>] (defaults for the latter:
 * localhost:20443, the demo's; ADMIN_TOKEN in the environment when the gateway has one). test/integration/process/demo.test.ts runs it against the demo.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';

const ROOT = path.resolve(import.meta.dirname, '..');

/** One command of a ```sh block, with the shell variables assigned before it in that block. */
export interface ReadmeCommand {
  /** 1-based line in README.md where the command starts. */
  readonly line: number;
  /** The command as written (continuation lines joined with newlines). */
  readonly text: string;
  /** Assignments (`H="..."`) earlier in the same block, which the command may use. */
  readonly prelude: readonly string[];
  /** JSON on the comment line right after the command, when there is one. */
  readonly expected?: unknown;
}

export type CheckResult =
  | { readonly command: ReadmeCommand; readonly status: 'passed' }
  | { readonly command: ReadmeCommand; readonly status: 'skipped'; readonly reason: string }
  | { readonly command: ReadmeCommand; readonly status: 'failed'; readonly reason: string };

/** Commands that cannot run in a test, each with why; matched against the command's text. */
export const SKIPPED_BY_DESIGN: readonly { readonly pattern: RegExp; readonly reason: string }[] = [
  { pattern: /^npx clarity-cache serve\b/, reason: 'a long-running server (the gateway itself)' },
  {
    pattern: /^npm install( |$)/,
    reason:
      'installs from the npm registry, then builds or starts the long-running server; the check runs in the tree it installed (test/integration/process/start.test.ts covers npm start)',
  },
  {
    pattern: /^npm run demo\b/,
    reason:
      'long-running; the check runs against the gateway and devnet it starts (test/integration/process/demo.test.ts starts scripts/demo.ts)',
  },
  { pattern: /^npm test\b/, reason: 'the test suite itself, which runs this check' },
  {
    pattern: /^npm run build && \(cd client && npm pack\)/,
    reason:
      'builds the whole project and writes a tarball; test/client/package.test.ts packs the client and installs it',
  },
  {
    pattern: /^([A-Z_]+=\S+\s+)*npm start\b/,
    reason:
      'a long-running server (UPSTREAMS_FILE names a file on the host); test/integration/process/start.test.ts runs npm start',
  },
  {
    pattern: /^(?:[A-Z_]+=(?:"[^"]*"|\S+)\s+)*docker\b/,
    reason:
      "needs Docker; test/integration/process/image.test.ts builds the image's files as deploy/Dockerfile does and starts them with its CMD, test/fleet/public-side.test.ts checks the compose file and runs its load balancer configuration",
  },
  {
    pattern: /^redis-server\b/,
    reason: 'starts a Redis daemon on the fixed port 6379; the Redis tests start their own on a free port',
  },
  {
    pattern: /^for port in\b/,
    reason:
      'starts three background gateways on fixed ports; test/integration/process/redis-scale.test.ts runs several instances on one Redis (the file it runs is checked to be the build output)',
  },
];

/** The ```sh blocks of a Markdown text, each with the line of its first content line. */
export function shellBlocks(markdown: string): { line: number; lines: string[] }[] {
  const blocks: { line: number; lines: string[] }[] = [];
  let current: { line: number; lines: string[] } | undefined;
  markdown.split('\n').forEach((text, i) => {
    if (current === undefined) {
      if (/^```(sh|bash|shell)\s*$/.test(text)) current = { line: i + 2, lines: [] };
    } else if (/^```\s*$/.test(text)) {
      blocks.push(current);
      current = undefined;
    } else {
      current.lines.push(text);
    }
  });
  return blocks;
}

/**
 * The commands of one block: a command continues while a quote is open, a line ends with `\`,
 * or a `for` loop has not reached its `done`. Comment lines separate commands; a comment line
 * holding JSON right after a command is its expected output.
 */
export function commandsOf(block: { line: number; lines: string[] }): ReadmeCommand[] {
  const commands: ReadmeCommand[] = [];
  const prelude: string[] = [];
  let i = 0;
  const { lines } = block;
  while (i < lines.length) {
    const first = lines[i]!;
    const trimmed = first.trim();
    if (trimmed === '' || trimmed.startsWith('#')) {
      i++;
      continue;
    }
    const start = i;
    const parts = [first];
    const loop = /^(for|while)\b/.test(trimmed);
    while (
      i + 1 < lines.length &&
      (openQuote(parts.join('\n')) ||
        parts.at(-1)!.trimEnd().endsWith('\\') ||
        (loop && !/^\s*done\b/.test(parts.at(-1)!)))
    ) {
      parts.push(lines[++i]!);
    }
    i++;
    const text = parts.join('\n');
    // An assignment (`H="..."`, `TIP=0x$(curl ...)`): kept for the later commands of the block.
    if (isAssignment(text.trim())) {
      prelude.push(text.trim());
      continue;
    }
    const next = lines[i]?.trim();
    let expected: unknown;
    if (next?.startsWith('# {') === true) {
      try {
        expected = JSON.parse(next.slice(2));
      } catch {
        expected = undefined; // an abridged example ("...", "…"): success is checked, not the text
      }
    }
    commands.push({
      line: block.line + start,
      text,
      prelude: [...prelude],
      ...(expected === undefined ? {} : { expected }),
    });
  }
  return commands;
}

/**
 * Whether a line only assigns a shell variable (`H="..."`, `TIP=0x$(curl ... | sed '...')`),
 * rather than running a command with a variable set for it (`ADMIN_TOKEN="$(...)" docker ...`):
 * the value is one shell word (quotes and `$(...)` may hold spaces), and nothing but a comment
 * follows it.
 */
export function isAssignment(text: string): boolean {
  const name = /^[A-Za-z_][A-Za-z0-9_]*=/.exec(text);
  if (name === null) return false;
  let depth = 0;
  let quote: string | undefined;
  let i = name[0].length;
  for (; i < text.length; i++) {
    const c = text[i]!;
    if (quote !== undefined) {
      if (c === quote) quote = undefined;
      else if (quote === '"' && c === '\\') i++;
    } else if (c === '\\') i++;
    else if (c === "'" || c === '"') quote = c;
    else if (c === '$' && text[i + 1] === '(') {
      depth++;
      i++;
    } else if (c === ')' && depth > 0) depth--;
    else if (/\s/.test(c) && depth === 0) break;
  }
  const rest = text.slice(i).trim();
  return rest === '' || rest.startsWith('#');
}

/** Whether a single or double quote is still open at the end of the text (sh quoting rules, roughly). */
function openQuote(text: string): boolean {
  let quote: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote === undefined) {
      if (c === '#' && (i === 0 || /\s/.test(text[i - 1]!))) {
        const eol = text.indexOf('\n', i);
        if (eol === -1) return false;
        i = eol;
      } else if (c === '\\') i++;
      else if (c === "'" || c === '"') quote = c;
    } else if (c === quote) quote = undefined;
    else if (quote === '"' && c === '\\') i++;
  }
  return quote !== undefined;
}

/** The files `node <file>` may run in the README: the package's entry points (main and bin). */
function builtEntryPoints(): Set<string> {
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
    main?: string;
    bin?: Record<string, string>;
  };
  return new Set([pkg.main, ...Object.values(pkg.bin ?? {})].filter((f): f is string => f !== undefined));
}

/** Run every README command against the gateway at `gatewayUrl`. */
export async function checkReadme(
  gatewayUrl: string,
  options: {
    readonly readme?: string;
    readonly env?: Record<string, string>;
    /** The demo devnet, for the commands that ask it (written as localhost:20443). */
    readonly devnetUrl?: string;
  } = {},
): Promise<CheckResult[]> {
  const markdown = readFileSync(options.readme ?? path.join(ROOT, 'README.md'), 'utf8');
  const host = new URL(gatewayUrl).host;
  const devnetHost = new URL(options.devnetUrl ?? 'http://localhost:20443').host;
  const entryPoints = builtEntryPoints();
  const results: CheckResult[] = [];
  for (const command of shellBlocks(markdown).flatMap(commandsOf)) {
    const text = command.text.trim();
    const skip = SKIPPED_BY_DESIGN.find((s) => s.pattern.test(text));
    if (skip !== undefined) {
      const missing = [...text.matchAll(/\bnode\s+(\S+\.m?js)\b/g)]
        .map((m) => m[1]!)
        .filter((file) => !entryPoints.has(file));
      results.push(
        missing.length > 0
          ? {
              command,
              status: 'failed',
              reason: `runs ${missing.join(', ')}, which the build does not produce (${[...entryPoints].join(', ')})`,
            }
          : { command, status: 'skipped', reason: skip.reason },
      );
      continue;
    }
    const kind = /^curl\b/.test(text) ? 'curl' : /^npx clarity-cache\b/.test(text) ? 'cli' : undefined;
    if (kind === undefined) {
      results.push({
        command,
        status: 'failed',
        reason: 'not a curl or clarity-cache command, and not listed in SKIPPED_BY_DESIGN',
      });
      continue;
    }
    const adapted = [...command.prelude, text]
      .join('\n')
      .replaceAll('localhost:3000', host)
      .replaceAll('localhost:20443', devnetHost);
    const run = await sh(adapted, { ...options.env, CLARITY_CACHE_URL: gatewayUrl });
    results.push({ command, ...verdict(kind, command, run) });
  }
  return results;
}

/** A curl of one of the node's own routes (answered in the node's shape). */
const NODE_ROUTE = /localhost:3000(?:\/(?:mainnet|testnet))?\/v[23]\//;

function verdict(
  kind: 'curl' | 'cli',
  command: ReadmeCommand,
  run: { code: number | null; stdout: string; stderr: string },
): { status: 'passed' } | { status: 'failed'; reason: string } {
  if (run.code !== 0) {
    return {
      status: 'failed',
      reason: `exit status ${run.code}: ${(run.stderr || run.stdout).slice(0, 500)}`,
    };
  }
  if (kind === 'cli') return { status: 'passed' };
  // `curl -i`: the status line and headers, then the body.
  let text = run.stdout;
  if (text.startsWith('HTTP/')) {
    const status = Number(/^HTTP\/[\d.]+ (\d{3})/.exec(text)?.[1]);
    if (!(status >= 200 && status < 300))
      return { status: 'failed', reason: `HTTP ${status}: ${text.slice(0, 500)}` };
    text = text.slice(text.indexOf('\r\n\r\n') + 4);
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return { status: 'failed', reason: `not JSON: ${text.slice(0, 500)}` };
  }
  if (NODE_ROUTE.test(command.text)) return { status: 'passed' };
  if ((body as { success?: unknown }).success !== true) {
    return { status: 'failed', reason: `not a success envelope: ${text.slice(0, 500)}` };
  }
  if (command.expected !== undefined && !isDeepStrictEqual(body, command.expected)) {
    return {
      status: 'failed',
      reason: `answered ${text.slice(0, 500)}, the README says ${JSON.stringify(command.expected)}`,
    };
  }
  return { status: 'passed' };
}

function sh(
  script: string,
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', script], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Command line: print one line per command, exit 1 when any failed. */
async function main(): Promise<void> {
  const url = process.argv[2];
  if (url === undefined) {
    console.error('usage: tsx scripts/readme-check.ts <gateway URL>   (e.g. the one npm run demo prints)');
    process.exit(2);
  }
  const results = await checkReadme(url, process.argv[3] === undefined ? {} : { devnetUrl: process.argv[3] });
  for (const r of results) {
    const first = r.command.text.split('\n')[0];
    const why = r.status === 'passed' ? '' : ` — ${r.reason}`;
    console.log(`${r.status.padEnd(7)} README.md:${r.command.line} ${first}${why}`);
  }
  const failed = results.filter((r) => r.status === 'failed').length;
  console.log(
    `${results.length} commands: ${results.length - failed} ok or skipped by design, ${failed} failed`,
  );
  process.exitCode = failed > 0 ? 1 : 0;
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  await main();
}
