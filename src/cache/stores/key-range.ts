/** Key ranges by prefix, shared by the stores that keep keys in order (SQLite, Redis). */

/**
 * The smallest string greater than every string that starts with prefix, in SQLite's BINARY
 * (UTF-8 byte) order, which is code point order: bump the last code point, dropping trailing
 * U+10FFFF. undefined when there is no upper bound (empty prefix, or only U+10FFFF).
 */
export function prefixSuccessor(prefix: string): string | undefined {
  const points = Array.from(prefix, (ch) => ch.codePointAt(0)!);
  while (points.length > 0) {
    const last = points.pop()!;
    if (last < 0x10ffff) {
      // Surrogate code points cannot occur in UTF-8 text: skip to the next scalar value.
      const next = last + 1 >= 0xd800 && last + 1 <= 0xdfff ? 0xe000 : last + 1;
      points.push(next);
      return String.fromCodePoint(...points);
    }
  }
  return undefined;
}
