/**
 * The parts of the Stacks node's event payloads the observer uses (as stacks-core's event
 * dispatcher documentation describes them); anything else in them is allowed and ignored.
 */
import { Type } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';

const Hash = Type.String({ pattern: '^(0x)?[0-9a-fA-F]{64}$' });
const Height = Type.Integer({ minimum: 0 });

const NewBlockPayload = Type.Object({
  block_height: Height,
  index_block_hash: Hash,
  parent_index_block_hash: Hash,
  // status: the node's outcome of the transaction (success, abort_by_response, ...); older
  // payloads may lack it, and anything it holds is taken as it comes (transactions.ts).
  transactions: Type.Array(Type.Object({ raw_tx: Type.String(), status: Type.Optional(Type.Unknown()) })),
  events: Type.Array(Type.Unknown()),
});

const NewBurnBlockPayload = Type.Object({
  burn_block_height: Height,
  burn_block_hash: Hash,
});

export const newBlockCheck = TypeCompiler.Compile(NewBlockPayload);
export const newBurnBlockCheck = TypeCompiler.Compile(NewBurnBlockPayload);

/** A hash as the gateway keeps it: 64 lowercase hex digits, no 0x. */
export function normalizeHash(hash: string): string {
  return (hash.startsWith('0x') ? hash.slice(2) : hash).toLowerCase();
}

/** Why a payload failed its schema, in one line for the log. */
export function firstError(check: typeof newBlockCheck | typeof newBurnBlockCheck, value: unknown): string {
  const error = check.Errors(value).First();
  return error === undefined ? 'invalid' : `${error.path || '/'}: ${error.message}`;
}
