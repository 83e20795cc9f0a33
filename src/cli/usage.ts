/**
 * `clarity-cache usage`: the usage rows of docs/usage.md. With ADMIN_TOKEN in the environment
 * it asks `GET /admin/usage` (every key, or `--key`'s), else with CLARITY_CACHE_API_KEY it asks
 * `GET /usage` (that key's own). The options are checked here before any request, as the
 * gateway would check them; the answer is printed as a table, its data as JSON (`--json`) or
 * the gateway's own CSV (`--csv`).
 */
import {
  errorFromRecord,
  NetworkError,
  USAGE_DIMENSIONS,
  type UsageDimension,
  type UsageFigures,
  type UsageReport,
  type UsageRow,
  usageQuery,
} from '../../client/src/index.js';
import { describeFailure, isEnvelope } from '../../client/src/transport.js';
import { type ParsedArgs, UsageError } from './args.js';

/** The environment variables the command takes its credentials from. */
export const ADMIN_TOKEN_VAR = 'ADMIN_TOKEN';
export const API_KEY_VAR = 'CLARITY_CACHE_API_KEY';

export interface UsageRequest {
  /** `/admin/usage?...` or `/usage?...`, relative to the gateway's base URL. */
  readonly path: string;
  /** The credential's header. */
  readonly headers: Record<string, string>;
  readonly output: 'table' | 'json' | 'csv';
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;

function checkDay(option: string, value: string): void {
  const ms = Date.parse(`${value}T00:00:00Z`);
  if (!DAY.test(value) || Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== value) {
    throw new UsageError(`--${option} must be a UTC day, YYYY-MM-DD, got ${JSON.stringify(value)}`);
  }
}

function groupByOf(text: string | undefined): UsageDimension[] | undefined {
  if (text === undefined) return undefined;
  const dims = text
    .split(',')
    .map((d) => d.trim())
    .filter((d) => d !== '');
  const seen = new Set<string>();
  for (const d of dims) {
    if (!(USAGE_DIMENSIONS as readonly string[]).includes(d) || seen.has(d)) {
      throw new UsageError(
        `--group-by takes each of ${USAGE_DIMENSIONS.join(', ')} at most once, got ${JSON.stringify(d)}`,
      );
    }
    seen.add(d);
  }
  return dims as UsageDimension[];
}

/**
 * What to ask, from the command line and the environment; a UsageError (exit 2, nothing sent)
 * for anything the gateway would refuse or the command cannot do. `authorization` is the
 * header the URL's credentials take (HTTP Basic), which the admin token would need too.
 */
export function usageRequest(
  args: ParsedArgs,
  env: Record<string, string | undefined>,
  urlHasCredentials: boolean,
): UsageRequest {
  if ([args.json, args.csv, args.raw].filter(Boolean).length > 1) {
    throw new UsageError('--json, --csv and --raw are different outputs: give one of them');
  }
  for (const [option, value] of [
    ['sender', args.sender],
    ['network', args.network],
    ['port', args.port],
    ['host', args.host],
  ] as const) {
    if (value !== undefined) throw new UsageError(`--${option} is not an option of usage`);
  }
  if (args.fresh) throw new UsageError('--fresh is not an option of usage');
  if (args.from !== undefined) checkDay('from', args.from);
  if (args.to !== undefined) checkDay('to', args.to);
  if (args.from !== undefined && args.to !== undefined && args.from > args.to) {
    throw new UsageError(`--from (${args.from}) is after --to (${args.to})`);
  }
  const groupBy = groupByOf(args.groupBy);
  const options = {
    ...(args.from === undefined ? {} : { from: args.from }),
    ...(args.to === undefined ? {} : { to: args.to }),
    ...(groupBy === undefined ? {} : { groupBy }),
  };
  const output = args.json || args.raw ? 'json' : args.csv ? 'csv' : 'table';
  const token = env[ADMIN_TOKEN_VAR];
  const apiKey = env[API_KEY_VAR];
  if (token !== undefined && token !== '') {
    if (urlHasCredentials) {
      throw new UsageError(
        `the URL's credentials and ${ADMIN_TOKEN_VAR} would both be the Authorization header: give the URL without them`,
      );
    }
    return {
      path: `/admin/usage${usageQuery({ ...options, ...(args.key === undefined ? {} : { key: args.key }) })}`,
      headers: { authorization: `Bearer ${token}` },
      output,
    };
  }
  if (apiKey !== undefined && apiKey !== '') {
    if (args.key !== undefined) {
      throw new UsageError(
        `--key needs ${ADMIN_TOKEN_VAR}: with ${API_KEY_VAR} the gateway answers that key's own usage only`,
      );
    }
    return { path: `/usage${usageQuery(options)}`, headers: { 'x-api-key': apiKey }, output };
  }
  throw new UsageError(
    `usage needs ${ADMIN_TOKEN_VAR} (every key's usage) or ${API_KEY_VAR} (that key's own) in the environment`,
  );
}

/**
 * The gateway's CSV answer as it is. An error answer (an envelope) becomes its error; anything
 * else that is not CSV is said to be no usage answer.
 */
export async function fetchCsv(
  baseUrl: string,
  path: string,
  headers: Record<string, string>,
  timeoutMs = 60_000,
): Promise<{ readonly csv: string } | { readonly unexpected: string }> {
  const url = baseUrl.replace(/\/+$/, '') + path;
  let res: Response;
  let text: string;
  try {
    res = await fetch(url, {
      headers: { ...headers, accept: 'text/csv' },
      signal: AbortSignal.timeout(timeoutMs),
    });
    text = await res.text();
  } catch (err) {
    throw new NetworkError({
      code: 'NETWORK_ERROR',
      status: 0,
      message: `GET ${url} failed: ${describeFailure(err, timeoutMs)}`,
      cause: err,
    });
  }
  if (res.ok && /^text\/csv\b/i.test(res.headers.get('content-type') ?? '')) return { csv: text };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (isEnvelope(parsed) && !parsed.success) {
    throw errorFromRecord({ ...parsed.error, status: res.status });
  }
  if (res.ok) return { unexpected: 'CSV usage rows' };
  throw new NetworkError({
    code: 'NETWORK_ERROR',
    status: res.status,
    message: `GET ${url} answered ${res.status} without a JSON envelope`,
  });
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

/** Whether an answer's data is a usage report (rows and totals). */
export function isUsageReport(v: unknown): v is UsageReport {
  return (
    isObject(v) &&
    Array.isArray(v['rows']) &&
    Array.isArray(v['groupBy']) &&
    isObject(v['totals']) &&
    typeof v['from'] === 'string' &&
    typeof v['to'] === 'string'
  );
}

const FIGURES: readonly (keyof UsageFigures)[] = ['requests', 'units', 'upstreamRequests', 'bytesSent'];

function cell(dimension: UsageDimension, row: UsageRow): string {
  const value = row[dimension];
  if (dimension === 'key' && value === null) return '(anonymous)';
  if (value === undefined || value === null || value === '') return '-';
  return String(value);
}

/**
 * The report as a table: a line saying the period, then a header, one line per row (the group
 * fields left-aligned, the figures right-aligned; the anonymous key as `(anonymous)`, a
 * missing function as `-`) and a `total` line.
 */
export function usageTable(report: UsageReport): string {
  const dims = report.groupBy;
  // Without group fields, a label column holds only the totals line's "total".
  const labels = dims.length === 0 ? [''] : [...dims];
  const header = [...labels, ...FIGURES];
  const body = report.rows.map((row) => [
    ...(dims.length === 0 ? [''] : dims.map((d) => cell(d, row))),
    ...FIGURES.map((f) => String(row[f])),
  ]);
  const total = ['total', ...labels.slice(1).map(() => ''), ...FIGURES.map((f) => String(report.totals[f]))];
  const lines = [header, ...body, total];
  const widths = header.map((_, i) => Math.max(...lines.map((l) => l[i]!.length)));
  const render = (line: string[]): string =>
    line
      .map((text, i) => (i < labels.length ? text.padEnd(widths[i]!) : text.padStart(widths[i]!)))
      .join('  ')
      .trimEnd();
  return `usage from ${report.from} to ${report.to} (UTC days)\n${lines.map(render).join('\n')}\n`;
}
