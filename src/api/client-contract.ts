/**
 * The typed client (client/, the package clarity-cache-client) writes out its request and
 * response types and its error codes so that it needs nothing of the server. Here the server
 * holds it to them: each pair below must match both ways, or `tsc` fails. Types only: nothing
 * of this file exists at run time.
 */
import type { Static } from '@sinclair/typebox';
import type {
  CacheControlOptions,
  ClarityInput,
  ErrorCode as ClientErrorCode,
  ErrorEnvelope as ClientErrorEnvelope,
  DecodeOptions,
  KnownContracts,
  ReadOnlyOptions,
} from '../../client/src/index.js';
import type { ErrorCode } from '../errors.js';
import type { CacheControl, DecodeBody, ErrorEnvelope, KnownContractsData, ReadOnlyBody } from './schemas.js';

/** True when each type is assignable to the other. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

type Checks = [
  Same<ErrorCode, ClientErrorCode>,
  Same<Static<typeof CacheControl>, CacheControlOptions>,
  Same<Omit<Static<typeof ReadOnlyBody>, 'functionArgs'>, ReadOnlyOptions>,
  Same<Static<typeof ReadOnlyBody>['functionArgs'][number], ClarityInput>,
  Same<Omit<Static<typeof DecodeBody>, 'clarityValue'>, DecodeOptions>,
  Same<Static<typeof KnownContractsData>, KnownContracts>,
  Same<Static<typeof ErrorEnvelope>, ClientErrorEnvelope>,
];

/** Fails to compile when any check above is false. */
export type ClientMatchesServer = Checks extends true[] ? true : never;
const matches: ClientMatchesServer = true;
void matches;
