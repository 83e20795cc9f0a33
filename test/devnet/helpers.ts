/** Small HTTP helpers for the devnet tests: real fetch calls, no mocks. */
import { type ClarityValue, cvToHex, deserializeCV } from '@stacks/transactions';

export interface HttpResult {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON shapes
  readonly json: any;
}

export async function http(
  url: string,
  init: { method?: string; body?: unknown; rawBody?: string; contentType?: string | null } = {},
): Promise<HttpResult> {
  const hasBody = init.body !== undefined || init.rawBody !== undefined;
  const headers: Record<string, string> = {};
  const contentType = init.contentType === undefined ? 'application/json' : init.contentType;
  if (hasBody && contentType !== null) headers['content-type'] = contentType;
  const res = await fetch(url, {
    method: init.method ?? (hasBody ? 'POST' : 'GET'),
    headers,
    ...(hasBody ? { body: init.rawBody ?? JSON.stringify(init.body) } : {}),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

export function callReadUrl(base: string, contractId: string, fn: string, tip?: string): string {
  const [address, name] = contractId.split('.');
  const query = tip === undefined ? '' : `?tip=${tip}`;
  return `${base}/v2/contracts/call-read/${address}/${name}/${encodeURIComponent(fn)}${query}`;
}

/** POST /v2/contracts/call-read with the arguments serialized as a client would. */
export function callRead(
  base: string,
  contractId: string,
  fn: string,
  args: ClarityValue[],
  sender: string,
  tip?: string,
): Promise<HttpResult> {
  return http(callReadUrl(base, contractId, fn, tip), {
    body: { sender, arguments: args.map((a) => cvToHex(a)) },
  });
}

/** The decoded result of a successful call-read; fails the test on okay:false. */
export async function readValue(
  base: string,
  contractId: string,
  fn: string,
  args: ClarityValue[],
  sender: string,
  tip?: string,
): Promise<ClarityValue> {
  const res = await callRead(base, contractId, fn, args, sender, tip);
  if (res.status !== 200 || res.json?.okay !== true) {
    throw new Error(`${contractId}::${fn} answered ${res.status} ${res.text}`);
  }
  return deserializeCV(res.json.result);
}

export function callPublic(
  base: string,
  body: { sender: string; contract: string; function: string; arguments: ClarityValue[] },
): Promise<HttpResult> {
  return http(`${base}/devnet/call-public`, {
    body: { ...body, arguments: body.arguments.map((a) => cvToHex(a)) },
  });
}

export function mine(base: string, blocks?: number): Promise<HttpResult> {
  return http(`${base}/devnet/mine`, { body: blocks === undefined ? {} : { blocks } });
}
