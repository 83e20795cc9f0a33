/**
 * Rendered answers of cache hits, memoized per stored entry and per rendering variant (the
 * envelope under each set of decoding options, or the node's own shape). A hit from the hot
 * tier returns the same entry object every time, so its decoded, rendered and serialized
 * answer is computed once; the memo lives exactly as long as the entry does (a WeakMap), so
 * eviction and invalidation need no bookkeeping here.
 */

import { okJson } from '../api/envelope.js';
import type { CacheEntry } from '../cache/entry.js';
import { isGatewayError } from '../errors.js';

/** The envelope text of a success, or the error (CONTRACT_ERROR) rendering raised. */
type Rendered = { readonly body: string } | { readonly error: unknown };

export class RenderedBodies {
  readonly #byEntry = new WeakMap<CacheEntry, Map<number, Rendered>>();

  /**
   * The answer text for entry under `variant`, made by `render` the first time. A
   * deterministic rendering error (CONTRACT_ERROR) is memoized and rethrown.
   */
  body(entry: CacheEntry, variant: number, render: () => string): string {
    let variants = this.#byEntry.get(entry);
    if (variants === undefined) {
      variants = new Map();
      this.#byEntry.set(entry, variants);
    }
    let rendered = variants.get(variant);
    if (rendered === undefined) {
      try {
        rendered = { body: render() };
      } catch (error) {
        if (!isGatewayError(error)) throw error;
        rendered = { error };
      }
      variants.set(variant, rendered);
    }
    if ('error' in rendered) throw rendered.error;
    return rendered.body;
  }
}

export function successBody(data: unknown): string {
  return okJson(JSON.stringify(data));
}
