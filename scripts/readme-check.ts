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
 * - A stream (`curl -N` of an event stream, `npx clarity-cache watch`): it runs until it has
 *   shown a first value; when the next command of its block is a `POST /devnet/call-public`
 *   (the README's "in another terminal" step), that runs too and the stream must then show a
 *   second value, the change. Then it is ended as a reader would end it (Ctrl-C: SIGINT to
 *   its process group).
 * - A ```ts block right after a `<!-- run by the README check -->` line: run with tsx (the
 *   package's `clarity-cache/client` resolved to the client's source, the one other address
 *   replaced), exit status 0 and some output.
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
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
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
  const adapt = (command: ReadmeCommand): string =>
    [...command.prelude, command.text.trim()]
      .join('\n')
      .replaceAll('localhost:3000', host)
      .replaceAll('localhost:20443', devnetHost);
  const env = { ...options.env, CLARITY_CACHE_URL: gatewayUrl };
  const consumed = new Set<ReadmeCommand>();
  const blocks = shellBlocks(markdown).map(commandsOf);
  for (const command of blocks.flat()) {
    if (consumed.has(command)) continue;
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
    if (isStream(text)) {
      const block = blocks.find((b) => b.includes(command))!;
      const next = block[block.indexOf(command) + 1];
      const trigger = next !== undefined && TRIGGER.test(next.text) ? next : undefined;
      if (trigger !== undefined) consumed.add(trigger);
      const verdict = await runStream(
        adapt(command),
        trigger === undefined ? undefined : adapt(trigger),
        env,
      );
      results.push({ command, ...verdict });
      if (trigger !== undefined) results.push({ command: trigger, ...verdict });
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
    const run = await sh(adapt(command), env);
    results.push({ command, ...verdict(kind, command, run) });
  }
  for (const block of clientBlocks(markdown)) {
    const command: ReadmeCommand = { line: block.line, text: block.lines.join('\n'), prelude: [] };
    const source = command.text
      .replaceAll('localhost:3000', host)
      .replaceAll("from 'clarity-cache/client'", `from '${path.join(ROOT, 'client/src/index.ts')}'`);
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'readme-')), 'example.mts');
    writeFileSync(file, source);
    const run = await sh(`node --import tsx ${file}`, env);
    results.push({
      command,
      ...(run.code === 0 && run.stdout.trim() !== ''
        ? { status: 'passed' as const }
        : {
            status: 'failed' as const,
            reason: `exit status ${run.code}: ${(run.stderr || run.stdout).slice(0, 500)}`,
          }),
    });
  }
  return results;
}

/** The marker of a ```ts block the check runs. */
const RUN_MARKER = '<!-- run by the README check -->';

/** The ```ts blocks right after RUN_MARKER. */
export function clientBlocks(markdown: string): { line: number; lines: string[] }[] {
  const lines = markdown.split('\n');
  const blocks: { line: number; lines: string[] }[] = [];
  lines.forEach((text, i) => {
    if (text.trim() !== RUN_MARKER || !/^```ts\s*$/.test(lines[i + 1] ?? '')) return;
    const end = lines.findIndex((l, j) => j > i + 1 && /^```\s*$/.test(l));
    blocks.push({ line: i + 3, lines: lines.slice(i + 2, end) });
  });
  return blocks;
}

/** A command that streams until it is stopped. */
function isStream(text: string): boolean {
  return /^curl\b[^\n]*\s-N\b/.test(text) || /^npx clarity-cache watch\b/.test(text);
}

/** A devnet call that makes a block: what a README stream waits to see the effect of. */
const TRIGGER = /^curl\b[^\n]*localhost:20443\/devnet\/call-public/;

/** How long a stream may take to show each value. */
const STREAM_WAIT_MS = 30_000;

/**
 * Runs a stream until it has shown a first value and, after `trigger`, a second one; then ends
 * it with SIGINT, as Ctrl-C would. A value is a `event: values` line of an event stream, or a
 * JSON line of `clarity-cache watch`.
 */
export async function runStream(
  script: string,
  trigger: string | undefined,
  env: Record<string, string>,
): Promise<{ status: 'passed' } | { status: 'failed'; reason: string }> {
  const child = spawn('sh', ['-c', script], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let stdout = '';
  let stderr = '';
  const seen = (): number =>
    stdout.split('\n').filter((l) => l.startsWith('event: values') || /^\{.*\}$/.test(l.trim())).length;
  const waiters: (() => void)[] = [];
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString();
    for (const w of waiters.splice(0)) w();
  });
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  let ended = false;
  void exited.then(() => {
    ended = true;
    for (const w of waiters.splice(0)) w();
  });
  const until = (n: number): Promise<boolean> =>
    new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), STREAM_WAIT_MS);
      const look = (): void => {
        if (seen() >= n || ended) {
          clearTimeout(timer);
          resolve(seen() >= n);
        } else waiters.push(look);
      };
      look();
    });
  const stop = async (): Promise<number | null> => {
    if (!ended) process.kill(-child.pid!, 'SIGINT');
    return exited;
  };
  const fail = async (reason: string) => {
    await stop();
    return { status: 'failed' as const, reason: `${reason}: ${(stdout + stderr).slice(0, 500)}` };
  };
  if (!(await until(1))) return fail('no value within 30 s');
  if (trigger !== undefined) {
    const run = await sh(trigger, env);
    if (run.code !== 0 || !/"committed":\s*true/.test(run.stdout))
      return fail(`the devnet call failed (${run.code}): ${run.stdout.slice(0, 300)}`);
    if (!(await until(2))) return fail('no second value (the change) within 30 s after the call');
  }
  // Ended as Ctrl-C ends it: every process of the group gets SIGINT, and the shell and npx die
  // of it whatever the watch's own status (test/cli checks that it exits 0 on SIGINT).
  await stop();
  return { status: 'passed' };
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
