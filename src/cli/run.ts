/**
 * The command line's commands, apart from process plumbing (main.ts), so that tests can run
 * them in-process: `run(argv, io)` resolves with the exit status.
 *
 * Exit status: 0 success; 1 the gateway answered with an error envelope, or no answer came;
 * 2 the command line itself is wrong (usage, a malformed literal, an argument that does not
 * fit the ABI), detected before the call is sent.
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
} from '../../client/src/index.js';
import { renderConfigHelp } from '../config/docs.js';
import type { Network } from '../network.js';
import { type ParsedArgs, parseArgs, UsageError } from './args.js';
import { HELP } from './help.js';

export interface CliIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly env: Record<string, string | undefined>;
  /** Starts the gateway in this process (`serve`); resolves once it listens. */
  readonly serve?: () => Promise<void>;
}

export const DEFAULT_URL = 'http://localhost:3000';

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

export async function run(argv: readonly string[], io: CliIo): Promise<number> {
  let args: ParsedArgs;
  try {
    args = parseArgs(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    io.stderr(`clarity-cache: USAGE_ERROR: ${err.message} (see clarity-cache --help)\n`);
    return 2;
  }
  const [command, ...rest] = args.positional;
  if (args.help && command === 'serve') {
    // The gateway's whole configuration, from the one declaration of its variables.
    io.stdout(`clarity-cache serve [--port N] [--host H]: start the gateway\n\n${renderConfigHelp()}\n`);
    return 0;
  }
  if (args.help || command === 'help') {
    io.stdout(HELP);
    return 0;
  }
  try {
    switch (command) {
      case 'serve':
        return await serve(args, rest, io);
      case 'call':
        return await call(args, rest, io);
      case 'abi':
        need(rest, 1, 'abi <addr.name>');
        splitId(rest[0]!);
        return print(await client(args, io).raw.abi(rest[0]!), args, io, (d) => d);
      case 'known':
        need(rest, 0, 'known');
        return print(await client(args, io).raw.knownContracts(), args, io, (d) => d);
      case 'decode':
        need(rest, 1, 'decode <hex>');
        return print(await client(args, io).raw.decode(rest[0]!), args, io, (d) => d.decoded);
      case undefined:
        throw new InputError('USAGE_ERROR', 'no command given');
      default:
        throw new InputError('USAGE_ERROR', `unknown command ${JSON.stringify(command)}`);
    }
  } catch (err) {
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
    throw err;
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
  const baseUrl = args.url ?? io.env['CLARITY_CACHE_URL'] ?? DEFAULT_URL;
  if (!/^https?:\/\//.test(baseUrl)) {
    throw new InputError(
      'USAGE_ERROR',
      `--url must be an http:// or https:// URL, got ${JSON.stringify(baseUrl)}`,
    );
  }
  return createClient({ baseUrl });
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
  if (args.raw) io.stdout(json(env));
  if (!env.success) {
    io.stderr(describeError(envelopeError(response)));
    return 1;
  }
  if (!args.raw) io.stdout(json(pick(env.data)));
  return 0;
}

async function call(args: ParsedArgs, rest: readonly string[], io: CliIo): Promise<number> {
  if (rest.length < 2)
    throw new InputError('USAGE_ERROR', 'expected: clarity-cache call <addr.name> <function> [args...]');
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
  if (!abiAnswer.envelope.success) return print(abiAnswer, args, io, (d) => d);
  const functionArgs = toArguments(abiAnswer.envelope.data, functionName, literals);
  const response = await gateway.raw.readOnly(contractId, functionName, functionArgs, {
    ...(args.sender === undefined ? {} : { senderAddress: args.sender }),
    ...(args.network === undefined ? {} : { network: args.network as Network }),
    ...(args.fresh ? { cacheControl: { bustCache: true } } : {}),
  });
  return print(response, args, io, (d) => d);
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
