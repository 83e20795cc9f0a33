/**
 * The Stacks node's own answer shape for POST /v2/contracts/call-read, for the
 * node-compatible endpoint (docs/node-routes.md): `{"okay":true,"result":"0x…"}` or
 * `{"okay":false,"cause":"…"}`, written exactly as the node writes them (serde: these keys in
 * this order, no spaces), so that a client sees the very bytes the node would have sent.
 */
import { isGatewayError } from '../errors.js';

export function nodeResultBody(resultHex: string): string {
  return `{"okay":true,"result":${JSON.stringify(resultHex)}}`;
}

export function nodeRefusalBody(cause: string): string {
  return `{"okay":false,"cause":${JSON.stringify(cause)}}`;
}

/**
 * The node's cause when err is its refusal of the call (okay:false), else undefined. The
 * upstream client raises a refusal as UPSTREAM_API_ERROR unknown-contract (NoSuchContract) or
 * node-refused with the node's cause in details.cause (src/upstream/stacks-node.ts); every
 * other error, of the node or of the gateway, has no cause there.
 */
export function refusalCause(err: unknown): string | undefined {
  if (!isGatewayError(err) || err.code !== 'UPSTREAM_API_ERROR') return undefined;
  if (err.variant !== 'unknown-contract' && err.variant !== 'node-refused') return undefined;
  const cause = err.details?.['cause'];
  return typeof cause === 'string' ? cause : undefined;
}
