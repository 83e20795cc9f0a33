/**
 * A reader of Clarity source into s-expressions (sexpr.ts): lists, `{a: 1, b: 2}` tuples,
 * `;;` comments, strings with escapes, `u"..."` strings, `0x..` buffers, ints and uints,
 * principals (`'SP...`, `'SP....name`, `.name`) and atoms. Written here because no Clarity
 * parser package with a usable licence exists; see docs/events.md.
 */
import { ClaritySyntaxError, type SExpr, type TupleEntry } from './sexpr.js';

const DELIMITERS = new Set(['(', ')', '{', '}', ',', ':', ';', '"', ' ', '\t', '\n', '\r']);

/** Reads every top-level expression of a contract's source. Throws ClaritySyntaxError. */
export function readClarity(source: string): SExpr[] {
  const reader = new Reader(source);
  const out: SExpr[] = [];
  for (;;) {
    reader.skipSpace();
    if (reader.atEnd()) return out;
    out.push(reader.expr());
  }
}

class Reader {
  #pos = 0;
  constructor(private readonly src: string) {}

  atEnd(): boolean {
    return this.#pos >= this.src.length;
  }

  #fail(message: string, at = this.#pos): never {
    throw new ClaritySyntaxError(message, at);
  }

  skipSpace(): void {
    const s = this.src;
    while (this.#pos < s.length) {
      const c = s[this.#pos]!;
      if (c === ' ' || c === '\t' || c === '\n' || c === '\r') this.#pos++;
      else if (c === ';') {
        while (this.#pos < s.length && s[this.#pos] !== '\n') this.#pos++;
      } else return;
    }
  }

  expr(): SExpr {
    this.skipSpace();
    const s = this.src;
    const start = this.#pos;
    const c = s[start];
    if (c === undefined) this.#fail('unexpected end of source');
    if (c === '(') return this.#list();
    if (c === '{') return this.#tuple();
    if (c === ')' || c === '}' || c === ',' || c === ':') this.#fail(`unexpected '${c}'`);
    if (c === '"') return this.#string(false);
    if (c === 'u' && s[start + 1] === '"') {
      this.#pos++;
      return this.#string(true);
    }
    if (c === "'") {
      this.#pos++;
      const token = this.#token();
      if (token === '') this.#fail("a principal after '", start);
      const dot = token.indexOf('.');
      if (dot === 0) this.#fail('a principal address', start);
      return dot < 0
        ? { kind: 'principal', address: token, contract: undefined }
        : this.#contractPrincipal(token.slice(0, dot), token.slice(dot + 1), start);
    }
    const token = this.#token();
    if (token === '') this.#fail(`unexpected '${c}'`);
    if (token.startsWith('.')) return this.#contractPrincipal(undefined, token.slice(1), start);
    if (/^0x[0-9a-fA-F]*$/.test(token)) {
      if (token.length % 2 !== 0) this.#fail('a buffer of whole bytes', start);
      return { kind: 'buffer', hex: token.slice(2).toLowerCase() };
    }
    if (/^u[0-9]+$/.test(token)) return { kind: 'uint', value: BigInt(token.slice(1)) };
    if (/^-?[0-9]+$/.test(token)) return { kind: 'int', value: BigInt(token) };
    if (/^[0-9]/.test(token)) this.#fail(`malformed number '${token}'`, start);
    return { kind: 'atom', name: token };
  }

  #contractPrincipal(address: string | undefined, rest: string, at: number): SExpr {
    const [name, trait, extra] = rest.split('.');
    if (extra !== undefined) this.#fail(`malformed principal '${rest}'`, at);
    for (const part of trait === undefined ? [name] : [name, trait]) {
      if (!/^[a-zA-Z]([a-zA-Z0-9]|[-_])*$/.test(part!)) this.#fail(`malformed contract name '${part}'`, at);
    }
    return trait === undefined
      ? { kind: 'principal', address, contract: name }
      : { kind: 'principal', address, contract: name, trait };
  }

  #token(): string {
    const s = this.src;
    const start = this.#pos;
    while (this.#pos < s.length && !DELIMITERS.has(s[this.#pos]!)) this.#pos++;
    return s.slice(start, this.#pos);
  }

  #list(): SExpr {
    const open = this.#pos++;
    const items: SExpr[] = [];
    for (;;) {
      this.skipSpace();
      const c = this.src[this.#pos];
      if (c === undefined) this.#fail("unclosed '('", open);
      if (c === ')') {
        this.#pos++;
        return { kind: 'list', items };
      }
      items.push(this.expr());
    }
  }

  #tuple(): SExpr {
    const open = this.#pos++;
    const entries: TupleEntry[] = [];
    for (;;) {
      this.skipSpace();
      const c = this.src[this.#pos];
      if (c === undefined) this.#fail("unclosed '{'", open);
      if (c === '}') {
        this.#pos++;
        return { kind: 'tuple', entries };
      }
      if (entries.length > 0) {
        if (c !== ',') this.#fail("',' between tuple entries");
        this.#pos++;
        this.skipSpace();
        // A trailing comma before the closing brace.
        if (this.src[this.#pos] === '}') continue;
      }
      const keyAt = this.#pos;
      const key = this.#token();
      if (key === '') this.#fail('a tuple key', keyAt);
      this.skipSpace();
      if (this.src[this.#pos] !== ':') this.#fail("':' after a tuple key");
      this.#pos++;
      entries.push({ key, value: this.expr() });
    }
  }

  #string(utf8: boolean): SExpr {
    const s = this.src;
    const open = this.#pos++;
    let value = '';
    for (;;) {
      const c = s[this.#pos];
      if (c === undefined) this.#fail('unclosed string', open);
      this.#pos++;
      if (c === '"') return { kind: 'string', value, utf8 };
      if (c !== '\\') {
        value += c;
        continue;
      }
      const e = s[this.#pos++];
      switch (e) {
        case '"':
        case '\\':
          value += e;
          break;
        case 'n':
          value += '\n';
          break;
        case 't':
          value += '\t';
          break;
        case 'r':
          value += '\r';
          break;
        case '0':
          value += '\0';
          break;
        case 'u': {
          // \u{1F600}: utf8 strings' code points.
          const m = /^\{([0-9a-fA-F]{1,6})\}/.exec(s.slice(this.#pos));
          if (m === null) this.#fail('malformed \\u{...} escape', this.#pos - 2);
          const cp = Number.parseInt(m[1]!, 16);
          if (cp > 0x10ffff) this.#fail('code point out of range', this.#pos - 2);
          value += String.fromCodePoint(cp);
          this.#pos += m[0].length;
          break;
        }
        default:
          this.#fail(`unknown escape '\\${e ?? ''}'`, this.#pos - 2);
      }
    }
  }
}
