/**
 * The node RPC routes a client such as stacks.js uses besides call-read and the contract
 * interface (/v2/contracts/interface):
 * contract sources, data vars, map entries, constants, accounts, PoX and tenure info, fee
 * estimates and transaction broadcast (broadcast.ts). Paths, statuses and JSON shapes are a
 * stacks-node's; values come from the Clarity VM of the devnet chain.
 *
 *   GET  /v2/contracts/source/{address}/{contract}[?proof=]  → {source, publish_height, proof?}
 *   GET  /v2/data_var/{address}/{contract}/{var}[?proof=]     → {data, proof?}
 *   POST /v2/map_entry/{address}/{contract}/{map}[?proof=]    "0x<key>" → {data, proof?}
 *   GET  /v2/constant_val/{address}/{contract}/{name}         → {data}
 *   GET  /v2/traits/{address}/{contract}/{trait address}/{trait contract}/{trait} → {is_implemented}
 *   GET  /v2/accounts/{principal}[?proof=]                    → {balance, locked, unlock_height, nonce, ...}
 *   GET  /v2/pox, GET /v3/tenures/info, GET /v2/fees/transfer, POST /v2/fees/transaction
 *   POST /v2/transactions                                     → "<txid>"
 *
 * A node answers these at its tip or at `?tip=`; the devnet answers at its tip only, and says
 * so with a 400 for a `?tip=` naming an earlier block. It has no MARF: where a node adds a
 * proof (unless `?proof=0`), the devnet's proof is the empty string.
 */
import type { IncomingMessage } from 'node:http';
import { deserializePayload } from '@stacks/transactions';
import { DEVNET_ACCOUNTS, INITIAL_USTX_BALANCE } from './accounts.js';
import { broadcast } from './broadcast.js';
import type { DevnetChain } from './chain.js';
import {
  ADDRESS,
  CLARITY_NAME,
  CONTRACT_NAME,
  decodeArgument,
  decodePathSegment,
  type HttpAnswer,
  isPrincipal,
  json,
  readBody,
  SEGMENT,
  text,
} from './http.js';
import { poxInfo, tenureInfo } from './node-info.js';

const CONTRACT = `(${ADDRESS})/(${CONTRACT_NAME})`;
const SOURCE_PATH = new RegExp(`^/v2/contracts/source/${CONTRACT}$`);
const DATA_VAR_PATH = new RegExp(`^/v2/data_var/${CONTRACT}/(${SEGMENT})$`);
const MAP_ENTRY_PATH = new RegExp(`^/v2/map_entry/${CONTRACT}/(${SEGMENT})$`);
const CONSTANT_PATH = new RegExp(`^/v2/constant_val/${CONTRACT}/(${SEGMENT})$`);
const ACCOUNT_PATH = new RegExp(`^/v2/accounts/(${SEGMENT})$`);
const TRAIT_PATH = new RegExp(`^/v2/traits/${CONTRACT}/(${ADDRESS})/(${CONTRACT_NAME})/(${SEGMENT})$`);

/** The devnet's fee rates (uSTX per byte) for a low, middle and high estimate. */
const FEE_RATES = [1, 2, 3] as const;
/** What a node's estimator calls a transaction's cost it cannot measure: nothing. */
const ZERO_COST = { write_length: 0, write_count: 0, read_length: 0, read_count: 0, runtime: 0 };

/** The answer to a node route, or undefined when `path` is none of them. */
export async function nodeRoute(
  chain: DevnetChain,
  method: string,
  path: string,
  query: URLSearchParams,
  req: IncomingMessage,
  log: (line: string) => void,
): Promise<HttpAnswer | undefined> {
  if (method === 'POST' && path === '/v2/transactions') return broadcast(chain, req, log);
  if (method === 'GET' && path === '/v2/fees/transfer') return json(200, FEE_RATES[0]);
  if (method === 'POST' && path === '/v2/fees/transaction') return feeEstimate(req);
  if (method === 'GET' && path === '/v2/pox') return json(200, poxInfo(chain, totalLiquidUstx()));
  if (method === 'GET' && path === '/v3/tenures/info') return json(200, tenureInfo(chain));

  const source = SOURCE_PATH.exec(path);
  if (method === 'GET' && source) {
    atTip(chain, query);
    const found = chain.contractSource(`${source[1]}.${source[2]}`);
    if (!found) return text(404, 'No contract source data found');
    return json(200, { source: found.source, publish_height: found.publishHeight, ...proof(query) });
  }
  const dataVar = DATA_VAR_PATH.exec(path);
  if (method === 'GET' && dataVar) {
    atTip(chain, query);
    const data = chain.dataVar(`${dataVar[1]}.${dataVar[2]}`, clarityName(dataVar[3]!));
    if (data === undefined) return text(404, 'Data var not found');
    return json(200, { data, ...proof(query) });
  }
  const mapEntry = MAP_ENTRY_PATH.exec(path);
  if (method === 'POST' && mapEntry) {
    const map = clarityName(mapEntry[3]!);
    const key = await mapKey(req);
    atTip(chain, query);
    const data = chain.mapEntry(`${mapEntry[1]}.${mapEntry[2]}`, map, key);
    if (data === undefined) return text(404, 'Data map entry not found');
    return json(200, { data, ...proof(query) });
  }
  const constant = CONSTANT_PATH.exec(path);
  if (method === 'GET' && constant) {
    atTip(chain, query);
    const data = await chain.constantValue(`${constant[1]}.${constant[2]}`, clarityName(constant[3]!));
    if (data === undefined) return text(404, 'Constant not found');
    return json(200, { data });
  }
  const trait = TRAIT_PATH.exec(path);
  if (method === 'GET' && trait) {
    atTip(chain, query);
    const contract = chain.contractSource(`${trait[1]}.${trait[2]}`);
    const definer = chain.contractSource(`${trait[3]}.${trait[4]}`);
    const name = clarityName(trait[5]!);
    if (!contract || !definer) return text(404, 'No contract analysis found or trait definition not found');
    if (!new RegExp(`\\(define-trait\\s+${literal(name)}\\b`).test(definer.source))
      return text(404, 'No contract analysis found or trait definition not found');
    // What the contract declares with impl-trait: the trait by its full or its deployer-relative name.
    const full = `'${trait[3]}.${trait[4]}.${name}`;
    const relative = trait[1] === trait[3] ? `.${trait[4]}.${name}` : undefined;
    const declared = [...contract.source.matchAll(/\(impl-trait\s+([^\s)]+)\s*\)/g)].map((m) => m[1]);
    return json(200, { is_implemented: declared.some((d) => d === full || d === relative) });
  }
  const account = ACCOUNT_PATH.exec(path);
  if (method === 'GET' && account) {
    const principal = decodePathSegment(account[1]!);
    if (principal === undefined || !isPrincipal(principal)) throw text(400, 'Failed to parse principal');
    atTip(chain, query);
    return json(200, {
      balance: u128Hex(chain.stxBalance(principal)),
      // Nothing is ever locked: the devnet has no stacking.
      locked: u128Hex(0n),
      unlock_height: 0,
      nonce: chain.nonceOf(principal),
      ...(withProof(query) ? { balance_proof: '', nonce_proof: '' } : {}),
    });
  }
  return undefined;
}

/** A node includes a MARF proof unless asked `?proof=0`. */
function withProof(query: URLSearchParams): boolean {
  return query.get('proof') !== '0';
}

function proof(query: URLSearchParams): { proof?: string } {
  return withProof(query) ? { proof: '' } : {};
}

/** Refuses a `?tip=` naming a block below the tip: these reads only know the tip's state. */
function atTip(chain: DevnetChain, query: URLSearchParams): void {
  const tip = query.get('tip');
  if (tip === null || !/^(?:0x)?[0-9a-fA-F]{64}$/.test(tip)) return;
  const height = chain.heightOf(tip);
  if (height === undefined) throw text(404, 'Chain tip not found');
  if (height !== chain.tipHeight)
    throw text(400, 'devnet limitation: this route answers at the chain tip only');
}

function clarityName(segment: string): string {
  const name = decodePathSegment(segment);
  if (name === undefined || name.length > 128 || !CLARITY_NAME.test(name)) {
    throw text(400, 'Failed to parse Clarity name');
  }
  return name;
}

/** The body of POST /v2/map_entry: a JSON string holding the serialized key. */
async function mapKey(req: IncomingMessage) {
  const body = await readBody(req);
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    throw text(400, 'Failed to parse JSON body');
  }
  if (typeof parsed !== 'string') throw text(400, 'Failed to parse JSON body: expected a string');
  const key = decodeArgument(parsed);
  if (!key) throw text(400, 'Failed to deserialize map key');
  return key;
}

/**
 * POST /v2/fees/transaction {transaction_payload, estimated_len?}: three estimates at the
 * devnet's fixed rates, each the rate times the transaction's length (the payload's when no
 * length is given). Costs are not measured.
 */
async function feeEstimate(req: IncomingMessage): Promise<HttpAnswer> {
  const body = await readBody(req);
  let parsed: { transaction_payload?: unknown; estimated_len?: unknown };
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    throw text(400, 'Failed to parse JSON body');
  }
  const payload = parsed?.transaction_payload;
  if (typeof payload !== 'string' || !/^(?:0x)?(?:[0-9a-fA-F]{2})+$/.test(payload)) {
    throw text(400, 'Failed to parse JSON body: transaction_payload must be hex');
  }
  try {
    deserializePayload(payload.replace(/^0x/i, ''));
  } catch {
    throw text(400, 'Failed to deserialize transaction payload');
  }
  const payloadLength = payload.replace(/^0x/i, '').length / 2;
  const given = parsed.estimated_len;
  const length =
    typeof given === 'number' && Number.isInteger(given) && given > payloadLength ? given : payloadLength;
  return json(200, {
    estimated_cost: ZERO_COST,
    estimated_cost_scalar: 0,
    estimations: FEE_RATES.map((rate) => ({ fee_rate: rate, fee: rate * length })),
    cost_scalar_change_by_byte: 0.00476837158203125,
  });
}

/** Every devnet account's start-up balance: no fees are burnt, so the total stays so. */
function totalLiquidUstx(): bigint {
  return INITIAL_USTX_BALANCE * BigInt(Object.keys(DEVNET_ACCOUNTS).length);
}

/** A u128 as a node's /v2/accounts writes it: 0x and 32 hex digits. */
function u128Hex(value: bigint): string {
  return `0x${value.toString(16).padStart(32, '0')}`;
}

/** A Clarity name as a literal inside a regular expression. */
function literal(name: string): string {
  return name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
