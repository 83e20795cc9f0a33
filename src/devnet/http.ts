/**
 * HTTP plumbing shared by the devnet's handlers: answers worded as a node words them, body
 * reading with a size cap, and the node's parsers for paths, principals and Clarity values.
 */
import type { IncomingMessage } from 'node:http';
import { type ClarityValue, deserializeCV, serializeCV, validateStacksAddress } from '@stacks/transactions';

/** Bodies above this are refused (a node's limit is larger; nothing legitimate comes close). */
const MAX_BODY_BYTES = 8 * 1024 * 1024;

/** c32 alphabet as in a node's STANDARD_PRINCIPAL_REGEX_STRING. */
export const ADDRESS = '[SM][0123456789ABCDEFGHJKMNPQRSTVWXYZ]{28,41}';
export const CONTRACT_NAME = '[a-zA-Z](?:[a-zA-Z0-9]|[-_]){0,127}';
/** Path segments arrive URL-encoded (a function name may hold ?, /, <, ...). */
export const SEGMENT = '[^/?#]+';
export const CLARITY_NAME = /^(?:[a-zA-Z](?:[a-zA-Z0-9]|[-_!?+<>=/*])*|[-+=/*]|[<>]=?)$/;

/** A response the handler decided on; thrown to leave a handler early. */
export class HttpAnswer {
  constructor(
    readonly status: number,
    readonly body: string,
    readonly contentType: 'text/plain' | 'application/json',
  ) {}
}

export const text = (status: number, body: string) => new HttpAnswer(status, body, 'text/plain');
export const json = (status: number, body: unknown) =>
  new HttpAnswer(status, JSON.stringify(body), 'application/json');

export async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > MAX_BODY_BYTES) {
      throw text(400, `Invalid Http request: invalid body length (over ${MAX_BODY_BYTES} bytes)`);
    }
    chunks.push(buffer);
  }
  return Buffer.concat(chunks);
}

export function isJsonContentType(req: IncomingMessage): boolean {
  const type = req.headers['content-type'];
  return typeof type === 'string' && type.split(';')[0]?.trim().toLowerCase() === 'application/json';
}

/** A standard principal (ST...) or a contract principal (ST....name), as PrincipalData::parse takes. */
export function isPrincipal(value: string): boolean {
  const [address = '', name, ...rest] = value.split('.');
  if (rest.length > 0 || !new RegExp(`^${ADDRESS}$`).test(address) || !validateStacksAddress(address))
    return false;
  return name === undefined || new RegExp(`^${CONTRACT_NAME}$`).test(name);
}

/**
 * One serialized Clarity value, as Value::try_deserialize_hex_untyped takes it (0x optional).
 * Stricter than @stacks/transactions alone: every byte must belong to the value.
 */
export function decodeArgument(hex: string): ClarityValue | undefined {
  const digits = hex.replace(/^0x/i, '');
  if (digits.length === 0 || digits.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(digits)) return undefined;
  try {
    const value = deserializeCV(digits);
    return serializeCV(value).toLowerCase() === digits.toLowerCase() ? value : undefined;
  } catch {
    return undefined;
  }
}

export function decodePathSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}
