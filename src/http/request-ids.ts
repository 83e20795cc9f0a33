/**
 * Request ids: a random per-process prefix and a counter, instead of a UUID per request. Fastify
 * asks for an id on every request, yet a hit at LOG_LEVEL=warn never writes it; a UUID cost a
 * random fill and a 36-character string each time (bench/results/profile.md). The prefix keeps
 * ids from different instances (and restarts) apart in merged logs.
 */
import { randomBytes } from 'node:crypto';

const PREFIX = randomBytes(6).toString('hex');
let counter = 0;

export function nextRequestId(): string {
  counter++;
  return `${PREFIX}-${counter.toString(36)}`;
}
