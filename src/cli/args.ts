/**
 * The command line's arguments: options may stand anywhere on the line (`--url` before or
 * after the command), `--name value` or `--name=value`; `--` ends the options. A token that
 * starts with "-" followed by a digit (`-5`) is a positional argument, since negative integer
 * literals are ordinary Clarity arguments; any other unknown option is a usage error.
 */

export interface ParsedArgs {
  readonly positional: readonly string[];
  readonly url: string | undefined;
  readonly raw: boolean;
  readonly help: boolean;
  readonly version: boolean;
  readonly sender: string | undefined;
  readonly network: string | undefined;
  readonly fresh: boolean;
  readonly port: string | undefined;
  readonly host: string | undefined;
  /** usage: a key name (`-`: anonymous requests), the first and last UTC day, the grouping. */
  readonly key: string | undefined;
  readonly from: string | undefined;
  readonly to: string | undefined;
  readonly groupBy: string | undefined;
  /** usage: the answer's data as JSON, or the gateway's CSV, instead of a table. */
  readonly json: boolean;
  readonly csv: boolean;
}

export class UsageError extends Error {
  override name = 'UsageError';
}

const VALUE_OPTIONS = ['url', 'sender', 'network', 'port', 'host', 'key', 'from', 'to', 'group-by'] as const;
const FLAG_OPTIONS = ['raw', 'help', 'fresh', 'version', 'json', 'csv'] as const;

export function parseArgs(argv: readonly string[]): ParsedArgs {
  const positional: string[] = [];
  const values: Record<string, string> = {};
  const flags = new Set<string>();
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]!;
    if (token === '--') {
      positional.push(...argv.slice(i + 1));
      break;
    }
    if (token === '-h') {
      flags.add('help');
      continue;
    }
    const m = /^--([a-z-]+)(?:=(.*))?$/s.exec(token);
    if (m === null) {
      if (/^-(?![0-9])./s.test(token)) throw new UsageError(`unknown option ${clip(token)}`);
      positional.push(token);
      continue;
    }
    const name = m[1]!;
    if ((FLAG_OPTIONS as readonly string[]).includes(name)) {
      if (m[2] !== undefined) throw new UsageError(`--${name} takes no value`);
      flags.add(name);
    } else if ((VALUE_OPTIONS as readonly string[]).includes(name)) {
      const value = m[2] ?? argv[++i];
      if (value === undefined || value === '') throw new UsageError(`--${name} needs a value`);
      values[name] = value;
    } else {
      throw new UsageError(`unknown option --${clip(name)}`);
    }
  }
  return {
    positional,
    url: values['url'],
    raw: flags.has('raw'),
    help: flags.has('help'),
    version: flags.has('version'),
    sender: values['sender'],
    network: values['network'],
    fresh: flags.has('fresh'),
    port: values['port'],
    host: values['host'],
    key: values['key'],
    from: values['from'],
    to: values['to'],
    groupBy: values['group-by'],
    json: flags.has('json'),
    csv: flags.has('csv'),
  };
}

/** An option as typed, shortened: never a whole pasted secret in an error message. */
function clip(text: string): string {
  const name = text.split('=')[0]!;
  return name.length > 40 ? `${name.slice(0, 37)}...` : name;
}
