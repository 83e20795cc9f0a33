/**
 * Keys in ascending order, kept as they are added and removed, for stores that answer pages
 * of a listing (CacheStore.listPage) from memory: a page is a binary search and a slice,
 * never a sort of everything. Insertion and removal move the array's tail (a memmove of
 * pointers), which stays in microseconds for the memory store's bounded size.
 *
 * Order is JavaScript's string order (UTF-16 code units), which is code-point order for
 * every key the gateway writes (ASCII).
 */
export class SortedKeys {
  readonly #keys: string[] = [];

  get size(): number {
    return this.#keys.length;
  }

  add(key: string): void {
    const i = this.#lowerBound(key);
    if (this.#keys[i] !== key) this.#keys.splice(i, 0, key);
  }

  remove(key: string): void {
    const i = this.#lowerBound(key);
    if (this.#keys[i] === key) this.#keys.splice(i, 1);
  }

  clear(): void {
    this.#keys.length = 0;
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
