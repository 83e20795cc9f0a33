/**
 * The configuration table in words, from the one declaration (src/config/variables.ts): the
 * README's Markdown table (kept in step by `npm run config-table`, checked by a test) and the
 * text of `clarity-cache serve --help`.
 */
import { OTHER_PROGRAMS_VARIABLES, VARIABLES, type Variable } from './variables.js';

export const TABLE_START =
  '<!-- config-table:start (generated from src/config/variables.ts: npm run config-table) -->';
export const TABLE_END = '<!-- config-table:end -->';

function shownDefault(v: Variable): string {
  if (v.shownDefault !== undefined) return v.shownDefault;
  return v.default === undefined ? 'unset' : `\`${v.default}\``;
}

function accepts(v: Variable): string {
  const k = v.kind;
  switch (k.type) {
    case 'int':
      return k.max === undefined ? `integer >= ${k.min}` : `integer ${k.min}-${k.max}`;
    case 'bool':
      return 'true or false';
    case 'string':
      return 'text';
    case 'oneOf':
      return k.values.join(', ');
    case 'custom':
      return k.accepts;
  }
}

/** The README's configuration table, between its markers. */
export function configTableMarkdown(): string {
  const rows = VARIABLES.map(
    (v) =>
      `| \`${v.name}\` | ${shownDefault(v)} | ${v.doc}${v.secret === true ? ' (secret: never printed)' : ''} |`,
  );
  const others = OTHER_PROGRAMS_VARIABLES.map((v) => `- \`${v.name}\`: ${v.doc}`);
  return [
    TABLE_START,
    '| variable | default | meaning |',
    '| --- | --- | --- |',
    ...rows,
    '',
    'Variables of the other programs in this repository (not the gateway process):',
    '',
    ...others,
    TABLE_END,
  ].join('\n');
}

/** The text of `clarity-cache serve --help`: every variable, what it takes and its default. */
export function renderConfigHelp(): string {
  const width = Math.max(...VARIABLES.map((v) => v.name.length));
  const lines = VARIABLES.map((v) => {
    const def = v.default === undefined ? 'unset' : v.default;
    return `  ${v.name.padEnd(width)}  ${accepts(v)}; default ${def}\n  ${' '.repeat(width)}  ${v.doc.replace(/`/g, '')}`;
  });
  return ['Configuration (environment variables):', '', ...lines].join('\n');
}
