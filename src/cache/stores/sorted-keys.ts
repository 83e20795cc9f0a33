/**
 * Keys in ascending order, for stores that answer pages of a listing (CacheStore.listPage)
 * from memory: a page is a binary search and a slice of the ordered array.
 *
 * Adding and removing a key is a Set operation; the order is made again, once, only when a
 * listing asks for it after keys came or went. Keeping the array ordered on every write moved
 * its tail each time: with distinct misses arriving by the thousand a second that was O(n) per
 * miss (8 % of a miss's CPU at 100k keys, measured), while listings are rare admin requests.
 *
 * Order is JavaScript's string order (UTF-16 code units), which is code-point order for
 * every key the gateway writes (ASCII).
 */
export class SortedKeys {
  readonly #members = new Set<string>();
  /** The members in order, or undefined when keys came or went since it was made. */
  #ordered: string[] | undefined = [];

  get size(): number {
    return this.#members.size;
  }

  add(key: string): void {
    if (this.#members.has(key)) return;
    this.#members.add(key);
    this.#ordered = undefined;
  }

  remove(key: string): void {
    if (this.#members.delete(key)) this.#ordered = undefined;
  }

  clear(): void {
    this.#members.clear();
    this.#ordered = [];
  }

  /** The keys in order (the default sort compares UTF-16 code units, as `<` does). */
  get #keys(): string[] {
    if (this.#ordered === undefined) this.#ordered = [...this.#members].sort();
    return this.#ordered;
  }

  /** Keys under prefix strictly after `after`, in order, while `accept` says so, at most limit. */
  page(prefix: string, after: string | undefined, limit: number, accept: (key: string) => boolean): string[] {
    const out: string[] = [];
    let i = this.#lowerBound(after !== undefined && after >= prefix ? after : prefix);
    if (after !== undefined && this.#keys[i] === after) i++;
    for (; i < this.#keys.length && out.length < limit; i++) {
      const key = this.#keys[i]!;
      if (!key.startsWith(prefix)) break;
      if (accept(key)) out.push(key);
    }
    return out;
  }

  /** Keys under prefix that `accept` accepts: a walk of the prefix's range only. */
  countPrefix(prefix: string, accept: (key: string) => boolean): number {
    let n = 0;
    for (let i = this.#lowerBound(prefix); i < this.#keys.length; i++) {
      const key = this.#keys[i]!;
      if (!key.startsWith(prefix)) break;
      if (accept(key)) n++;
    }
    return n;
  }

  /** The first index whose key is >= key. */
  #lowerBound(key: string): number {
    let lo = 0;
    let hi = this.#keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#keys[mid]! < key) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
