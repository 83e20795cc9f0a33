/**
 * The shape an ABI document must have before the gateway caches or uses it. The node is
 * trusted for what a contract means, not for the well-formedness of what it sends: one
 * `functions: [null]` cached forever would make every later call to that contract crash.
 * Only what the gateway reads is checked strictly (functions, their
 * access, arguments and types); other sections need only be arrays when present. Type names
 * this gateway does not know are accepted (a newer Clarity): the argument check lets the
 * node judge them.
 */
import type { ContractAbi } from './abi.js';

const ACCESS = new Set(['private', 'public', 'read_only']);
const SECTIONS = ['variables', 'maps', 'fungible_tokens', 'non_fungible_tokens'] as const;
/** Deeper type descriptors than any valid Clarity type (values nest at most 32 levels). */
const MAX_TYPE_DEPTH = 64;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isLength(v: unknown): boolean {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

/** The first problem of a type descriptor at `path`, or undefined when it is well formed. */
function typeProblem(t: unknown, path: string, depth: number): string | undefined {
  if (depth > MAX_TYPE_DEPTH) return `${path} nests deeper than ${MAX_TYPE_DEPTH} levels`;
  if (typeof t === 'string') return undefined;
  if (!isRecord(t)) return `${path} is not a type descriptor`;
  const keys = Object.keys(t);
  if (keys.length !== 1) return `${path} is not a type descriptor`;
  const key = keys[0]!;
  const inner = t[key];
  switch (key) {
    case 'optional':
      return typeProblem(inner, `${path}.optional`, depth + 1);
    case 'response':
      if (!isRecord(inner)) return `${path}.response is not an object`;
      return (
        typeProblem(inner['ok'], `${path}.response.ok`, depth + 1) ??
        typeProblem(inner['error'], `${path}.response.error`, depth + 1)
      );
    case 'buffer':
    case 'string-ascii':
    case 'string-utf8':
      return isRecord(inner) && isLength(inner['length']) ? undefined : `${path}.${key} has no valid length`;
    case 'list':
      if (!isRecord(inner) || !isLength(inner['length'])) return `${path}.list has no valid length`;
      return typeProblem(inner['type'], `${path}.list.type`, depth + 1);
    case 'tuple': {
      if (!Array.isArray(inner)) return `${path}.tuple is not an array`;
      for (let i = 0; i < inner.length; i++) {
        const field: unknown = inner[i];
        const at = `${path}.tuple[${i}]`;
        if (!isRecord(field) || typeof field['name'] !== 'string') return `${at} has no name`;
        const problem = typeProblem(field['type'], `${at}.type`, depth + 1);
        if (problem !== undefined) return problem;
      }
      return undefined;
    }
    default:
      // An unknown compound type: like an unknown type name, left to the node.
      return undefined;
  }
}

/** The first way `doc` is not a usable ABI, or undefined when it is one. */
export function abiShapeProblem(doc: unknown): string | undefined {
  if (!isRecord(doc)) return 'the ABI is not an object';
  const functions = doc['functions'];
  if (!Array.isArray(functions)) return 'the ABI has no "functions" array';
  for (let i = 0; i < functions.length; i++) {
    const fn: unknown = functions[i];
    const at = `functions[${i}]`;
    if (!isRecord(fn)) return `${at} is not an object`;
    if (typeof fn['name'] !== 'string') return `${at} has no name`;
    if (typeof fn['access'] !== 'string' || !ACCESS.has(fn['access'])) return `${at} has no valid access`;
    const args = fn['args'];
    if (!Array.isArray(args)) return `${at} has no "args" array`;
    for (let j = 0; j < args.length; j++) {
      const arg: unknown = args[j];
      if (!isRecord(arg) || typeof arg['name'] !== 'string') return `${at}.args[${j}] has no name`;
      const problem = typeProblem(arg['type'], `${at}.args[${j}].type`, 0);
      if (problem !== undefined) return problem;
    }
    const outputs = fn['outputs'];
    if (!isRecord(outputs)) return `${at} has no "outputs" object`;
    const problem = typeProblem(outputs['type'], `${at}.outputs.type`, 0);
    if (problem !== undefined) return problem;
  }
  for (const section of SECTIONS) {
    if (doc[section] !== undefined && !Array.isArray(doc[section])) return `"${section}" is not an array`;
  }
  return undefined;
}

/** `doc` as a ContractAbi when it has the shape of one. */
export function isContractAbi(doc: unknown): doc is ContractAbi {
  return abiShapeProblem(doc) === undefined;
}
