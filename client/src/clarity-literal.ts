/**
 * A parser of Clarity literal syntax, as people type values on a command line or in a form:
 * `u100`, `-5`, `true`, `'SP….name` (or a bare `SP…`), `"text"`, `u"text"`, `0x0102`, `none`,
 * `(some u1)`, `(ok u1)`, `(err u1)`, `(list u1 u2)`, `{a: u1, b: "x"}`, `(tuple (a u1))`.
 *
 * Why our own and not stacks.js `Cl.parse`: that one reads integers through parseInt (u2^100
 * loses digits), throws a bare "Parse error" without saying where, and builds typed values
 * at once, leaving no room for the ABI to settle what a literal means (`5` where a uint is
 * expected, `"é"` where a string-utf8 is expected). This one is a recursive-descent parser
 * over the text that keeps each literal's position, and errors name the position.
 */

export type Literal =
  | { readonly kind: 'int'; readonly pos: number; readonly digits: string }
  | { readonly kind: 'uint'; readonly pos: number; readonly digits: string }
  | { readonly kind: 'bool'; readonly pos: number; readonly value: boolean }
  | { readonly kind: 'principal'; readonly pos: number; readonly value: string }
  | { readonly kind: 'ascii' | 'utf8'; readonly pos: number; readonly value: string }
  | { readonly kind: 'buffer'; readonly pos: number; readonly hex: string }
  | { readonly kind: 'none'; readonly pos: number }
  | { readonly kind: 'some' | 'ok' | 'err'; readonly pos: number; readonly inner: Literal }
  | { readonly kind: 'list'; readonly pos: number; readonly items: readonly Literal[] }
  | {
      readonly kind: 'tuple';
      readonly pos: number;
      readonly fields: ReadonlyArray<{ readonly name: string; readonly value: Literal }>;
    };

/** A literal that cannot be read; `position` is 0-based, `column` 1-based. */
export class LiteralSyntaxError extends Error {
  readonly position: number;
  readonly column: number;
  readonly input: string;

  constructor(input: string, position: number, problem: string) {
    super(`${problem} at position ${position + 1} of ${JSON.stringify(clip(input))}`);
    this.name = 'LiteralSyntaxError';
    this.input = input;
    this.position = position;
    this.column = position + 1;
  }
}

function clip(s: string): string {
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

/** The bounds of Clarity's 128-bit integers. */
export const UINT_MAX = 2n ** 128n - 1n;
export const INT_MAX = 2n ** 127n - 1n;
export const INT_MIN = -(2n ** 127n);

/** Deepest nesting accepted: Clarity's own limit, so no input can exhaust the stack. */
const MAX_DEPTH = 32;
const NAME = /[a-zA-Z][a-zA-Z0-9_!?+<>=/*-]*/y;
const ADDRESS = /[0-9A-Z]{20,60}/y;
const CONTRACT_NAME = /[a-zA-Z][a-zA-Z0-9_-]{0,127}/y;

class Parser {
  pos = 0;
  constructor(readonly text: string) {}

  fail(problem: string, at = this.pos): never {
    throw new LiteralSyntaxError(this.text, at, problem);
  }

  skipSpace(): void {
    while (this.pos < this.text.length && /\s/.test(this.text[this.pos]!)) this.pos++;
  }

  peek(s: string): boolean {
    return this.text.startsWith(s, this.pos);
  }

  expect(s: string): void {
    if (!this.peek(s)) this.fail(this.found(`expected "${s}"`));
    this.pos += s.length;
  }

  found(what: string): string {
    if (this.pos >= this.text.length) return `${what}, found the end of the input`;
    return `${what}, found ${JSON.stringify(this.text[this.pos])}`;
  }

  match(re: RegExp): string | undefined {
    re.lastIndex = this.pos;
    const m = re.exec(this.text);
    if (m === null) return undefined;
    this.pos += m[0].length;
    return m[0];
  }

  /** A word ends at a space, a bracket, a comma or the end: `u12x` is not u12 followed by x. */
  endOfWord(start: number): void {
    const c = this.text[this.pos];
    if (c !== undefined && !/[\s(){},]/.test(c))
      this.fail(`unexpected ${JSON.stringify(c)} in a literal`, start);
  }

  value(depth: number): Literal {
    if (depth > MAX_DEPTH) this.fail(`nested deeper than ${MAX_DEPTH} levels`);
    this.skipSpace();
    const start = this.pos;
    const c = this.text[this.pos];
    if (c === undefined) this.fail('expected a value, found the end of the input');
    if (c === ')' || c === '}' || c === ',') this.fail(this.found('expected a value'));
    if (c === '(') return this.form(depth);
    if (c === '{') return this.tuple(depth);
    if (c === '"') return { kind: 'ascii', pos: start, value: this.string(false) };
    if (this.peek('u"')) {
      this.pos++;
      return { kind: 'utf8', pos: start, value: this.string(true) };
    }
    if (this.peek('0x')) {
      this.pos += 2;
      const hex = this.match(/[0-9a-fA-F]*/y) ?? '';
      this.endOfWord(start);
      if (hex.length % 2 !== 0) this.fail('a buffer needs an even number of hex digits', start);
      return { kind: 'buffer', pos: start, hex: hex.toLowerCase() };
    }
    if (c === "'") {
      this.pos++;
      return { kind: 'principal', pos: start, value: this.principal() };
    }
    if (/[A-Z]/.test(c)) return { kind: 'principal', pos: start, value: this.principal() };
    if (c === 'u' && /[0-9]/.test(this.text[this.pos + 1] ?? '')) {
      this.pos++;
      const digits = this.match(/[0-9]+/y)!;
      this.endOfWord(start);
      // The `u` makes it a uint whatever the ABI says: out of range is known now.
      if (BigInt(digits) > UINT_MAX)
        this.fail(`u${clip(digits)} is larger than the largest uint, u${UINT_MAX}`, start);
      return { kind: 'uint', pos: start, digits };
    }
    if (/[-0-9]/.test(c)) {
      const digits = this.match(/-?[0-9]+/y);
      if (digits === undefined) this.fail('expected digits after "-"', start);
      this.endOfWord(start);
      // A minus sign makes it an int whatever the ABI says: out of range is known now.
      if (BigInt(digits) < INT_MIN)
        this.fail(`${clip(digits)} is smaller than the smallest int, ${INT_MIN}`, start);
      return { kind: 'int', pos: start, digits };
    }
    const word = this.match(NAME);
    if (word !== undefined) {
      this.endOfWord(start);
      if (word === 'true' || word === 'false') return { kind: 'bool', pos: start, value: word === 'true' };
      if (word === 'none') return { kind: 'none', pos: start };
      this.fail(`unknown word ${JSON.stringify(word)}`, start);
    }
    return this.fail(`unexpected ${JSON.stringify(c)}`);
  }

  principal(): string {
    const at = this.pos;
    const address = this.match(ADDRESS);
    if (address === undefined)
      this.fail('expected a principal (an address such as SP…, optionally .name)', at);
    let value = address;
    if (this.peek('.')) {
      this.pos++;
      const name = this.match(CONTRACT_NAME);
      if (name === undefined) this.fail(this.found('expected a contract name after "."'));
      value += `.${name}`;
    }
    this.endOfWord(at);
    return value;
  }

  /** A double-quoted string with Clarity's escapes (\" \\ \n \t \r \0, and \u{…} in utf8). */
  string(utf8: boolean): string {
    const open = this.pos;
    this.expect('"');
    let out = '';
    for (;;) {
      const c = this.text[this.pos];
      if (c === undefined) this.fail('unterminated string', open);
      this.pos++;
      if (c === '"') break;
      if (c !== '\\') {
        out += c;
        continue;
      }
      const e = this.text[this.pos];
      const escapes: Record<string, string> = { '"': '"', '\\': '\\', n: '\n', t: '\t', r: '\r', '0': '\0' };
      if (e !== undefined && Object.hasOwn(escapes, e)) {
        out += escapes[e];
        this.pos++;
      } else if (e === 'u' && utf8 && this.text[this.pos + 1] === '{') {
        const at = this.pos - 1;
        this.pos += 2;
        const hex = this.match(/[0-9a-fA-F]{1,6}/y);
        if (hex === undefined || !this.peek('}')) this.fail('expected \\u{hex digits}', at);
        this.pos++;
        const code = Number.parseInt(hex, 16);
        if (code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff))
          this.fail('not a Unicode scalar value', at);
        out += String.fromCodePoint(code);
      } else {
        this.fail(`unknown escape "\\${e ?? ''}"`, this.pos - 1);
      }
    }
    this.endOfWord(open);
    return out;
  }

  form(depth: number): Literal {
    const start = this.pos;
    this.expect('(');
    this.skipSpace();
    const head = this.match(NAME);
    if (head === undefined) this.fail(this.found('expected list, some, ok, err or tuple after "("'));
    let result: Literal;
    if (head === 'some' || head === 'ok' || head === 'err') {
      result = { kind: head, pos: start, inner: this.value(depth + 1) };
    } else if (head === 'list') {
      const items: Literal[] = [];
      for (this.skipSpace(); !this.peek(')'); this.skipSpace()) {
        if (this.pos >= this.text.length) this.fail('unclosed "("', start);
        items.push(this.value(depth + 1));
      }
      result = { kind: 'list', pos: start, items };
    } else if (head === 'tuple') {
      const fields: Array<{ name: string; value: Literal }> = [];
      for (this.skipSpace(); !this.peek(')'); this.skipSpace()) {
        if (this.pos >= this.text.length) this.fail('unclosed "("', start);
        this.expect('(');
        this.skipSpace();
        const name = this.fieldName();
        fields.push({ name, value: this.value(depth + 1) });
        this.skipSpace();
        this.expect(')');
      }
      if (fields.length === 0) this.fail('a tuple needs at least one field', start);
      result = { kind: 'tuple', pos: start, fields };
    } else {
      return this.fail(`unknown form "(${head}"`, start);
    }
    this.skipSpace();
    if (this.pos >= this.text.length) this.fail('unclosed "("', start);
    this.expect(')');
    return result;
  }

  fieldName(): string {
    const name = this.match(NAME);
    if (name === undefined) this.fail(this.found('expected a field name'));
    return name;
  }

  tuple(depth: number): Literal {
    const start = this.pos;
    this.expect('{');
    const fields: Array<{ name: string; value: Literal }> = [];
    for (;;) {
      this.skipSpace();
      if (this.peek('}')) break;
      if (this.pos >= this.text.length) this.fail('unclosed "{"', start);
      const at = this.pos;
      const name = this.fieldName();
      if (fields.some((f) => f.name === name)) this.fail(`field "${name}" given twice`, at);
      this.skipSpace();
      this.expect(':');
      fields.push({ name, value: this.value(depth + 1) });
      this.skipSpace();
      if (this.peek(',')) this.pos++;
      else if (!this.peek('}')) this.fail(this.found('expected "," or "}"'));
    }
    this.pos++;
    if (fields.length === 0) this.fail('a tuple needs at least one field', start);
    return { kind: 'tuple', pos: start, fields };
  }
}

/** Parse one literal; the whole text must be that literal (surrounding spaces aside). */
export function parseClarityLiteral(text: string): Literal {
  const p = new Parser(text);
  const value = p.value(1);
  p.skipSpace();
  if (p.pos < text.length) p.fail(`unexpected ${JSON.stringify(text[p.pos])} after the value`);
  return value;
}
