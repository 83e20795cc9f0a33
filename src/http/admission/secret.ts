/**
 * The one comparison of a presented secret with a held one, for API keys and the admin token
 * alike (docs/access-control.md). Secrets are compared as SHA-256 digests with timingSafeEqual:
 * digests have one length whatever was presented, so the time a check takes tells neither how
 * long the secret is nor how much of it was right; and a held secret can be kept as its digest
 * alone.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

/** The digest a secret is held and compared as. */
export function secretDigest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/** Whether a presented secret's digest is the held one, in constant time. */
export function sameSecret(presented: Buffer, held: Buffer): boolean {
  // Both are SHA-256 digests; the length check only keeps timingSafeEqual from throwing.
  return presented.length === held.length && timingSafeEqual(presented, held);
}
