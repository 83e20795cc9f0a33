/**
 * Stacks addresses and principals.
 *
 * c32check decoding (via @stacks/transactions' createAddress) is lenient: it upper-cases its
 * input and maps O->0 and I/L->1, so several spellings decode to one address. We accept only
 * the canonical spelling (re-encoding must give back the input); otherwise one contract could
 * be cached under many keys and a typo-ed address would look valid.
 */
import {
  addressToString,
  ClarityType,
  type ContractPrincipalCV,
  createAddress,
  type PrincipalCV,
  StacksWireType,
  type StandardPrincipalCV,
} from '@stacks/transactions';
import { GatewayError } from '../errors.js';
import { type Network, networkOfVersion } from '../network.js';
import { isValidContractName } from './rules.js';

export { isValidClarityName, isValidContractName, isValidFunctionName } from './rules.js';

export interface DecodedAddress {
  /** c32 version byte, 0..31 (22 SP, 20 SM, 26 ST, 21 SN). */
  readonly version: number;
  /** 20-byte hash160, lower-case hex without 0x. */
  readonly hash160: string;
}

export interface ContractAddressInfo extends DecodedAddress {
  readonly address: string;
  readonly network: Network;
}

// Longest plausible address: 'S' + version char + c32 of 24 bytes is 41 chars. Anything much
// longer is rejected before spending hashing time on it.
const MAX_ADDRESS_LENGTH = 64;

// Small memo tables: the same few principals recur in almost every cached result, and c32
// encoding costs two SHA-256 rounds. Cleared wholesale when full, which keeps them bounded.
const MEMO_LIMIT = 10_000;
const encodeMemo = new Map<string, string>();
const decodeMemo = new Map<string, DecodedAddress | string>();

export { networkOfVersion };

/** c32check-encode a version byte and hash160 (hex) as a Stacks address. */
export function encodeAddress(version: number, hash160: string): string {
  const key = `${version}:${hash160}`;
  let out = encodeMemo.get(key);
  if (out === undefined) {
    out = addressToString({ type: StacksWireType.Address, version, hash160 });
    if (encodeMemo.size >= MEMO_LIMIT) encodeMemo.clear();
    encodeMemo.set(key, out);
  }
  return out;
}

/**
 * Decode a canonical c32check Stacks address, or explain why it is not one. Returns the
 * reason as a string so callers can choose their own error code.
 */
export function decodeAddress(address: string): DecodedAddress | string {
  if (typeof address !== 'string') return 'not a string';
  // Checked before the memo so that huge strings are neither hashed nor remembered.
  if (address.length < 6 || address.length > MAX_ADDRESS_LENGTH) return 'wrong length for a Stacks address';
  const memo = decodeMemo.get(address);
  if (memo !== undefined) return memo;
  const result = decodeUncached(address);
  if (decodeMemo.size >= MEMO_LIMIT) decodeMemo.clear();
  decodeMemo.set(address, result);
  return result;
}

function decodeUncached(address: string): DecodedAddress | string {
  if (!address.startsWith('S')) return 'a Stacks address must begin with "S"';
  let wire: { version: number; hash160: string };
  try {
    wire = createAddress(address);
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    return /checksum/i.test(reason) ? 'checksum mismatch' : 'not a valid c32check address';
  }
  if (wire.version < 0 || wire.version > 31) return 'not a valid c32check address';
  if (!/^[0-9a-f]{40}$/.test(wire.hash160)) return 'the address does not hold a 20-byte hash';
  if (encodeAddress(wire.version, wire.hash160) !== address) {
    return 'not in canonical c32 form (upper case, no O/I/L substitutes)';
  }
  return { version: wire.version, hash160: wire.hash160 };
}

/** The network of a standard address (SP/SM mainnet, ST/SN testnet), or undefined. */
export function networkOfAddress(address: string): Network | undefined {
  const decoded = decodeAddress(address);
  return typeof decoded === 'string' ? undefined : networkOfVersion(decoded.version);
}

function quote(s: string): string {
  return JSON.stringify(s.length > 80 ? `${s.slice(0, 80)}…` : s);
}

/**
 * Validate a contract's address (the path parameter): a canonical c32check address whose
 * version is a Stacks mainnet or testnet version. Throws INVALID_CONTRACT_ADDRESS.
 */
export function parseContractAddress(address: string): ContractAddressInfo {
  const decoded = decodeAddress(address);
  if (typeof decoded === 'string') {
    throw new GatewayError(
      'INVALID_CONTRACT_ADDRESS',
      `Invalid contract address ${quote(String(address))}: ${decoded}; expected a Stacks address such as SP… (mainnet) or ST… (testnet)`,
      { address, contractAddress: address },
    );
  }
  const network = networkOfVersion(decoded.version);
  if (network === undefined) {
    throw new GatewayError(
      'INVALID_CONTRACT_ADDRESS',
      `Invalid contract address ${quote(address)}: version ${decoded.version} is not a mainnet (SP/SM) or testnet (ST/SN) address version`,
      { address, contractAddress: address },
    );
  }
  return { address, network, version: decoded.version, hash160: decoded.hash160 };
}

/**
 * Why `s` is not a principal (`ADDRESS` or `ADDRESS.contract-name`), or undefined if it is.
 * Any version byte 0..31 is a valid principal on either network, as in Clarity itself.
 */
export function principalProblem(s: unknown): string | undefined {
  if (typeof s !== 'string') return 'expected a principal string';
  const dot = s.indexOf('.');
  const address = dot < 0 ? s : s.slice(0, dot);
  const decoded = decodeAddress(address);
  if (typeof decoded === 'string') return `${quote(address)} is not a valid Stacks address: ${decoded}`;
  if (dot >= 0) {
    const name = s.slice(dot + 1);
    if (!isValidContractName(name)) return `${quote(name)} is not a valid contract name`;
  }
  return undefined;
}

/** Parse a standard or contract principal; VALIDATION_ERROR when malformed. */
export function parsePrincipal(s: string, path = 'principal'): PrincipalCV {
  const problem = principalProblem(s);
  if (problem !== undefined) {
    throw new GatewayError('VALIDATION_ERROR', `${path}: ${problem}`, { path, error: problem });
  }
  return s.includes('.')
    ? ({ type: ClarityType.PrincipalContract, value: s } as ContractPrincipalCV)
    : ({ type: ClarityType.PrincipalStandard, value: s } as StandardPrincipalCV);
}
