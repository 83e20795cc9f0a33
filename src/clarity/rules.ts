/**
 * Clarity's own consensus limits and name/character rules, in one place so that the hex
 * decoder, the JSON parser, the serializer and the ABI checker cannot drift apart.
 * Sources: stacks-core `clarity/src/vm/types/serialization.rs` and `representations.rs`.
 */

/**
 * Deepest nesting Clarity accepts (MAX_TYPE_DEPTH). The top-level value is at level 1 and
 * every container (optional, response, list, tuple) puts its children one level deeper;
 * stacks-core refuses to read any value, even a leaf, at level 33.
 */
export const MAX_DEPTH = 32;

/** MAX_VALUE_SIZE: the longest buffer/string, and the most list items or tuple fields. */
export const MAX_VALUE_SIZE = 1024 * 1024;

/** Longest Clarity name and contract name (MAX_STRING_LEN). */
export const MAX_NAME_LENGTH = 128;

// Clarity names (tuple keys, function names). The last two alternatives are the names of
// the arithmetic/comparison built-ins, which are legal tuple keys on the wire.
const CLARITY_NAME = /^[a-zA-Z]([a-zA-Z0-9]|[-_!?+<>=/*])*$|^[-+=/*]$|^[<>]=?$/;
// A user-defined function cannot take a built-in operator's name, hence no alternatives.
const FUNCTION_NAME = /^[a-zA-Z]([a-zA-Z0-9]|[-_!?+<>=/*])*$/;
const CONTRACT_NAME = /^[a-zA-Z]([a-zA-Z0-9]|[-_])*$/;

/** A Clarity name as used for tuple keys (1..128 chars). */
export function isValidClarityName(name: string): boolean {
  return name.length <= MAX_NAME_LENGTH && CLARITY_NAME.test(name);
}

/** A name a contract may give one of its functions (1..128 chars). */
export function isValidFunctionName(name: string): boolean {
  return typeof name === 'string' && name.length <= MAX_NAME_LENGTH && FUNCTION_NAME.test(name);
}

/** A contract name (1..128 chars). */
export function isValidContractName(name: string): boolean {
  return typeof name === 'string' && name.length <= MAX_NAME_LENGTH && CONTRACT_NAME.test(name);
}

/**
 * Bytes a Clarity string-ascii may hold: Rust's is_ascii_alphanumeric, is_ascii_punctuation
 * or is_ascii_whitespace, i.e. 0x20..0x7E plus tab, line feed, form feed and carriage return.
 * (Vertical tab 0x0B and the other control characters are refused by the node.)
 */
export function isClarityAsciiCode(code: number): boolean {
  return (code >= 0x20 && code <= 0x7e) || code === 0x09 || code === 0x0a || code === 0x0c || code === 0x0d;
}

/** Index of the first character of `s` that a string-ascii cannot hold, or -1. */
export function firstNonClarityAscii(s: string): number {
  for (let i = 0; i < s.length; i++) {
    if (!isClarityAsciiCode(s.charCodeAt(i))) return i;
  }
  return -1;
}

/** Number of Unicode code points in `s`: how Clarity measures a string-utf8's length. */
export function codePointLength(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    // A high surrogate followed by a low one is a single code point.
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}

/** True when `s` has an unpaired surrogate, which UTF-8 (and so string-utf8) cannot encode. */
export function hasLoneSurrogate(s: string): boolean {
  return /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s);
}
