/**
 * The command line's commands, apart from process plumbing (main.ts), so that tests can run
 * them in-process: `run(argv, io)` resolves with the exit status.
 *
 * Exit status: 0 success; 1 the gateway answered with an error envelope, no answer came, or
 * the answer was not what the command asked for; 2 the command line itself is wrong (usage,
 * a bad --url, a malformed or out-of-range literal, an argument that does not fit the ABI),
 * detected before the call is sent. `watch` ended by Ctrl-C exits 0. Whatever happens, stderr
 * gets one line with a code and a message, never a stack trace.
 */

import {
  ArgumentTypeError,
  ClarityCacheError,
  type ClientResponse,
  type ContractAbi,
  createClient,
  type Envelope,
  envelopeError,
  formatAbiType,
  type Literal,
  LiteralSyntaxError,
  literalToValue,
  parseClarityLiteral,
  type SimpleValue,
  splitContractId,
  type UsageReport,
  type WatchHandle,
} from '../../client/src/index.js';
import { send } from '../../client/src/transport.js';
import type { Network } from '../network.js';
import { type ParsedArgs, parseArgs, UsageError } from './args.js';
import { gatewayTarget } from './gateway-url.js';
import { HELP, serveHelp } from './help.js';
import { fetchCsv, isUsageReport, usageRequest, usageTable } from './usage.js';
import { VERSION } from './version.js';

export interface CliIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly env: Record<string, string | undefined>;
  /** Starts the gateway in this process (`serve`); resolves once it listens. */
  readonly serve?: () => Promise<void>;
  /**
   * From this call on, Ctrl-C aborts the returned signal instead of ending the process, so
   * that `watch` can end its stream and exit 0. Without it, `watch` runs until its stream ends.
   */
  readonly interrupts?: () => AbortSignal;
}

export { DEFAULT_URL } from './gateway-url.js';

/** A problem found before any request: printed with a code, exit status 2. */
class InputError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const json = (v: unknown): string => `${JSON.stringify(v, null, 2)}\n`;

/** An answer that is an envelope but not what the command asked for (--url names something else). */
class UnexpectedAnswer extends Error {}

export async function run(argv: readonly string[], io: CliIo): Promise<number> {
  try {
    return await runCommand(argv, io);
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr(`clarity-cache: USAGE_ERROR: ${err.message} (see clarity-cache --help)\n`);
      return 2;
    }
    if (err instanceof InputError) {
      io.stderr(
        `clarity-cache: ${err.code}: ${err.message}${err.code === 'USAGE_ERROR' ? ' (see clarity-cache --help)' : ''}\n`,
      );
      return 2;
    }
    if (err instanceof ClarityCacheError) {
      io.stderr(describeError(err));
      return 1;
    }
    if (err instanceof UnexpectedAnswer) {
      io.stderr(`clarity-cache: UNEXPECTED_ANSWER: ${err.message}\n`);
      return 1;
    }
    // A bug of this program: still one line, never a stack trace.
    io.stderr(`clarity-cache: INTERNAL_ERROR: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}

async function runCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const args = parseArgs(argv);
  const [command, ...rest] = args.positional;
  if (args.help && command === 'serve') {
    io.stdout(serveHelp());
    return 0;
  }
  if (args.help || command === 'help') {
    io.stdout(HELP);
    return 0;
  }
  if (args.version) {
    io.stdout(`${VERSION}\n`);
    return 0;
  }
  if (command !== 'usage') {
    for (const [option, given] of [
      ['key', args.key !== undefined],
      ['from', args.from !== undefined],
      ['to', args.to !== undefined],
      ['group-by', args.groupBy !== undefined],
      ['json', args.json],
      ['csv', args.csv],
    ] as const) {
      if (given) throw new InputError('USAGE_ERROR', `--${option} is an option of usage only`);
    }
  }
  switch (command) {
    case 'serve':
      return await serve(args, rest, io);
    case 'call':
      return await call(args, rest, io);
    case 'watch':
      return await watch(args, rest, io);
    case 'abi': {
      need(rest, 1, 'abi <addr.name>');
      splitId(rest[0]!);
      const gateway = client(args, io);
      return print(await gateway.raw.abi(rest[0]!), args, io, (d) => expectAbi(d, gateway.baseUrl));
    }
    case 'known': {
      need(rest, 0, 'known');
      const gateway = client(args, io);
      return print(await gateway.raw.knownContracts(), args, io, (d) =>
        expect(d, isKnownContracts, 'a list of known contracts', gateway.baseUrl),
      );
    }
    case 'decode': {
      need(rest, 1, 'decode <hex>');
      const gateway = client(args, io);
      return print(
        await gateway.raw.decode(rest[0]!),
        args,
        io,
        (d) => expect(d, (v) => isObject(v) && 'decoded' in v, 'a decoded value', gateway.baseUrl).decoded,
      );
    }
    case 'usage':
      need(rest, 0, 'usage [--key NAME] [--from DAY] [--to DAY] [--group-by DIM[,DIM]] [--json|--csv]');
      return await usage(args, io);
    case undefined:
      throw new InputError('USAGE_ERROR', 'no command given');
    default:
      throw new InputError('USAGE_ERROR', `unknown command ${JSON.stringify(command)}`);
  }
}

function need(rest: readonly string[], n: number, usage: string): void {
  if (rest.length !== n) {
    throw new InputError('USAGE_ERROR', `expected: clarity-cache ${usage}, got ${rest.length} argument(s)`);
  }
}

function splitId(id: string) {
  try {
    return splitContractId(id);
  } catch (err) {
    if (err instanceof ClarityCacheError) throw new InputError('INVALID_CONTRACT_ADDRESS', err.message);
    throw err;
  }
}

function client(args: ParsedArgs, io: CliIo) {
  const { baseUrl, headers } = gatewayTarget(args.url, io.env);
  return Object.assign(createClient({ baseUrl, headers }), { baseUrl });
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

function isKnownContracts(v: unknown): boolean {
  return isObject(v) && isObject(v['contracts']) && Array.isArray(v['contracts']['cached']);
}

/**
 * The answer's data when it is what was asked for. A success envelope of another shape means
 * the URL names something else than the gateway's base (another route answered): said so,
 * rather than printed as if it were the thing asked for.
 */
function expect<T>(data: T, ok: (v: unknown) => boolean, what: string, baseUrl: string): T {
  if (!ok(data)) {
    throw new UnexpectedAnswer(
      `the answer is not ${what}: is ${JSON.stringify(baseUrl)} the gateway's base URL (--url)?`,
    );
  }
  return data;
}

function expectAbi(data: ContractAbi, baseUrl: string): ContractAbi {
  return expect(data, (v) => isObject(v) && Array.isArray(v['functions']), 'a contract ABI', baseUrl);
}

function describeError(err: ClarityCacheError): string {
  const status = err.status === 0 ? '' : ` (HTTP ${err.status})`;
  const details = err.details === undefined ? '' : `\n  details: ${JSON.stringify(err.details)}`;
  const id = err.id === undefined ? '' : `\n  id: ${err.id}`;
  return `clarity-cache: ${err.code}${status}: ${err.message}${details}${id}\n`;
}

/** Print the answer's data (or, with --raw, the whole envelope); an error envelope exits 1. */
function print<T>(
  response: ClientResponse<T>,
  args: ParsedArgs,
  io: CliIo,
  pick: (data: T) => unknown,
): number {
  const env: Envelope<T> = response.envelope;
  // Picked first: an answer that is not what was asked for is refused even with --raw.
  const picked = env.success ? pick(env.data) : undefined;
  if (args.raw) io.stdout(json(env));
  if (!env.success) {
    io.stderr(describeError(envelopeError(response)));
    return 1;
  }
  if (!args.raw) io.stdout(json(picked));
  return 0;
}

/** A read-only call as `call` and `watch` take it: arguments read and checked against the ABI. */
interface PreparedCall {
  readonly gateway: ReturnType<typeof client>;
  readonly contractId: string;
  readonly functionName: string;
  readonly functionArgs: SimpleValue[];
}

/**
 * The call the command line names, or (`exit`) the status after the ABI's error answer was
 * printed. Every literal is read before anything is sent, and checked against the ABI before
 * the call itself.
 */
async function prepareCall(
  command: 'call' | 'watch',
  args: ParsedArgs,
  rest: readonly string[],
  io: CliIo,
): Promise<PreparedCall | { readonly exit: number }> {
  if (rest.length < 2)
    throw new InputError(
      'USAGE_ERROR',
      `expected: clarity-cache ${command} <addr.name> <function> [args...]`,
    );
  const [contractId, functionName, ...texts] = rest as [string, string, ...string[]];
  splitId(contractId);
  // Every literal is read before anything is sent: a typo costs no request.
  const literals: Literal[] = texts.map((text, i) => {
    try {
      return parseClarityLiteral(text);
    } catch (err) {
      if (err instanceof LiteralSyntaxError) {
        throw new InputError('VALIDATION_ERROR', `argument ${i + 1}: ${err.message}`);
      }
      throw err;
    }
  });
  if (args.network !== undefined && args.network !== 'mainnet' && args.network !== 'testnet') {
    throw new InputError(
      'USAGE_ERROR',
      `--network must be mainnet or testnet, got ${JSON.stringify(args.network)}`,
    );
  }
  const gateway = client(args, io);
  // The ABI (cached by the gateway) settles ambiguous literals and catches mistyped ones.
  const abiAnswer = await gateway.raw.abi(contractId);
  if (!abiAnswer.envelope.success) return { exit: print(abiAnswer, args, io, (d) => d) };
  const abi = expectAbi(abiAnswer.envelope.data, gateway.baseUrl);
  return { gateway, contractId, functionName, functionArgs: toArguments(abi, functionName, literals) };
}

/** --sender and --network as the fields of a read-only body. */
function callOptions(args: ParsedArgs): { senderAddress?: string; network?: Network } {
  return {
    ...(args.sender === undefined ? {} : { senderAddress: args.sender }),
    ...(args.network === undefined ? {} : { network: args.network as Network }),
  };
}

async function call(args: ParsedArgs, rest: readonly string[], io: CliIo): Promise<number> {
  const prepared = await prepareCall('call', args, rest, io);
  if ('exit' in prepared) return prepared.exit;
  const { gateway, contractId, functionName, functionArgs } = prepared;
  const response = await gateway.raw.readOnly(contractId, functionName, functionArgs, {
    ...callOptions(args),
    ...(args.fresh ? { cacheControl: { bustCache: true } } : {}),
  });
  return print(response, args, io, (d) => d);
}

/**
 * `watch`: the call's value at the tip, then one line per block that changed it, until Ctrl-C
 * (status 0). The client reconnects by itself; each wait is said on stderr. An error that ends
 * the watch (the subscription deleted, a refusal) exits 1.
 */
async function watch(args: ParsedArgs, rest: readonly string[], io: CliIo): Promise<number> {
  if (args.fresh) {
    throw new InputError('USAGE_ERROR', '--fresh is for call: watch reads each block afresh anyway');
  }
  const prepared = await prepareCall('watch', args, rest, io);
  if ('exit' in prepared) return prepared.exit;
  const { gateway, contractId, functionName, functionArgs } = prepared;
  const { address, name } = splitContractId(contractId);
  const signal = io.interrupts?.();
  let ended: ClarityCacheError | undefined;
  let handle: WatchHandle;
  try {
    handle = await gateway.watch(
      [{ contractAddress: address, contractName: name, functionName, functionArgs, ...callOptions(args) }],
      {
        ...(signal === undefined ? {} : { signal }),
        onValues: (event) => {
          if (args.raw) {
            io.stdout(`${JSON.stringify(event)}\n`);
            return;
          }
          const { tipHeight, indexBlockHash } = event;
          for (const v of event.values) {
            const outcome = 'error' in v ? { error: v.error } : { value: v.value };
            io.stdout(`${JSON.stringify({ tipHeight, indexBlockHash, ...outcome })}\n`);
          }
        },
        onError: (err) => {
          ended = err;
        },
        onReconnect: ({ delayMs, cause }) => {
          io.stderr(
            `clarity-cache: ${cause.code}: ${cause.message}; reconnecting in ${(delayMs / 1000).toFixed(1)} s\n`,
          );
        },
      },
    );
  } catch (err) {
    // Ctrl-C before the subscription was answered: nothing to report.
    if (signal?.aborted) return 0;
    throw err;
  }
  await handle.done;
  if (ended === undefined) return 0;
  io.stderr(describeError(ended));
  return 1;
}

function toArguments(abi: ContractAbi, functionName: string, literals: readonly Literal[]): SimpleValue[] {
  const fn = abi.functions.find((f) => f.name === functionName);
  if (fn === undefined || fn.access !== 'read_only') {
    const readOnly = abi.functions.filter((f) => f.access === 'read_only').map((f) => f.name);
    throw new InputError(
      'INVALID_FUNCTION',
      `${JSON.stringify(functionName)} is not a read-only function of this contract; its read-only functions: ${readOnly.join(', ') || '(none)'}`,
    );
  }
  const signature = fn.args.map((a) => `${a.name}: ${formatAbiType(a.type)}`).join(', ');
  if (literals.length !== fn.args.length) {
    throw new InputError(
      'INVALID_ARGUMENTS',
      `${functionName} takes ${fn.args.length} argument(s) (${signature}), got ${literals.length}`,
    );
  }
  return literals.map((lit, i) => {
    const arg = fn.args[i]!;
    try {
      return literalToValue(lit, arg.type, `argument ${i + 1} (${arg.name}: ${formatAbiType(arg.type)})`);
    } catch (err) {
      if (err instanceof ArgumentTypeError) throw new InputError('INVALID_ARGUMENTS', err.message);
      throw err;
    }
  });
}

async function serve(args: ParsedArgs, rest: readonly string[], io: CliIo): Promise<number> {
  need(rest, 0, 'serve [--port N] [--host H]');
  if (io.serve === undefined) throw new InputError('USAGE_ERROR', 'serve is not available here');
  // The gateway reads its whole configuration from the environment; the flags are shortcuts.
  if (args.port !== undefined) io.env['PORT'] = args.port;
  if (args.host !== undefined) io.env['HOST'] = args.host;
  await io.serve();
  return 0;
}

/**
 * `usage`: the usage rows, as the admin (ADMIN_TOKEN: GET /admin/usage) or as a key holder
 * (CLARITY_CACHE_API_KEY: GET /usage); a table, the data as JSON (--json), the whole envelope
 * (--raw) or the gateway's CSV (--csv). Every option is checked before the request.
 */
async function usage(args: ParsedArgs, io: CliIo): Promise<number> {
  const { baseUrl, headers } = gatewayTarget(args.url, io.env);
  const asked = usageRequest(args, io.env, headers['authorization'] !== undefined);
  const sent = { ...headers, ...asked.headers };
  const notUsage = (what: string) =>
    new UnexpectedAnswer(
      `the answer is not ${what}: is ${JSON.stringify(baseUrl)} the gateway's base URL (--url)?`,
    );
  if (asked.output === 'csv') {
    const answer = await fetchCsv(baseUrl, asked.path, sent);
    if ('unexpected' in answer) throw notUsage(answer.unexpected);
    io.stdout(answer.csv);
    return 0;
  }
  const response = await send<UsageReport>(
    {
      baseUrl,
      fetch: globalThis.fetch.bind(globalThis),
      policy: { retries: 2, baseDelayMs: 250, maxDelayMs: 30_000 },
      headers: sent,
      onRetry: undefined,
      timeoutMs: 60_000,
    },
    'GET',
    asked.path,
  );
  const env = response.envelope;
  // Checked first: an answer that is not usage rows is refused even with --raw.
  if (env.success && !isUsageReport(env.data)) throw notUsage('usage rows');
  if (args.raw) io.stdout(json(env));
  if (!env.success) {
    io.stderr(describeError(envelopeError(response)));
    return 1;
  }
  if (!args.raw) io.stdout(asked.output === 'table' ? usageTable(env.data) : json(env.data));
  return 0;
}
