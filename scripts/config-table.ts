/**
 * `npm run config-table`: write the README's configuration table from the one declaration of
 * variables (src/config/variables.ts). A test fails when the README and the declaration differ.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { configTableMarkdown, TABLE_END, TABLE_START } from '../src/config/docs.js';

const readme = path.resolve(import.meta.dirname, '..', 'README.md');
const text = readFileSync(readme, 'utf8');
const start = text.indexOf(TABLE_START);
const end = text.indexOf(TABLE_END);
if (start < 0 || end < 0) throw new Error('README.md has no configuration table markers');
writeFileSync(readme, text.slice(0, start) + configTableMarkdown() + text.slice(end + TABLE_END.length));
console.log('README.md: configuration table written');
