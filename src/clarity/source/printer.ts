/** Prints s-expressions back as Clarity source that readClarity (reader.ts) reads to the same tree. */
import type { SExpr } from './sexpr.js';

export function printClarity(expr: SExpr): string {
  switch (expr.kind) {
    case 'list':
      return `(${expr.items.map(printClarity).join(' ')})`;
    case 'tuple':
      return `{${expr.entries.map((e) => `${e.key}: ${printClarity(e.value)}`).join(', ')}}`;
    case 'atom':
      return expr.name;
    case 'int':
      return expr.value.toString();
    case 'uint':
      return `u${expr.value.toString()}`;
    case 'string':
      return `${expr.utf8 ? 'u' : ''}"${escapeString(expr.value, expr.utf8)}"`;
    case 'buffer':
      return `0x${expr.hex}`;
    case 'principal': {
      const trait = expr.trait === undefined ? '' : `.${expr.trait}`;
      if (expr.address === undefined) return `.${expr.contract ?? ''}${trait}`;
      return `'${expr.address}${expr.contract === undefined ? '' : `.${expr.contract}${trait}`}`;
    }
  }
}

function escapeString(value: string, utf8: boolean): string {
  let out = '';
  for (const ch of value) {
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\0') out += '\\0';
    else if (utf8 && ch.codePointAt(0)! > 0x7e) out += `\\u{${ch.codePointAt(0)!.toString(16)}}`;
    else out += ch;
  }
  return out;
}
