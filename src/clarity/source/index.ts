export { printClarity } from './printer.js';
export { readClarity } from './reader.js';
export { ClaritySyntaxError, type SExpr, type TupleEntry } from './sexpr.js';
